// CPU time and memory of a process from /proc/<pid>/stat (Linux), for the writes benchmark.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/** The /proc/<pid>/stat fields the benchmark uses, in clock ticks (and pages for RSS). */
export interface ProcStat {
  /** Process name (field 2, without the parentheses). */
  readonly comm: string;
  /** User CPU of every thread, live and exited (field 14). */
  readonly utime: number;
  /** System CPU of every thread (field 15). */
  readonly stime: number;
  /** User CPU of waited-for children (field 16). */
  readonly cutime: number;
  /** System CPU of waited-for children (field 17). */
  readonly cstime: number;
  /** Resident set size in pages (field 24). */
  readonly rssPages: number;
}

/**
 * Parses the text of `/proc/<pid>/stat`. The name (field 2) may hold spaces and
 * parentheses, so fields are counted from the last `)`.
 *
 * @example
 * parseProcStat("42 (node) S 1 42 42 0 -1 0 0 0 0 0 150 30 4 2 20 0 11 0 9 1000 2560 …").utime; // 150
 */
export function parseProcStat(text: string): ProcStat {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open)
    throw new Error(`not a /proc/<pid>/stat line: ${text.slice(0, 80)}`);
  const f = text
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  // f[0] is field 3 (state), so field n is f[n - 3].
  const num = (n: number): number => {
    const v = Number(f[n - 3]);
    if (!Number.isFinite(v)) throw new Error(`/proc/<pid>/stat field ${n} is not a number`);
    return v;
  };
  return {
    comm: text.slice(open + 1, close),
    utime: num(14),
    stime: num(15),
    cutime: num(16),
    cstime: num(17),
    rssPages: num(24),
  };
}

let ticks: number | undefined;
/** Clock ticks per second (`getconf CLK_TCK`, 100 on Linux in practice). */
export function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** Converts ticks to microseconds. */
export function ticksToUs(t: number, hz: number = clockTicks()): number {
  return (t * 1e6) / hz;
}

/** `/proc/<pid>/stat` of a live process, parsed; `undefined` when it is gone. */
export function readProcStat(pid: number | "self"): ProcStat | undefined {
  return readStatFile(`/proc/${pid}/stat`);
}

/** A stat file (of a process or of one of its threads), parsed; `undefined` when it is gone. */
function readStatFile(file: string): ProcStat | undefined {
  const text = readText(file);
  try {
    return text === undefined ? undefined : parseProcStat(text);
  } catch {
    return undefined;
  }
}

/** A /proc file's text; `undefined` when it is gone (a process or thread that exited). */
function readText(file: string): string | undefined {
  try {
    return readFileSync(file, "latin1");
  } catch {
    return undefined;
  }
}

/** User + system CPU (µs) of process `pid`, all its threads; `NaN` when unreadable. */
export function processCpuUs(pid: number): number {
  const s = readProcStat(pid);
  return s === undefined ? Number.NaN : ticksToUs(s.utime + s.stime);
}

/**
 * User + system CPU (µs) of this process's children that have exited and been waited for
 * (`cutime + cstime` of `/proc/self/stat`). The delta around a load generator's whole run is
 * that generator's CPU: servers still running are not included.
 */
export function reapedChildrenCpuUs(): number {
  const s = readProcStat("self");
  return s === undefined ? Number.NaN : ticksToUs(s.cutime + s.cstime);
}

/**
 * CPU a thread has used so far: user and system µs, and µs it was runnable but waited for a
 * CPU (the run queue, `/proc/<pid>/task/<tid>/schedstat`; 0 where the kernel keeps none).
 */
export interface ThreadCpu {
  readonly comm: string;
  readonly userUs: number;
  readonly systemUs: number;
  readonly runQueueUs: number;
}

/** What the threads of one name spent between two samples. */
export interface ThreadCpuRow {
  readonly comm: string;
  threads: number;
  userUs: number;
  systemUs: number;
  runQueueUs: number;
}

