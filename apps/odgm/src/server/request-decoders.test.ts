import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type SetKeyRequest, SetKeyRequestSchema } from "@oprc/grpc-api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkHandDecoder } from "../../test/fixtures/hand-decoder.js";
import { decodeSetKeyRequest } from "./request-decoders.js";

/** Any SetKeyRequest protobuf-es can write: every field set or not, any number in range. */
const anySetKey: fc.Arbitrary<SetKeyRequest> = fc
  .record(
    {
      clsId: fc.string({ maxLength: 12, unit: "grapheme" }),
      partitionId: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      objectId: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
      key: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
      value: fc.record({
        data: fc.uint8Array({ maxLength: 40 }),
        type: fc.integer({ min: 0, max: 3 }),
      }),
      keyStr: fc.string({ maxLength: 8 }),
      objectIdStr: fc.string({ maxLength: 8 }),
    },
    { requiredKeys: [] },
  )
  .map((init) => create(SetKeyRequestSchema, init));

describe("decodeSetKeyRequest", () => {
  it("reads every request as protobuf-es reads it; damaged ones refused or read alike", () => {
    checkHandDecoder(SetKeyRequestSchema, decodeSetKeyRequest, anySetKey);
  });

  it("reads the bench's request, and refuses malformed ones with the reason", () => {
    const req = create(SetKeyRequestSchema, {
      clsId: "orders",
      partitionId: 3,
      objectId: 42n,
      key: 7,
      value: { data: Uint8Array.of(1, 2) },
      objectIdStr: "o-1",
    });
    const bytes = toBinary(SetKeyRequestSchema, req);
    expect(decodeSetKeyRequest(bytes)).toEqual(fromBinary(SetKeyRequestSchema, bytes));
    expect(decodeSetKeyRequest(bytes).keyStr).toBeUndefined();
    // cls_id (field 1) as a varint.
    expect(() => decodeSetKeyRequest(Uint8Array.of(0x08, 1))).toThrow(/wrong wire type/);
    // Two values: protobuf would merge them; no client of ours sends that.
    expect(() => decodeSetKeyRequest(Uint8Array.of(0x2a, 0, 0x2a, 0))).toThrow(/given twice/);
    // A value whose length runs past the end.
    expect(() => decodeSetKeyRequest(Uint8Array.of(0x2a, 5, 0x0a))).toThrow(/past the end/);
    // A class name that is not UTF-8, refused as protobuf-es refuses it.
    expect(() => decodeSetKeyRequest(Uint8Array.of(0x0a, 1, 0xff))).toThrow();
  });
});
