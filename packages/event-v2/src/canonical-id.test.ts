import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isCanonicalU32, isCanonicalU64 } from "./canonical-id.js";

describe("canonical decimal checks", () => {
  it("accepts exactly the decimal form of every u32 (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4294967295 }), (n) => {
        expect(isCanonicalU32(String(n))).toBe(true);
        expect(isCanonicalU32(`0${n}`)).toBe(false);
      }),
    );
  });

  it("agrees with a regex + range oracle on arbitrary strings (property)", () => {
    const oracle32 = (s: string) => /^(0|[1-9][0-9]*)$/.test(s) && BigInt(s) <= 4294967295n;
    const oracle64 = (s: string) => /^(0|[1-9][0-9]*)$/.test(s) && BigInt(s) <= 2n ** 64n - 1n;
    const digits = fc.stringMatching(/^[0-9]{0,22}$/);
    fc.assert(
      fc.property(fc.oneof(digits, fc.string()), (s) => {
        expect(isCanonicalU32(s)).toBe(oracle32(s));
        expect(isCanonicalU64(s)).toBe(oracle64(s));
      }),
      { numRuns: 2000 },
    );
  });

  it("handles the edges", () => {
    expect(isCanonicalU32("4294967295")).toBe(true);
    expect(isCanonicalU32("4294967296")).toBe(false);
    expect(isCanonicalU32("42")).toBe(true);
    expect(isCanonicalU32("042")).toBe(false);
    expect(isCanonicalU32("")).toBe(false);
    expect(isCanonicalU32("-1")).toBe(false);
    expect(isCanonicalU64("18446744073709551615")).toBe(true);
    expect(isCanonicalU64("18446744073709551616")).toBe(false);
    expect(isCanonicalU64("user-1")).toBe(false);
  });
});
