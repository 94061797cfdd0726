import { describe, expect, it } from "vitest";
import { nodesForSeed, replayCommand, runSimulation, type SimStats } from "./simulator.js";

// A few seeds in-process (the 10,000-seed CI run is test/sim-ci, in child processes).
describe("simulator", () => {
  it("runs seeds of every size with every fault kind and no violation", () => {
    const total: Partial<Record<keyof SimStats, number>> = {};
    const verdicts = new Set<string>();
    for (let seed = 1; seed <= 40; seed++) {
      const r = runSimulation({ seed });
      expect(r.failure, `seed ${seed}: ${replayCommand(seed)}`).toBeUndefined();
      expect(r.nodes).toBe(nodesForSeed(seed));
      verdicts.add(r.verdict);
      for (const [k, v] of Object.entries(r.stats)) {
        const key = k as keyof SimStats;
        total[key] = (total[key] ?? 0) + v;
      }
    }
    // The faults really happen (a harness that injects nothing would pass anything).
    for (const k of [
      "crashes",
      "partitions",
      "compactions",
      "snapshotsInstalled",
      "appliedEarly",
      "confChanges",
      "transfers",
      "leaderChanges",
      "opsOk",
      "dropped",
    ] as const) {
      expect(total[k], k).toBeGreaterThan(0);
    }
    expect(verdicts.has("ok")).toBe(true);
  }, 120_000);

  it("is deterministic: a seed replays exactly", () => {
    const a = runSimulation({ seed: 1234 });
    const b = runSimulation({ seed: 1234 });
    expect(b).toEqual(a);
    expect(runSimulation({ seed: 1235 }).stats).not.toEqual(a.stats);
  });

  it("cycles cluster sizes through the node range", () => {
    expect([0, 1, 2, 3, 4, 5].map((s) => nodesForSeed(s))).toEqual([3, 4, 5, 6, 7, 3]);
    expect(nodesForSeed(11, 5, 5)).toBe(5);
    expect(replayCommand(42, 3, 7)).toBe(
      "pnpm --filter @oprc/raft-log sim --start 42 --seeds 1 --nodes 3-7 --trace",
    );
  });
});
