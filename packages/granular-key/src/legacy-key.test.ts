import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hex } from "../test/arbitraries.js";
import { isKeyError } from "./key-error.js";
import { decodeLegacyKey, encodeLegacyKey } from "./legacy-key.js";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (!isKeyError(err)) throw err;
    return err.code;
  }
}

describe("legacy blob keys", () => {
  it("are 8-byte big-endian u64", () => {
    expect(hex(encodeLegacyKey(0n))).toBe("0000000000000000");
    expect(hex(encodeLegacyKey(42n))).toBe("000000000000002a");
    expect(hex(encodeLegacyKey(0x0102030405060708n))).toBe("0102030405060708");
    expect(hex(encodeLegacyKey(0xffff_ffff_ffff_ffffn))).toBe("ffffffffffffffff");
  });

  it("round-trip and sort numerically (property)", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        (a, b) => {
          expect(decodeLegacyKey(encodeLegacyKey(a))).toBe(a);
          const byBytes = Buffer.compare(encodeLegacyKey(a), encodeLegacyKey(b));
          expect(byBytes).toBe(a < b ? -1 : a > b ? 1 : 0);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("reject out-of-range ids and wrong lengths", () => {
    expect(codeOf(() => encodeLegacyKey(-1n))).toBe("out_of_range");
    expect(codeOf(() => encodeLegacyKey(2n ** 64n))).toBe("out_of_range");
    expect(codeOf(() => encodeLegacyKey(42 as unknown as bigint))).toBe("out_of_range");
    expect(codeOf(() => decodeLegacyKey(new Uint8Array(7)))).toBe("truncated");
    expect(codeOf(() => decodeLegacyKey(new Uint8Array(9)))).toBe("trailing_bytes");
    expect(codeOf(() => decodeLegacyKey([] as unknown as Uint8Array))).toBe("invalid_argument");
  });
});
