import { describe, expect, it } from "vitest";
import {
  mean,
  meanInterval,
  pairedRatio,
  pairedRatios,
  percentile,
  percentileSorted,
  permutation,
  ratio,
  spread,
} from "./stats.js";

describe("percentile (nearest rank)", () => {
  it("picks the smallest value with p% at or below it", () => {
    expect(percentile([5, 1, 3, 2, 4], 50)).toBe(3);
    expect(percentile([5, 1, 3, 2, 4], 0)).toBe(1);
    expect(percentile([5, 1, 3, 2, 4], 100)).toBe(5);
    const hundred = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1, unsorted
    expect(percentile(hundred, 99)).toBe(99);
    expect(percentile(hundred, 50)).toBe(50);
    expect(percentile(hundred, 99.5)).toBe(100);
  });
  it("does not reorder its input and agrees with percentileSorted", () => {
    const v = [3, 1, 2];
    expect(percentile(v, 50)).toBe(2);
    expect(v).toEqual([3, 1, 2]);
    expect(percentileSorted([1, 2, 3], 50)).toBe(2);
  });
  it("is NaN for no values and rejects out-of-range p", () => {
    expect(percentile([], 50)).toBeNaN();
    expect(() => percentile([1], 101)).toThrow(RangeError);
  });
});

describe("meanInterval (Student's t, 95 %)", () => {
  it("matches known answers", () => {
    // sd 1.5811, standard error 0.7071, t(4) = 2.776
    const five = meanInterval([1, 2, 3, 4, 5]);
    expect(five.mean).toBe(3);
    expect(five.low).toBeCloseTo(1.037, 3);
    expect(five.high).toBeCloseTo(4.963, 3);
    // Two values: t(1) = 12.706, standard error 0.5
    const two = meanInterval([1, 2]);
    expect(two.low).toBeCloseTo(1.5 - 6.353, 3);
    expect(two.high).toBeCloseTo(1.5 + 6.353, 3);
    // 40 values, beyond the table: the normal quantile
    const forty = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? 0.9 : 1.1));
    const half = 1.96 * Math.sqrt((40 * 0.01) / 39 / 40);
    expect(meanInterval(forty).high - 1).toBeCloseTo(half, 9);
  });
  it("narrows as rounds agree, skips non-finite values, has no interval below two", () => {
    const same = meanInterval([1.02, 1.02, 1.02]);
    expect(same.low).toBeCloseTo(1.02, 12);
    expect(same.high).toBeCloseTo(1.02, 12);
    const a = meanInterval([0.9, 1.1, Number.NaN]);
    expect(a.mean).toBeCloseTo(1, 12);
    expect(meanInterval([0.95]).low).toBeNaN();
    expect(meanInterval([]).mean).toBeNaN();
  });
});

describe("spread and ratios", () => {
  it("averages the finite values, NaN for none", () => {
    expect(mean([0.8, 1.2, 1.0])).toBeCloseTo(1.0, 12);
    expect(mean([2, Number.NaN, 4])).toBe(3);
    expect(mean([])).toBeNaN();
  });
  it("summarizes min/median/max, ignoring non-finite values", () => {
    expect(spread([3, 1, 2])).toEqual({ min: 1, median: 2, max: 3 });
    expect(spread([4, 1, 3, 2])).toEqual({ min: 1, median: 2.5, max: 4 });
    expect(spread([Number.NaN, 7])).toEqual({ min: 7, median: 7, max: 7 });
    expect(spread([]).median).toBeNaN();
  });
  it("divides safely", () => {
    expect(ratio(6, 3)).toBe(2);
    expect(ratio(1, 0)).toBeNaN();
    expect(ratio(undefined, 1)).toBeNaN();
  });
  it("pairs ratios per round and skips rounds missing on either side", () => {
    // round 0: 2/1, round 1: missing baseline, round 2: 9/3
    expect(pairedRatio([2, 5, 9], [1, undefined, 3])).toEqual({ min: 2, median: 2.5, max: 3 });
    expect(pairedRatios([2, 5, 9, 4], [1, undefined, 3, 0])).toEqual([2, 3]);
    // paired ratios differ from the ratio of medians when rounds drift together
    expect(pairedRatio([10, 20, 40], [10, 20, 40]).median).toBe(1);
  });
});

describe("permutation", () => {
  it("keeps the declared order in round 0 and permutes deterministically after", () => {
    expect(permutation(5, 0)).toEqual([0, 1, 2, 3, 4]);
    for (let seed = 1; seed < 20; seed++) {
      const p = permutation(9, seed);
      expect([...p].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
      expect(permutation(9, seed)).toEqual(p);
    }
  });
  it("gives rounds different orders", () => {
    const orders = new Set(Array.from({ length: 5 }, (_, r) => permutation(9, r).join(",")));
    expect(orders.size).toBe(5);
  });
});
