import { describe, expect, it } from "vitest";
import type { Sample } from "./measure.js";
import { metricRatio, type Results, renderGroupTable, renderPairTable, verdict } from "./report.js";

function sample(rps: number, p99Us: number, cpuUsPerReq: number): Sample {
  return {
    rps,
    p50Us: p99Us / 2,
    p99Us,
    cpuUsPerReq,
    clientCpuUsPerReq: 10,
    rssBytes: 100 * 1024 * 1024,
    requests: 1000,
    errors: 0,
  };
}

// Three rounds; the machine slows down in round 2 for both subjects alike.
const results: Results = new Map([
  ["base@1", [sample(1000, 100, 50), sample(500, 200, 50), sample(1000, 100, 50)]],
  ["op@1", [sample(500, 150, 100), sample(250, 300, 100), sample(400, 120, 125)]],
  ["partial@1", [sample(100, 10, 1), undefined, undefined]],
]);

describe("ratios over rounds", () => {
  it("pairs each round with the same round of the baseline", () => {
    expect(metricRatio(results, "op@1", "base@1", "rps")).toEqual({
      min: 0.4,
      median: 0.5,
      max: 0.5,
    });
    expect(metricRatio(results, "op@1", "base@1", "cpuUsPerReq").median).toBe(2);
    expect(metricRatio(results, "partial@1", "base@1", "rps")).toEqual({
      min: 0.1,
      median: 0.1,
      max: 0.1,
    });
    expect(metricRatio(results, "missing@1", "base@1", "rps").median).toBeNaN();
  });
  it("judges a budget on the median ratio", () => {
    expect(verdict({ min: 1, median: 1.1, max: 1.3 }, 1.15)).toBe("within");
    expect(verdict({ min: 1, median: 1.2, max: 1.3 }, 1.15)).toBe("over");
    expect(verdict({ min: Number.NaN, median: Number.NaN, max: Number.NaN }, 1.15)).toBe(
      "not measured",
    );
  });
});

describe("tables", () => {
  it("renders a group table with ratio columns and 'not measured' rows", () => {
    const md = renderGroupTable(
      {
        title: "T",
        baselines: [{ label: "base", key: "base@1" }],
        rows: [
          { label: "baseline", key: "base@1" },
          { label: "op", key: "op@1" },
          { label: "redis", key: "nope@1" },
        ],
      },
      results,
    );
    const lines = md.split("\n");
    expect(lines[0]).toBe("### T");
    expect(lines[2]).toContain("| subject | req/s | req/s × base |");
    expect(lines[4]).toContain("| baseline | 1 000 (500–1 000) | 1.00× |");
    expect(lines[5]).toContain("| op | 400 (250–500) | 0.50× (0.40–0.50×) |");
    expect(lines[5]).toContain("| 2.00× (2.00–2.50×) |");
    expect(lines[6]).toBe("| redis | not measured |  |  |  |  |  |  |  |");
  });
  it("renders a pair table with a budget verdict", () => {
    const md = renderPairTable(
      {
        title: "P",
        aName: "a",
        bName: "b",
        p99Budget: 1.15,
        rows: [{ label: "x", a: "op@1", b: "base@1" }],
      },
      results,
    );
    expect(md).toContain("p99 budget ≤ 1.15×");
    // p99 ratios per round: 1.5, 1.5, 1.2 → median 1.5 → over
    expect(md).toContain("| 1.50× (1.20–1.50×) |");
    expect(md.trim().endsWith("| over |")).toBe(true);
  });
});
