import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { create, equals, fromBinary, fromJson, toBinary, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  BatchSetValuesRequestSchema,
  EventType,
  SetObjectRequestSchema,
  SingleKeyRequestSchema,
  TriggerPayloadSchema,
  ValType,
} from "./index.js";

// Golden bytes are computed by hand from the field numbers of spec §6:
// tag = field_number << 3 | wire_type (0 varint, 2 length-delimited).
const hex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s.replace(/\s+/g, ""), "hex"));
const ascii = (s: string): string => Buffer.from(s, "utf8").toString("hex");
const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

function roundTrip<D extends DescMessage>(
  schema: D,
  msg: MessageShape<D>,
  golden: Uint8Array,
): void {
  expect(Buffer.from(toBinary(schema, msg)).toString("hex")).toBe(
    Buffer.from(golden).toString("hex"),
  );
  expect(equals(schema, fromBinary(schema, golden), msg)).toBe(true);
  const json = JSON.parse(JSON.stringify(toJson(schema, msg)));
  expect(equals(schema, fromJson(schema, json), msg)).toBe(true);
}

describe("wire contract (spec §6 field numbers)", () => {
  it("SingleKeyRequest with key_str and object_id_str", () => {
    const msg = create(SingleKeyRequestSchema, {
      clsId: "c",
      partitionId: 1,
      keyStr: "name",
      objectIdStr: "user-1",
    });
    // 1:cls_id "c" | 2:partition_id 1 | 5:key_str "name" | 6:object_id_str "user-1"
    const golden = hex(`0a 01 63  10 01  2a 04 ${ascii("name")}  32 06 ${ascii("user-1")}`);
    roundTrip(SingleKeyRequestSchema, msg, golden);
  });

  it("SingleKeyRequest with numeric id and key", () => {
    const msg = create(SingleKeyRequestSchema, { clsId: "c", objectId: 300n, key: 42 });
    // 3:object_id 300 = varint ac 02 | 4:key 42
    roundTrip(SingleKeyRequestSchema, msg, hex("0a 01 63  18 ac 02  20 2a"));
  });

  it("SetObjectRequest with both entry maps", () => {
    const msg = create(SetObjectRequestSchema, {
      clsId: "c",
      partitionId: 3,
      objectIdStr: "o",
      object: {
        entries: { 7: { data: Uint8Array.of(1, 2) } },
        entriesStr: { k: { data: Uint8Array.of(3), type: ValType.CRDT_MAP } },
      },
    });
    // ObjData: 2:entries {1:7, 2:ValData{1:01 02}} | 4:entries_str {1:"k", 2:ValData{1:03, 2:1}}
    const objData = "12 08 08 07 12 04 0a 02 01 02  22 0a 0a 01 6b 12 05 0a 01 03 10 01";
    // 1:cls_id | 2:partition_id (int32) 3 | 4:object (22 bytes) | 5:object_id_str "o"
    const golden = hex(`0a 01 63  10 03  22 16 ${objData}  2a 01 6f`);
    roundTrip(SetObjectRequestSchema, msg, golden);
  });

  it("SetObjectRequest with a negative int32 partition uses a 10-byte varint", () => {
    const msg = create(SetObjectRequestSchema, { partitionId: -1, objectId: 1n });
    roundTrip(SetObjectRequestSchema, msg, hex("10 ff ff ff ff ff ff ff ff ff 01  18 01"));
  });

  it("BatchSetValuesRequest with CAS, including an explicit expected version 0", () => {
    const msg = create(BatchSetValuesRequestSchema, {
      clsId: "c",
      objectIdStr: "o",
      values: { a: { data: utf8("x") } },
      deleteKeys: ["b"],
      expectedObjectVersion: 5n,
    });
    // 4:object_id_str "o" | 5:values {1:"a", 2:{1:"x"}} | 6:delete_keys "b" | 7:expected 5
    const golden = hex("0a 01 63  22 01 6f  2a 08 0a 01 61 12 03 0a 01 78  32 01 62  38 05");
    roundTrip(BatchSetValuesRequestSchema, msg, golden);

    // proto3 `optional`: an explicit 0 is present on the wire (CAS "object must not exist").
    const zero = create(BatchSetValuesRequestSchema, { objectId: 9n, expectedObjectVersion: 0n });
    roundTrip(BatchSetValuesRequestSchema, zero, hex("18 09  38 00"));
    const absent = create(BatchSetValuesRequestSchema, { objectId: 9n });
    expect(absent.expectedObjectVersion).toBeUndefined();
    roundTrip(BatchSetValuesRequestSchema, absent, hex("18 09"));
  });

  it("TriggerPayload with a string id and a string key", () => {
    const msg = create(TriggerPayloadSchema, {
      eventInfo: {
        sourceClsId: "c",
        sourcePartitionId: 1,
        eventType: EventType.DATA_UPDATE,
        timestamp: 1000n,
        context: { key_str: "name" },
        sourceObjectIdStr: "o",
        keyStr: "name",
      },
      originalPayload: Uint8Array.of(0xff),
    });
    const eventInfo = [
      "0a 01 63", // 1:source_cls_id
      "10 01", // 2:source_partition_id
      "20 04", // 4:event_type DATA_UPDATE
      "38 e8 07", // 7:timestamp 1000
      `42 0f 0a 07 ${ascii("key_str")} 12 04 ${ascii("name")}`, // 8:context
      "4a 01 6f", // 9:source_object_id_str
      `52 04 ${ascii("name")}`, // 10:key_str
    ].join(" ");
    // 1:event_info (36 bytes) | 3:original_payload ff
    roundTrip(TriggerPayloadSchema, msg, hex(`0a 24 ${eventInfo}  1a 01 ff`));
  });

  it("JSON uses proto3 canonical names and forms", () => {
    const msg = create(BatchSetValuesRequestSchema, {
      clsId: "c",
      objectId: 18446744073709551615n,
      values: { a: { data: utf8("x"), type: ValType.CRDT_MAP } },
      expectedObjectVersion: 0n,
    });
    expect(toJson(BatchSetValuesRequestSchema, msg)).toEqual({
      clsId: "c",
      objectId: "18446744073709551615",
      values: { a: { data: "eA==", type: "VAL_TYPE_CRDT_MAP" } },
      expectedObjectVersion: "0",
    });
  });
});