/** The second field of a schedstat file (ns waiting on a run queue), in µs; 0 when unreadable. */
export function parseRunQueueUs(text: string | undefined): number {
  const ns = Number(text?.trim().split(/\s+/)[1]);
  return Number.isFinite(ns) ? ns / 1000 : 0;
}

/** User and system CPU (µs) of every live thread of `pid`, by thread id (empty when gone). */
export function threadCpu(pid: number): Map<number, ThreadCpu> {
  const out = new Map<number, ThreadCpu>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const t of tids) {
    // undefined: the thread exited between listing and reading
    const s = readStatFile(`/proc/${pid}/task/${t}/stat`);
    if (s !== undefined)
      out.set(Number(t), {
        comm: s.comm,
        userUs: ticksToUs(s.utime),
        systemUs: ticksToUs(s.stime),
        runQueueUs: parseRunQueueUs(readText(`/proc/${pid}/task/${t}/schedstat`)),
      });
  }
  return out;
}

/**
 * What each thread of a process spent between two {@link threadCpu} samples, summed by
 * thread name and sorted by total, largest first (threads that did not run are left out).
 * The main thread (thread id = `pid`) is named `main`.
 */
export function threadCpuDelta(
  pid: number,
  before: ReadonlyMap<number, ThreadCpu>,
  after: ReadonlyMap<number, ThreadCpu>,
): ThreadCpuRow[] {
  const byName = new Map<string, ThreadCpuRow>();
  for (const [tid, a] of after) {
    const b = before.get(tid);
    const userUs = a.userUs - (b?.userUs ?? 0);
    const systemUs = a.systemUs - (b?.systemUs ?? 0);
    if (userUs + systemUs <= 0) continue;
    const comm = tid === pid ? "main" : a.comm;
    const row = byName.get(comm) ?? { comm, threads: 0, userUs: 0, systemUs: 0, runQueueUs: 0 };
    row.threads += 1;
    row.userUs += userUs;
    row.systemUs += systemUs;
    row.runQueueUs += a.runQueueUs - (b?.runQueueUs ?? 0);
    byName.set(comm, row);
  }
  return [...byName.values()].sort((x, y) => y.userUs + y.systemUs - (x.userUs + x.systemUs));
}

/** The machine's CPU time so far, all CPUs, in clock ticks (the `cpu` line of /proc/stat). */
export interface MachineCpu {
  /** Ticks no CPU had work: idle and iowait (a CPU waiting for a disk had nothing to run). */
  readonly idle: number;
  /** Every tick counted, idle or not (guest time is already inside user and nice). */
  readonly total: number;
}

/**
 * Parses the aggregate `cpu` line of `/proc/stat`: user nice system idle iowait irq softirq
 * steal (guest and guest_nice are part of user and nice, so they are not added again).
 *
 * @example
 * parseMachineCpu("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 …"); // { idle: 850, total: 1000 }
 */
export function parseMachineCpu(text: string): MachineCpu {
  const line = text.split("\n").find((l) => l.startsWith("cpu "));
  const f = line?.trim().split(/\s+/).slice(1, 9).map(Number);
  if (f === undefined || f.length < 5 || f.some((n) => !Number.isFinite(n))) {
    throw new Error(`not a /proc/stat text: ${text.slice(0, 80)}`);
  }
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = f;
  return {
    idle: idle + iowait,
    total: user + nice + system + idle + iowait + irq + softirq + steal,
  };
}

/** The machine's CPU time so far (see {@link MachineCpu}). */
export function machineCpu(): MachineCpu {
  return parseMachineCpu(readFileSync("/proc/stat", "latin1"));
}

/** Percentage of the machine's CPU time between two samples that was idle; NaN when none passed. */
export function idlePercent(before: MachineCpu, after: MachineCpu): number {
  const total = after.total - before.total;
  return total > 0 ? (100 * (after.idle - before.idle)) / total : Number.NaN;
}
