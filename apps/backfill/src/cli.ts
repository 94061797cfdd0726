import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { BackfillError, isBackfillError } from "./backfill-error.js";
import { createProgressReporter, type ProgressReporter } from "./progress-reporter.js";
import { type BackfillOptions, type BackfillSummary, runBackfill } from "./run-backfill.js";

/**
 * Exit codes of `odgm-backfill`:
 * - 0: everything asked for was done (converted, or verified, or — dry run — counted);
 * - 1: the run finished but something is left: failed objects, remaining blobs, verify mismatches;
 * - 2: bad command line (unknown flag, bad value, missing or conflicting flags);
 * - 3: the run could not start or its target failed (database locked by a running node,
 *   data directory or shard missing, node unreachable, I/O error);
 * - 130: interrupted by SIGINT/SIGTERM (the checkpoint is saved; rerun to resume).
 */
export const EXIT_CODES: {
  readonly ok: 0;
  readonly incomplete: 1;
  readonly usage: 2;
  readonly failed: 3;
  readonly interrupted: 130;
} = { ok: 0, incomplete: 1, usage: 2, failed: 3, interrupted: 130 };

/** Where the command line reads and writes (the process by default; tests pass their own). */
export interface CliIo {
  /** Summary output. */
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  /** Errors and progress. */
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  /** Aborts the run (the binary wires SIGINT/SIGTERM to it). */
  readonly signal?: AbortSignal | undefined;
}

function integer(min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^[0-9]+$/.test(value))
      throw new InvalidArgumentError(`expected an integer, got "${value}"`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`expected ${min}..${max}, got ${value}`);
    return n;
  };
}

function rate(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n <= 0) {
    throw new InvalidArgumentError(
      `expected a positive number of objects per second, got "${value}"`,
    );
  }
  return n;
}

interface ParsedFlags {
  mode: "entries";
  collection: string;
  partition: number;
  dataDir?: string;
  endpoint?: string;
  parallel: number;
  batchSize?: number;
  dryRun?: boolean;
  verify?: boolean;
  throttle?: number;
  checkpoint?: string;
  checkpointInterval: number;
  json?: boolean;
  progress: boolean;
  syncEachObject?: boolean;
}

function buildProgram(io: CliIo): Command {
  return new Command("odgm-backfill")
    .description(
      "Converts the legacy whole-object blobs of one ODGM shard into per-entry records,\n" +
        "offline against a stopped node's data directory or online through a running node.\n" +
        "Each object converts in one atomic write; a rerun resumes and changes nothing already converted.",
    )
    .addOption(
      new Option("--mode <mode>", "what to convert: entries (legacy blobs to per-entry records)")
        .choices(["entries"])
        .default("entries"),
    )
    .requiredOption("--collection <name>", "collection to convert")
    .addOption(
      new Option("--partition <n>", "partition of the collection (shard <collection>/<partition>)")
        .argParser(integer(0, 0xffff_ffff))
        .makeOptionMandatory(),
    )
    .addOption(
      new Option(
        "--data-dir <dir>",
        "offline: the stopped node's data directory (ODGM_DATA_DIR); refused while a node holds it",
      ).conflicts("endpoint"),
    )
    .addOption(
      new Option(
        "--endpoint <url>",
        "online: the running node's gRPC URL (h2c), e.g. http://127.0.0.1:8080",
      ).conflicts("dataDir"),
    )
    .addOption(
      new Option("--parallel <n>", "conversions in flight at once (1..1024)")
        .argParser(integer(1, 1024))
        .default(32),
    )
    .addOption(
      new Option(
        "--batch-size <n>",
        "online: object ids per ConvertLegacyObjects call (default 64)",
      ).argParser(integer(1, 10_000)),
    )
    .option("--dry-run", "count the blobs and their entries and report; change nothing")
    .addOption(
      new Option(
        "--verify",
        "compare every object converted by this run with its blob read just before converting it, then check that no blob remains and every object of the shard is readable with entries matching its metadata",
      ).conflicts("dryRun"),
    )
    .addOption(
      new Option(
        "--throttle <objects/s>",
        "convert at most this many objects per second",
      ).argParser(rate),
    )
    .addOption(
      new Option(
        "--checkpoint <file>",
        "online: keep progress in this JSON file (default: resume by listing the remaining blobs); offline runs keep it in the database",
      ).conflicts("dataDir"),
    )
    .addOption(
      new Option("--checkpoint-interval <ms>", "save the checkpoint at least this often")
        .argParser(integer(1, 3_600_000))
        .default(1000),
    )
    .option("--sync-each-object", "offline: sync the write-ahead log after every object (slower)")
    .option("--json", "print the summary as JSON on stdout")
    .option("--no-progress", "no progress bar or progress lines on stderr")
    .addHelpText(
      "after",
      `
Examples:
  odgm-backfill --mode=entries --collection=orders --partition=0 --data-dir=/var/lib/odgm --dry-run
  odgm-backfill --mode=entries --collection=orders --partition=0 --data-dir=/var/lib/odgm --verify
  odgm-backfill --mode=entries --collection=orders --partition=0 --endpoint=http://127.0.0.1:8080 --throttle=2000 --json

Exit codes:
  0    everything asked for was done (converted / verified / counted)
  1    finished, but objects failed, blobs remain or verification found mismatches
  2    bad command line
  3    could not run: database locked by a running node, data directory or shard missing,
       node unreachable, I/O error
  130  interrupted (SIGINT/SIGTERM); progress is checkpointed, rerun to resume
`,
    )
    .allowExcessArguments(false)
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    });
}

