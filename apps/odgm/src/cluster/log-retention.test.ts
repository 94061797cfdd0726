import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { planRetention, type RetentionInput } from "./log-retention.js";

/** A log from `first` to `applied` with random entry sizes, and random policy settings. */
const inputs = fc
  .record({
    first: fc.integer({ min: 1, max: 1_000 }),
    length: fc.integer({ min: 0, max: 200 }),
    sizes: fc.array(fc.integer({ min: 0, max: 4_096 }), { minLength: 200, maxLength: 200 }),
    matches: fc.array(fc.integer({ min: 0, max: 1_300 }), { maxLength: 4 }),
    catchUpEntries: fc.integer({ min: -5, max: 300 }),
    maxKeptEntries: fc.integer({ min: 0, max: 300 }),
    maxKeptBytes: fc.integer({ min: 0, max: 400_000 }),
  })
  .map(({ first, length, sizes, matches, ...policy }) => {
    const applied = first + length - 1;
    const input: RetentionInput = {
      applied,
      first,
      liveMatches: matches,
      ...policy,
      bytesAt: (index) => {
        if (index < first || index > applied) throw new Error(`index ${index} is not in the log`);
        return sizes[index - first] as number;
      },
    };
    return input;
  });

const keptBytes = (i: RetentionInput, compactTo: number): number => {
  let n = 0;
  for (let x = compactTo + 1; x <= i.applied; x++) n += i.bytesAt(x);
  return n;
};

describe("planRetention", () => {
  it("with no follower behind and no tail, compacts everything applied", () => {
    const r = planRetention({
      applied: 10,
      first: 3,
      liveMatches: [10, 12],
      catchUpEntries: 0,
      maxKeptEntries: 100,
      maxKeptBytes: 1_000,
      bytesAt: () => 5,
    });
    expect(r).toEqual({ compactTo: 10, keptBytes: 0 });
  });

  it("keeps what a live follower lacks, and a tail, within the bounds", () => {
    const base = {
      applied: 100,
      first: 1,
      catchUpEntries: 10,
      maxKeptEntries: 50,
      maxKeptBytes: 10_000,
      bytesAt: () => 100,
    };
    expect(planRetention({ ...base, liveMatches: [] }).compactTo).toBe(90);
    expect(planRetention({ ...base, liveMatches: [70, 95] }).compactTo).toBe(70);
    // A follower too far behind is not waited for beyond the entry bound…
    expect(planRetention({ ...base, liveMatches: [20] }).compactTo).toBe(50);
    // …nor beyond the byte bound.
    expect(planRetention({ ...base, liveMatches: [20], maxKeptBytes: 2_050 }).compactTo).toBe(80);
  });

  it("keeps within both bounds, never more than the policy wants, and as much of it as fits", () => {
    fc.assert(
      fc.property(inputs, (i) => {
        const r = planRetention(i);
        // In range: nothing before the log, nothing not applied.
        expect(r.compactTo).toBeGreaterThanOrEqual(i.first - 1);
        expect(r.compactTo).toBeLessThanOrEqual(i.applied);
        expect(r.keptBytes).toBe(keptBytes(i, r.compactTo));
        // Within the bounds.
        expect(i.applied - r.compactTo).toBeLessThanOrEqual(Math.max(0, i.maxKeptEntries));
        expect(r.keptBytes).toBeLessThanOrEqual(i.maxKeptBytes);
        // Never more than the tail and the live followers need.
        const wanted = Math.max(
          i.first - 1,
          Math.min(i.applied - Math.max(0, i.catchUpEntries), ...i.liveMatches),
        );
        expect(r.compactTo).toBeGreaterThanOrEqual(wanted);
        // As much of that as fits: one more entry would break a bound.
        if (r.compactTo > wanted) {
          const entries = i.applied - r.compactTo + 1;
          const bytes = r.keptBytes + i.bytesAt(r.compactTo);
          expect(entries > i.maxKeptEntries || bytes > i.maxKeptBytes).toBe(true);
        }
      }),
      { numRuns: 1_000 },
    );
  });
});
