import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { ObjectMetaRecordSchema } from "@oprc/grpc-api/messages";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeMetaRecord, encodeMetaRecord } from "./meta-record-codec.js";

const u64 = fc.oneof(
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  fc.bigInt({ min: 0n, max: 2n ** 50n }),
  fc.constantFrom(0n, 1n, 127n, 128n, 1763800000000n),
);
const meta = fc.record({
  objectVersion: u64,
  tombstone: fc.boolean(),
  entryCount: u64,
  createdAtMs: u64,
  updatedAtMs: u64,
  attributes: fc.oneof(
    fc.constant({}),
    fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 })),
  ),
});

describe("metadata record codec", () => {
  it("encodes byte-identically to protobuf-es", () => {
    fc.assert(
      fc.property(meta, (m) => {
        expect(encodeMetaRecord(m)).toEqual(
          toBinary(ObjectMetaRecordSchema, create(ObjectMetaRecordSchema, m)),
        );
      }),
      { numRuns: 2000 },
    );
  });

  it("decodes to the same values as protobuf-es", () => {
    fc.assert(
      fc.property(meta, (m) => {
        const bytes = toBinary(ObjectMetaRecordSchema, create(ObjectMetaRecordSchema, m));
        expect(decodeMetaRecord(bytes)).toEqual(fromBinary(ObjectMetaRecordSchema, bytes));
      }),
      { numRuns: 2000 },
    );
  });

  it("agrees with protobuf-es on arbitrary bytes (same values or both throw)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        let expected: unknown;
        let throws = false;
        try {
          expected = fromBinary(ObjectMetaRecordSchema, bytes);
        } catch {
          throws = true;
        }
        if (throws) expect(() => decodeMetaRecord(bytes)).toThrow();
        else expect(decodeMetaRecord(bytes)).toEqual(expected);
      }),
      { numRuns: 5000 },
    );
  });
});
