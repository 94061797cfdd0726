import cliProgress from "cli-progress";
import type { BackfillProgress } from "./run-backfill.js";

/** Shows a run's progress: a bar on a terminal, plain periodic lines otherwise. */
export interface ProgressReporter {
  /** Receives every progress update of the run. */
  update(progress: BackfillProgress): void;
  /** Stops the bar (and prints a last plain line). */
  stop(): void;
}

/** Options of {@link createProgressReporter}. */
export interface ProgressReporterOptions {
  /** Where progress goes (stderr, so stdout stays for the summary). */
  readonly stream: NodeJS.WritableStream & { isTTY?: boolean };
  /** Draw a bar: default `stream.isTTY`. */
  readonly tty?: boolean | undefined;
  /** Plain mode: at most one line per this many ms. Default 2000. */
  readonly intervalMs?: number | undefined;
}

function line(p: BackfillProgress): string {
  const pct = p.total === 0 ? 100 : Math.floor((p.done * 100) / p.total);
  return `odgm-backfill: ${p.phase} ${p.done}/${p.total} (${pct}%) converted=${p.converted} skipped=${p.skipped} failed=${p.failed} entries=${p.entries}\n`;
}

/** Creates the reporter the command line uses. */
export function createProgressReporter(options: ProgressReporterOptions): ProgressReporter {
  const tty = options.tty ?? options.stream.isTTY === true;
  if (!tty) {
    const interval = options.intervalMs ?? 2000;
    let lastAt = 0;
    let last: BackfillProgress | undefined;
    let lastPrinted: BackfillProgress | undefined;
    return {
      update(p) {
        const phaseChanged = p.phase !== last?.phase;
        last = p;
        const now = performance.now();
        if (p.phase === "done") return;
        // A line at every phase change, then at most one per interval.
        if (!phaseChanged && now - lastAt < interval) return;
        lastAt = now;
        lastPrinted = p;
        options.stream.write(line(p));
      },
      stop() {
        if (last !== undefined && last !== lastPrinted && last.phase !== "count") {
          options.stream.write(line(last));
        }
      },
    };
  }
  const bar = new cliProgress.SingleBar(
    {
      stream: options.stream,
      format:
        "odgm-backfill {phase} [{bar}] {percentage}% {value}/{total} | converted {converted} skipped {skipped} failed {failed} | {rate} obj/s | eta {eta_formatted}",
      hideCursor: true,
      clearOnComplete: false,
      etaBuffer: 50,
      fps: 5,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  const t0 = performance.now();
  return {
    update(p) {
      const seconds = (performance.now() - t0) / 1000;
      const payload = {
        phase: p.phase.padEnd(7),
        converted: p.converted,
        skipped: p.skipped,
        failed: p.failed,
        rate: seconds > 0 ? Math.round(p.converted / seconds) : 0,
      };
      if (!started) {
        bar.start(Math.max(p.total, 1), p.done, payload);
        started = true;
      } else {
        bar.setTotal(Math.max(p.total, 1));
        bar.update(p.done, payload);
      }
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
