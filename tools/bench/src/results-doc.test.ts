import { describe, expect, it } from "vitest";
import type { Sample } from "./measure.js";
import { headlines, type RunInfo, renderMemoryTable, sizeLabel } from "./results-doc.js";

const info: RunInfo = {
  mode: "default",
  command: "x",
  date: "2026-01-01T00:00:00.000Z",
  machine: {
    cores: 2,
    cpuModel: "cpu",
    memoryGiB: 1,
    node: "v22",
    kernel: "k",
    loadStart: [1, 1, 1],
  },
  loadEnd: [1, 1, 1],
  rounds: 1,
  budget: { durationMs: 1, warmupMs: 0, maxRequests: 1 },
  concurrency: [1, 64],
  mainObjects: 1000,
  scaleSizes: [100_000],
  entriesPerObject: 4,
  redis: undefined,
  totalSeconds: 1,
  only: undefined,
};

const s = (rps: number, cpu: number): Sample => ({
  rps,
  p50Us: 1,
  p99Us: 2,
  cpuUsPerReq: cpu,
  clientCpuUsPerReq: 1,
  rssBytes: 1,
  requests: 1,
  errors: 0,
});

describe("headlines", () => {
  it("leaves out lines whose subjects were not measured", () => {
    expect(headlines(info, new Map())).toEqual([]);
    const lines = headlines(
      info,
      new Map([
        ["grpc.GetValue@64", [s(500, 200)]],
        ["grpc.Capabilities@64", [s(1000, 100)]],
        ["h2.empty@64", [s(2000, 50)]],
        ["grpc.GetValue@1", [s(100, 300)]],
        ["grpc.Capabilities@1", [s(100, 150)]],
      ]),
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("0.50× the req/s of an empty RPC");
    expect(lines[0]).toContain("0.25× of raw node:http2");
    expect(lines[0]).toContain("server CPU/request 2.00× the empty RPC's (at c=1: 2.00×)");
  });
});

describe("memory table", () => {
  it("labels sizes and computes the per-million-entries slope", () => {
    expect(sizeLabel(1000)).toBe("1k");
    expect(sizeLabel(1_000_000)).toBe("1M");
    expect(sizeLabel(1234)).toBe("1234");
    const mib = 1024 * 1024;
    const out = renderMemoryTable([
      {
        size: 1000,
        objects: 1000,
        entries: 0,
        loadMs: 1000,
        idleRss: 100 * mib,
        rss: 0,
        diskBytes: 0,
        redisUsedMemory: 0,
      },
      {
        size: 1_000_000,
        objects: 1e6,
        entries: 2_000_000,
        loadMs: 1000,
        idleRss: 120 * mib,
        rss: 0,
        diskBytes: 40 * mib,
        redisUsedMemory: 80 * mib,
      },
    ]);
    expect(out).toContain(
      "odgm RSS right after start 10.0 MiB; data dir 20.0 MiB; Redis used_memory 40.0 MiB",
    );
  });
});
