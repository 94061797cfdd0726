import { create, toBinary } from "@bufbuild/protobuf";
import { ChangeRecordSchema, ObjectEventSchema } from "@oprc/grpc-api/messages";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeChangeRecord } from "./change-record-codec.js";

const u64 = fc.oneof(
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  fc.bigInt({ min: 0n, max: 2n ** 50n }),
  fc.constantFrom(0n, 1n, 127n, 128n, 1763800000000n),
);
/** Strings of every kind the fast path treats differently: ASCII, any UTF-16 (lone surrogates too). */
const text = (maxLength: number) =>
  fc.oneof(
    fc.string({ maxLength }),
    fc.string({ maxLength, unit: "binary" }),
    fc.constantFrom("", "42", "ключ", "\u007f", "\u0080", "\ud800", "a\udfff", "😀"),
  );
const u32 = fc.oneof(fc.constantFrom(0, 1, 127, 128), fc.nat({ max: 2 ** 32 - 1 }));
const keyChange = fc.record(
  {
    key: text(8),
    numeric: fc.boolean(),
    action: fc.constantFrom(0, 1, 2, 3),
    value: fc.record({ data: fc.uint8Array({ maxLength: 200 }), type: fc.constantFrom(0, 1) }),
  },
  { requiredKeys: ["key", "numeric", "action"] },
);
const record = fc.record(
  {
    revision: u64,
    objectIdStr: text(24),
    objectId: u64,
    versionBefore: u64,
    versionAfter: u64,
    timestampMs: u64,
    changes: fc.array(keyChange, { maxLength: 5 }),
    exists: fc.boolean(),
    partitionId: u32,
    triggerKeysSkipped: u32,
  },
  { requiredKeys: ["revision", "objectIdStr", "versionBefore", "versionAfter", "changes"] },
);

describe("change record codec", () => {
  it("encodes byte-identically to protobuf-es", () => {
    fc.assert(
      fc.property(record, (r) => {
        const msg = create(ChangeRecordSchema, r);
        expect(encodeChangeRecord(msg)).toEqual(toBinary(ChangeRecordSchema, msg));
      }),
      { numRuns: 3000 },
    );
  });

  it("falls back to protobuf-es for what the fast path does not write (trigger configuration)", () => {
    const msg = create(ChangeRecordSchema, {
      revision: 7n,
      objectIdStr: "a",
      event: create(ObjectEventSchema, {}),
    });
    expect(encodeChangeRecord(msg)).toEqual(toBinary(ChangeRecordSchema, msg));
  });
});
