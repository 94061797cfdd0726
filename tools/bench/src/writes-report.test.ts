import { describe, expect, it } from "vitest";
import type { Sample } from "./measure.js";
import { ratioLines, renderRoundsTable, renderWritesTable, W } from "./writes-report.js";

const sample = (rps: number, cpu: number): Sample => ({
  rps,
  p50Us: 2000,
  p99Us: 9000,
  cpuUsPerReq: cpu,
  clientCpuUsPerReq: 10,
  rssBytes: 2 ** 20,
  requests: rps * 3,
  errors: 0,
});

const results = new Map<string, (Sample | undefined)[]>([
  [W.odgmOne, [sample(1000, 400), sample(2000, 400)]],
  [W.redisOne, [sample(50_000, 10), sample(40_000, 10)]],
]);
const subjects = [
  { id: W.odgmOne, server: "odgm SetValue", generator: "h2load", target: "one object" },
  { id: W.etcdOne, server: "etcd Put", generator: "h2load", target: "one key" },
];

describe("renderWritesTable", () => {
  it("shows the spread over rounds and marks subjects without samples", () => {
    const t = renderWritesTable(subjects, results);
    expect(t).toContain(
      "| `odgm.SetValue/1obj` | odgm SetValue, one object | h2load | 1 500 (1 000–2 000) | 2.00 | 9.00 | 400 |",
    );
    expect(t).toContain("| `etcd.Put/1key` | etcd Put, one key | h2load | not measured |");
  });
});

describe("ratioLines", () => {
  it("pairs rounds: (1000/50000, 2000/40000) → median 0.035×", () => {
    expect(ratioLines(results)).toEqual([
      "ODGM one object / Redis one key: req/s 0.035× (0.020–0.050×), server CPU/req 40.0×",
    ]);
  });
});

describe("renderRoundsTable", () => {
  it("prints one row per round with its load average", () => {
    const t = renderRoundsTable(subjects, results, [0.5, 1.25]);
    expect(t).toContain("| 1 | 0.50 | 1 000 | — |");
    expect(t).toContain("| 2 | 1.25 | 2 000 | — |");
  });
});
