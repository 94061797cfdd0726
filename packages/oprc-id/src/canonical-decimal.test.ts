import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isCanonicalU32, isCanonicalU64, parseCanonicalU64 } from "./canonical-decimal.js";

/** An independent model: a regex for the shape, BigInt for the range. */
function model(s: string, max: bigint): boolean {
  return /^(0|[1-9][0-9]*)$/.test(s) && BigInt(s) <= max;
}
const U32_MAX = 2n ** 32n - 1n;
const U64_MAX = 2n ** 64n - 1n;
const decimalish = fc.oneof(
  fc.bigInt({ min: 0n, max: U64_MAX * 2n }).map((n) => n.toString()),
  fc.stringMatching(/^[0-9]{0,22}$/),
  fc.string({ maxLength: 24 }),
);

describe("canonical decimals", () => {
  it("isCanonicalU32 and isCanonicalU64 agree with the model", () => {
    fc.assert(
      fc.property(decimalish, (s) => {
        expect(isCanonicalU32(s)).toBe(model(s, U32_MAX));
        expect(isCanonicalU64(s)).toBe(model(s, U64_MAX));
      }),
      { numRuns: 5000 },
    );
  });

  it("parseCanonicalU64 round-trips every u64 and refuses non-canonical forms", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: U64_MAX }), (n) => {
        expect(parseCanonicalU64(n.toString())).toBe(n);
        expect(parseCanonicalU64(`0${n}`)).toBeUndefined();
      }),
    );
    for (const s of ["", "+1", "-0", "1e3", " 1", "18446744073709551616", "٣"]) {
      expect(parseCanonicalU64(s), s).toBeUndefined();
    }
    expect(parseCanonicalU64("18446744073709551615")).toBe(U64_MAX);
    expect(isCanonicalU32("4294967296")).toBe(false);
  });
});