function formatSummary(s: BackfillSummary): string {
  const rows: [string, string][] = [
    ["target", `${s.target} ${s.location}`],
    ["shard", `${s.collection}/${s.partition}`],
    ["pending at start", String(s.pendingAtStart)],
  ];
  if (s.dryRun) {
    rows.push(["entries in blobs", String(s.entries)]);
  } else {
    rows.push(
      ["converted", `${s.converted} (${s.entries} entries)`],
      ["skipped", String(s.skipped)],
      ["failed", String(s.failed)],
      ["remaining", String(s.remaining)],
    );
    if (s.resumedAfter !== undefined) rows.push(["resumed after id", s.resumedAfter]);
    rows.push(["converted (all runs)", String(s.convertedAllRuns)]);
  }
  if (s.verify) {
    rows.push(
      ["verified", `${s.verified} compared with their blob`],
      ["consistency checked", String(s.consistencyChecked)],
      ["mismatches", String(s.mismatches)],
    );
    if (s.modifiedConcurrently > 0) {
      rows.push(["modified concurrently", `${s.modifiedConcurrently} (not compared)`]);
    }
  }
  rows.push(
    ["elapsed", `${(s.elapsedMs / 1000).toFixed(1)} s`],
    ["rate", `${s.objectsPerSecond} objects/s, ${s.entriesPerSecond} entries/s`],
  );
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`);
  for (const p of s.problems.slice(0, 20)) lines.push(`  ${p.kind} ${p.id}: ${p.message}`);
  if (s.problems.length > 20) lines.push(`  … ${s.problems.length - 20} more (see --json)`);
  lines.push(
    `  odgm_objects_converted_total ${s.metrics.odgm_objects_converted_total}`,
    `  odgm_objects_pending_conversion_total ${s.metrics.odgm_objects_pending_conversion_total}`,
  );
  const verdict = s.ok
    ? s.dryRun
      ? "dry run: nothing changed"
      : "OK: every legacy blob is converted"
    : s.interrupted
      ? "INTERRUPTED: rerun to resume from the checkpoint"
      : "INCOMPLETE: rerun to retry what is left";
  return `odgm-backfill summary\n${lines.join("\n")}\n${verdict}\n`;
}

function summaryJson(s: BackfillSummary): string {
  return `${JSON.stringify(s)}\n`;
}

/**
 * Runs the `odgm-backfill` command line and resolves with its exit code (see
 * {@link EXIT_CODES}); never throws for expected failures.
 *
 * @example
 * ```ts
 * import { runCli } from "@oprc/backfill";
 * process.exitCode = await runCli(process.argv.slice(2));
 * ```
 */
export async function runCli(
  argv: readonly string[],
  io: CliIo = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const program = buildProgram(io);
  let flags: ParsedFlags;
  try {
    program.parse([...argv], { from: "user" });
    flags = program.opts<ParsedFlags>();
    if ((flags.dataDir === undefined) === (flags.endpoint === undefined)) {
      throw new BackfillError(
        "invalid_argument",
        "give exactly one of --data-dir (offline) and --endpoint (online)",
      );
    }
    if (flags.batchSize !== undefined && flags.dataDir !== undefined) {
      throw new BackfillError("invalid_argument", "--batch-size is for online runs (--endpoint)");
    }
    if (flags.syncEachObject === true && flags.endpoint !== undefined) {
      throw new BackfillError(
        "invalid_argument",
        "--sync-each-object is for offline runs (--data-dir)",
      );
    }
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version are successes; every other parse failure is a usage error.
      return err.exitCode === 0 ? EXIT_CODES.ok : EXIT_CODES.usage;
    }
    io.stderr.write(`odgm-backfill: ${err instanceof Error ? err.message : String(err)}\n`);
    io.stderr.write("Run odgm-backfill --help for usage.\n");
    return EXIT_CODES.usage;
  }

  let reporter: ProgressReporter | undefined;
  if (flags.progress) reporter = createProgressReporter({ stream: io.stderr });
  const options: BackfillOptions = {
    mode: flags.mode,
    collection: flags.collection,
    partition: flags.partition,
    dataDir: flags.dataDir,
    endpoint: flags.endpoint,
    parallel: flags.parallel,
    batchSize: flags.batchSize,
    dryRun: flags.dryRun === true,
    verify: flags.verify === true,
    throttle: flags.throttle,
    checkpoint: flags.checkpoint,
    checkpointIntervalMs: flags.checkpointInterval,
    syncEachObject: flags.syncEachObject === true,
    signal: io.signal,
    onProgress: reporter === undefined ? undefined : (p) => reporter.update(p),
  };
  let summary: BackfillSummary;
  try {
    summary = await runBackfill(options);
  } catch (err) {
    reporter?.stop();
    const e = BackfillError.from(err);
    io.stderr.write(`odgm-backfill: ${e.message}\n`);
    if (flags.json === true) {
      io.stdout.write(
        `${JSON.stringify({ ok: false, error: { code: e.code, message: e.message } })}\n`,
      );
    }
    if (isBackfillError(e, "invalid_argument")) return EXIT_CODES.usage;
    return io.signal?.aborted === true ? EXIT_CODES.interrupted : EXIT_CODES.failed;
  }
  reporter?.stop();
  io.stdout.write(flags.json === true ? summaryJson(summary) : formatSummary(summary));
  if (summary.interrupted) return EXIT_CODES.interrupted;
  return summary.ok ? EXIT_CODES.ok : EXIT_CODES.incomplete;
}
