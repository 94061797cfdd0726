import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isBackfillError } from "./backfill-error.js";
import {
  checkpointFromJson,
  checkpointToJson,
  decodeCheckpoint,
  encodeCheckpoint,
  legacyIdOf,
  legacyKeyOf,
} from "./checkpoint-record.js";
import type { Checkpoint } from "./conversion-target.js";

const u64 = fc.bigInt({ min: 0n, max: 0xffff_ffff_ffff_ffffn });
const checkpoint: fc.Arbitrary<Checkpoint> = fc.record({
  lastId: fc.option(u64, { nil: undefined }),
  converted: u64,
  skipped: u64,
  failed: u64,
  complete: fc.boolean(),
  updatedAtMs: u64,
});

describe("checkpoint records", () => {
  it("round-trip through binary and JSON (property)", () => {
    fc.assert(
      fc.property(checkpoint, (c) => {
        expect(decodeCheckpoint(encodeCheckpoint("orders", 3, c), "orders", 3, "t")).toEqual(c);
        expect(checkpointFromJson(checkpointToJson("orders", 3, c), "orders", 3, "t")).toEqual(c);
      }),
    );
  });

  it("legacy keys are 8-byte big-endian and sort like their ids (property)", () => {
    fc.assert(
      fc.property(u64, u64, (a, b) => {
        expect(legacyIdOf(legacyKeyOf(a))).toBe(a);
        const cmp = Buffer.compare(legacyKeyOf(a), legacyKeyOf(b));
        expect(Math.sign(cmp)).toBe(a < b ? -1 : a > b ? 1 : 0);
      }),
    );
  });

  it("refuses a checkpoint of another shard and garbage", () => {
    const c: Checkpoint = {
      lastId: 5n,
      converted: 1n,
      skipped: 0n,
      failed: 0n,
      complete: false,
      updatedAtMs: 0n,
    };
    expect(() => decodeCheckpoint(encodeCheckpoint("orders", 1, c), "orders", 2, "t")).toThrow(
      "belongs to orders/1, not orders/2",
    );
    let caught: unknown;
    try {
      checkpointFromJson("{nope", "orders", 1, "file.json");
    } catch (err) {
      caught = err;
    }
    expect(isBackfillError(caught, "io")).toBe(true);
  });
});
