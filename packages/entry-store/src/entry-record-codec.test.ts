import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { EntryRecordSchema, ValDataSchema } from "@oprc/grpc-api/messages";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeEntryRecord, encodeEntryRecord } from "./entry-record-codec.js";

const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
const smallU64 = fc.oneof(
  u64,
  fc.bigInt({ min: 0n, max: 2n ** 50n }),
  fc.constantFrom(0n, 1n, 127n, 128n),
);
const valType = fc.oneof(fc.constantFrom(0, 1), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));
const valData = fc
  .record({ data: fc.uint8Array({ maxLength: 300 }), type: valType })
  .map((v) => create(ValDataSchema, v));

function reference(bytes: Uint8Array): unknown {
  const r = fromBinary(EntryRecordSchema, bytes);
  return { value: r.value, version: r.version, updatedAtMs: r.updatedAtMs };
}

describe("entry record codec", () => {
  it("encodes byte-identically to protobuf-es", () => {
    fc.assert(
      fc.property(valData, smallU64, smallU64, (value, version, updatedAtMs) => {
        const expected = toBinary(
          EntryRecordSchema,
          create(EntryRecordSchema, { value, version, updatedAtMs }),
        );
        expect(encodeEntryRecord(value, version, updatedAtMs)).toEqual(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it("decodes to the same values as protobuf-es", () => {
    fc.assert(
      fc.property(valData, smallU64, smallU64, (value, version, updatedAtMs) => {
        const bytes = toBinary(
          EntryRecordSchema,
          create(EntryRecordSchema, { value, version, updatedAtMs }),
        );
        expect(decodeEntryRecord(bytes)).toEqual(reference(bytes));
      }),
      { numRuns: 2000 },
    );
  });

  it("agrees with protobuf-es on arbitrary bytes (same values or both throw)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        let expected: unknown;
        let expectedThrows = false;
        try {
          expected = reference(bytes);
        } catch {
          expectedThrows = true;
        }
        if (expectedThrows) expect(() => decodeEntryRecord(bytes)).toThrow();
        else expect(decodeEntryRecord(bytes)).toEqual(expected);
      }),
      { numRuns: 5000 },
    );
  });

  it("returns a copy of the value bytes, not a view of the record", () => {
    const bytes = encodeEntryRecord(
      create(ValDataSchema, { data: Uint8Array.of(1, 2, 3) }),
      1n,
      2n,
    );
    const decoded = decodeEntryRecord(bytes);
    (decoded.value as { data: Uint8Array }).data[0] = 9;
    expect(decodeEntryRecord(bytes).value?.data).toEqual(Uint8Array.of(1, 2, 3));
  });
});
