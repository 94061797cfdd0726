import { describe, expect, it } from "vitest";
import {
  idlePercent,
  machineCpu,
  parseMachineCpu,
  parseProcStat,
  parseRunQueueUs,
  processCpuUs,
  readProcStat,
  threadCpu,
  threadCpuDelta,
  ticksToUs,
} from "./proc-stat.js";

// A real /proc/<pid>/stat line (of `cat`), with utime..cstime and rss edited to known values.
const LINE =
  "3857 (cat) R 3855 3855 24329 0 -1 4194304 102 0 0 0 150 30 7 2 20 0 1 0 426560 3133440 383 18446744073709551615 94268776181760 94268776201641 140733408095760 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";

describe("parseProcStat", () => {
  it("reads utime, stime, cutime, cstime and rss by field number", () => {
    expect(parseProcStat(LINE)).toEqual({
      comm: "cat",
      utime: 150,
      stime: 30,
      cutime: 7,
      cstime: 2,
      rssPages: 383,
    });
  });
  it("counts fields from the last parenthesis, so odd process names do not shift them", () => {
    const odd = LINE.replace("(cat)", "(a) b (c d)");
    expect(parseProcStat(odd)).toMatchObject({ comm: "a) b (c d", utime: 150, stime: 30 });
  });
  it("rejects text that is not a stat line", () => {
    expect(() => parseProcStat("hello")).toThrow(/not a \/proc/);
    expect(() => parseProcStat("1 (x) R 1")).toThrow(/field 14/);
  });
});

describe("threadCpuDelta", () => {
  const t = (tid: number, comm: string, userUs: number, systemUs: number, runQueueUs = 0) =>
    [tid, { comm, userUs, systemUs, runQueueUs }] as const;
  it("sums what each thread name spent between samples, names the main thread, drops idle ones", () => {
    const before = new Map([
      t(10, "node", 100, 50, 1000),
      t(11, "node", 0, 0, 7),
      t(12, "libuv-worker", 5, 5),
    ]);
    const after = new Map([
      t(10, "node", 400, 80, 1600),
      t(11, "node", 20, 10, 10),
      t(12, "libuv-worker", 5, 5),
      // a thread started within the window: all its time counts
      t(13, "node", 30, 0, 4),
    ]);
    expect(threadCpuDelta(10, before, after)).toEqual([
      { comm: "main", threads: 1, userUs: 300, systemUs: 30, runQueueUs: 600 },
      { comm: "node", threads: 2, userUs: 50, systemUs: 10, runQueueUs: 7 },
    ]);
  });
});

describe("parseRunQueueUs", () => {
  it("reads the run-queue wait of a schedstat line, 0 when there is none", () => {
    expect(parseRunQueueUs("1053235 12764 2\n")).toBe(12.764);
    expect(parseRunQueueUs(undefined)).toBe(0);
    expect(parseRunQueueUs("")).toBe(0);
  });
});

describe("parseMachineCpu", () => {
  // A real /proc/stat head (two CPUs, guest columns 0), the aggregate line first.
  const STAT =
    "cpu  52391 120 20233 1203310 3012 0 711 95 0 0\ncpu0 26001 60 10100 601655 1500 0 355 47 0 0\n";

  it("counts idle and iowait as idle, and every state but guest time in the total", () => {
    expect(parseMachineCpu(STAT)).toEqual({
      idle: 1203310 + 3012,
      total: 52391 + 120 + 20233 + 1203310 + 3012 + 0 + 711 + 95,
    });
  });

  it("rejects text without an aggregate cpu line", () => {
    expect(() => parseMachineCpu("cpu0 1 2 3 4 5\n")).toThrow(/not a \/proc\/stat/);
    expect(() => parseMachineCpu("cpu  1 2 x 4 5\n")).toThrow(/not a \/proc\/stat/);
  });

  it("gives the idle share between two samples", () => {
    expect(idlePercent({ idle: 100, total: 1000 }, { idle: 130, total: 1200 })).toBe(15);
    expect(Number.isNaN(idlePercent({ idle: 1, total: 5 }, { idle: 1, total: 5 }))).toBe(true);
  });
});

describe("ticksToUs", () => {
  it("converts clock ticks to microseconds", () => {
    expect(ticksToUs(150, 100)).toBe(1_500_000);
    expect(ticksToUs(1, 250)).toBe(4000);
  });
});

describe("reading /proc (Linux)", () => {
  it.runIf(process.platform === "linux")("finds this process and its CPU time", () => {
    expect(readProcStat(process.pid)?.comm.length).toBeGreaterThan(0);
    expect(processCpuUs(process.pid)).toBeGreaterThanOrEqual(0);
    expect(Number.isNaN(processCpuUs(2 ** 30))).toBe(true);
    expect(threadCpu(process.pid).get(process.pid)?.comm.length).toBeGreaterThan(0);
    const m = machineCpu();
    expect(m.total).toBeGreaterThan(0);
    expect(m.idle).toBeLessThanOrEqual(m.total);
    expect(threadCpu(2 ** 30).size).toBe(0);
  });
});
