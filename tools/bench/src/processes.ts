import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** A child process the harness started and will stop. */
export interface Child {
  /** Label for logs. */
  readonly name: string;
  readonly pid: number;
  readonly process: ChildProcess;
  /** The ready-line match. */
  readonly ready: RegExpExecArray;
  /** stdout + stderr so far (capped). */
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

const live = new Set<ChildProcess>();
let hooked = false;

/** Kills every child still running (synchronously, SIGKILL): used on exit and on errors. */
export function killAllChildren(): void {
  for (const c of live) {
    try {
      c.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
  live.clear();
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on("exit", killAllChildren);
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(sig, () => {
      killAllChildren();
      process.exit(130);
    });
  }
}

/** Options of {@link startChild}. */
export interface StartChildOptions {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: Record<string, string>;
  /** Pattern in stdout/stderr that means "listening"; its match is returned. */
  readonly ready: RegExp;
  /** Give up (and kill it) after this long. Default 60 s. */
  readonly timeoutMs?: number;
}

/** Starts a child process and waits for its ready line; kills it on timeout or early exit. */
export async function startChild(options: StartChildOptions): Promise<Child> {
  hookExit();
  const child = spawn(options.command, [...options.args], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  live.add(child);
  let out = "";
  const onData = (d: Buffer): void => {
    if (out.length < 200_000) out += d.toString();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => {
      live.delete(child);
      resolve();
    });
  });
  const ready = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${options.name} did not become ready in time:\n${out.slice(-2000)}`));
    }, options.timeoutMs ?? 60_000);
    const check = (): void => {
      const m = options.ready.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        child.stdout?.off("data", check);
        child.stderr?.off("data", check);
        resolve(m);
      }
    };
    child.stdout?.on("data", check);
    child.stderr?.on("data", check);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${options.name} exited before it was ready:\n${out.slice(-2000)}`));
    });
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${options.name} has no pid`);
  return {
    name: options.name,
    pid,
    process: child,
    ready,
    output: () => out,
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * CPU time (ns) used so far by every thread of process `pid`, from
 * `/proc/<pid>/task/<tid>/schedstat` (nanosecond resolution, includes RocksDB and libuv
 * threads). Falls back to `/proc/<pid>/stat` utime+stime (10 ms ticks). `NaN` if unreadable.
 */
export function cpuNs(pid: number): number {
  try {
    let total = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const s = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "latin1");
        total += Number(s.split(" ")[0]);
      } catch {
        // thread ended meanwhile
      }
    }
    if (total > 0) return total;
  } catch {
    // fall through
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return ticks * 10_000_000;
  } catch {
    return Number.NaN;
  }
}

/** Resident set size (bytes) of process `pid` from `/proc/<pid>/status` VmRSS; `NaN` if unreadable. */
export function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "latin1"));
    return m?.[1] === undefined ? Number.NaN : Number(m[1]) * 1024;
  } catch {
    return Number.NaN;
  }
}

/** Node flags that run the repository's TypeScript sources directly (no build). */
export const NODE_FLAGS: readonly string[] = [
  "--conditions=@oprc/source",
  "--experimental-transform-types",
  "--no-warnings",
  "--import",
  fileURLToPath(import.meta.resolve("@oprc/test-config/ts-hooks")),
];

/**
 * Starts one of the baseline servers in `src/children/` (`file`, relative to this module)
 * and waits for its `BENCH_READY <port>` line.
 */
export async function startChildScript(
  name: string,
  file: string,
): Promise<{ child: Child; port: number }> {
  const child = await startChild({
    name,
    command: process.execPath,
    args: [...NODE_FLAGS, fileURLToPath(new URL(file, import.meta.url))],
    ready: /BENCH_READY (\d+)/,
  });
  return { child, port: Number(child.ready[1]) };
}
