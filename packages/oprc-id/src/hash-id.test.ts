import fc from "fast-check";
import { createXXHash64, type IHasher } from "hash-wasm";
import { beforeAll, describe, expect, it } from "vitest";
import { hashId, partitionOf } from "./hash-id.js";
import { type IdErrorCode, isIdError } from "./id-error.js";

function codeOf(fn: () => unknown): IdErrorCode | "ok" {
  try {
    fn();
    return "ok";
  } catch (err) {
    if (isIdError(err)) return err.code;
    throw err;
  }
}

// hash-wasm's xxhash64 is a separate implementation (its own WebAssembly build of xxHash).
let reference: IHasher;
beforeAll(async () => {
  reference = await createXXHash64();
});
function referenceHash(s: string): bigint {
  reference.init();
  reference.update(s);
  return BigInt(`0x${reference.digest("hex")}`);
}

// Golden vectors: partitioning must never change across versions, processes or replicas.
const GOLDEN: ReadonlyArray<readonly [string, bigint]> = [
  ["", 0xef46db3751d8e999n],
  ["a", 0xd24ec4f1a98c6e5bn],
  ["abc", 0x44bc2cf5ad770999n],
  ["0", 0x633457081244afecn],
  ["42", 0x6de6f5d076d742b9n],
  ["user-123", 0xdc9ac79afcf5aac9n],
  ["order:2024-01-01.7", 0xe9fa897c7623ff96n],
  ["3jzfcijpj2z2a", 0xcaac2ca547b9677en],
  ["café", 0x9a40a9b974d85a6an],
  ["用户-1", 0xa0bce97cab1c1b83n],
  ["abcdefghijklmnopqrstuvwxyz012345", 0xbf2cd639b4143b80n],
  ["x".repeat(160), 0x393b60e7eff544d8n],
];

describe("hashId", () => {
  it("matches the reference values and golden vectors", () => {
    for (const [s, h] of GOLDEN) {
      expect(hashId(s), JSON.stringify(s)).toBe(h);
      expect(referenceHash(s), JSON.stringify(s)).toBe(h);
    }
  });

  it("agrees with an independent xxHash64 on random input", () => {
    const input = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.string({ unit: "grapheme", maxLength: 80 }),
      fc.string({ unit: fc.constantFrom(..."abcxyz0189._:-"), minLength: 1, maxLength: 300 }),
    );
    fc.assert(
      fc.property(input, (s) => {
        const h = hashId(s);
        expect(h).toBe(referenceHash(s));
        expect(h >= 0n && h < 2n ** 64n).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("partitionOf", () => {
  it("is hashId modulo the partition count", () => {
    expect(partitionOf("user-123", 1)).toBe(0);
    expect(partitionOf("user-123", 16)).toBe(Number(0xdc9ac79afcf5aac9n % 16n));
    expect(partitionOf("user-123", 1000)).toBe(Number(0xdc9ac79afcf5aac9n % 1000n));
    expect(partitionOf("a", 4294967295)).toBe(Number(0xd24ec4f1a98c6e5bn % 4294967295n));
  });

  it("is in range and stable", () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 64 }),
        fc.integer({ min: 1, max: 0xffff_ffff }),
        (s, n) => {
          const p = partitionOf(s, n);
          expect(Number.isInteger(p) && p >= 0 && p < n).toBe(true);
          expect(partitionOf(s, n)).toBe(p);
          expect(p).toBe(Number(referenceHash(s) % BigInt(n)));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("rejects an invalid partition count", () => {
    for (const n of [0, -1, 1.5, 2 ** 32, Number.NaN]) {
      expect(
        codeOf(() => partitionOf("a", n)),
        String(n),
      ).toBe("out_of_range");
    }
  });
});
