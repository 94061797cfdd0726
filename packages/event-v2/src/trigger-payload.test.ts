import { fromBinary, fromJsonString } from "@bufbuild/protobuf";
import { EventType, TriggerPayloadSchema } from "@oprc/grpc-api/messages";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createTriggerPayload, encodeTriggerPayload } from "./trigger-payload.js";

// An independent, hand-written protobuf encoder for the golden vector.
function varint(n: bigint): number[] {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80n) {
    out.push(Number((v & 0x7fn) | 0x80n));
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}
const tag = (field: number, wire: number) => varint(BigInt((field << 3) | wire));
const vField = (field: number, n: bigint | number) => [...tag(field, 0), ...varint(BigInt(n))];
const bField = (field: number, bytes: number[]) => [
  ...tag(field, 2),
  ...varint(BigInt(bytes.length)),
  ...bytes,
];
const sField = (field: number, s: string) => bField(field, [...new TextEncoder().encode(s)]);

const TS = 1_700_000_000_123;

describe("createTriggerPayload (golden)", () => {
  it("string id + string key: encodes exactly the expected bytes and decodes every field", () => {
    const payload = createTriggerPayload({
      source: { objectId: "user-1", clsId: "users", partitionId: 7 },
      eventType: EventType.DATA_UPDATE,
      changed: { key: "email", numeric: false, action: "update" },
      objectVersion: 5n,
      timestampMs: TS,
    });
    const bytes = encodeTriggerPayload(payload, "protobuf");
    const eventInfo = [
      ...sField(1, "users"),
      ...vField(2, 7),
      // source_object_id (3) is 0 for a non-numeric id: omitted (implicit presence)
      ...vField(4, EventType.DATA_UPDATE),
      ...vField(7, BigInt(TS)),
      ...bField(8, [...sField(1, "key_str"), ...sField(2, "email")]),
      ...bField(8, [...sField(1, "object_version"), ...sField(2, "5")]),
      ...sField(9, "user-1"),
      ...sField(10, "email"),
    ];
    expect([...bytes]).toEqual(bField(1, eventInfo));

    const decoded = fromBinary(TriggerPayloadSchema, bytes);
    const info = decoded.eventInfo;
    expect(info?.sourceClsId).toBe("users");
    expect(info?.sourcePartitionId).toBe(7);
    expect(info?.sourceObjectId).toBe(0n);
    expect(info?.sourceObjectIdStr).toBe("user-1");
    expect(info?.eventType).toBe(EventType.DATA_UPDATE);
    expect(info?.fnId).toBeUndefined();
    expect(info?.key).toBeUndefined();
    expect(info?.keyStr).toBe("email");
    expect(info?.timestamp).toBe(BigInt(TS));
    expect(info?.context).toEqual({ key_str: "email", object_version: "5" });
    expect(decoded.originalPayload).toBeUndefined();
  });

  it("numeric id + numeric key: sets source_object_id, both id forms and the u32 key", () => {
    const payload = createTriggerPayload({
      source: { objectId: "18446744073709551615", clsId: "c", partitionId: 0 },
      eventType: EventType.DATA_DELETE,
      changed: { key: "4294967295", numeric: true, action: "delete" },
      timestampMs: TS,
    });
    const decoded = fromBinary(TriggerPayloadSchema, encodeTriggerPayload(payload, "protobuf"));
    const info = decoded.eventInfo;
    expect(info?.sourceObjectId).toBe(18446744073709551615n);
    expect(info?.sourceObjectIdStr).toBe("18446744073709551615");
    expect(info?.key).toBe(4294967295);
    expect(info?.keyStr).toBeUndefined();
    expect(info?.context).toEqual({});
    expect(info?.eventType).toBe(EventType.DATA_DELETE);
  });

  it('"007" is a string id and "042" a string key', () => {
    const payload = createTriggerPayload({
      source: { objectId: "007", clsId: "c", partitionId: 0 },
      eventType: EventType.DATA_CREATE,
      changed: { key: "042", numeric: false, action: "create" },
      timestampMs: TS,
    });
    const info = fromBinary(
      TriggerPayloadSchema,
      encodeTriggerPayload(payload, "protobuf"),
    ).eventInfo;
    expect(info?.sourceObjectId).toBe(0n);
    expect(info?.sourceObjectIdStr).toBe("007");
    expect(info?.key).toBeUndefined();
    expect(info?.keyStr).toBe("042");
  });

  it("function events carry fn_id, the error and the original payload", () => {
    const payload = createTriggerPayload({
      source: { objectId: "42", clsId: "c", partitionId: 1 },
      eventType: EventType.FUNC_ERROR,
      fnId: "resize",
      error: "out of memory",
      originalPayload: new Uint8Array([1, 2, 3]),
      timestampMs: TS,
    });
    const decoded = fromBinary(TriggerPayloadSchema, encodeTriggerPayload(payload, "protobuf"));
    expect(decoded.originalPayload).toEqual(new Uint8Array([1, 2, 3]));
    expect(decoded.eventInfo?.fnId).toBe("resize");
    expect(decoded.eventInfo?.sourceObjectId).toBe(42n);
    expect(decoded.eventInfo?.context).toEqual({ error: "out of memory" });
  });

  it("JSON form is proto3 canonical JSON", () => {
    const payload = createTriggerPayload({
      source: { objectId: "42", clsId: "users", partitionId: 7 },
      eventType: EventType.DATA_CREATE,
      changed: { key: "name", numeric: false, action: "create" },
      originalPayload: new Uint8Array([0xff]),
      timestampMs: TS,
    });
    const text = new TextDecoder().decode(encodeTriggerPayload(payload, "json"));
    expect(JSON.parse(text)).toEqual({
      eventInfo: {
        sourceClsId: "users",
        sourcePartitionId: 7,
        sourceObjectId: "42",
        eventType: "EVENT_TYPE_DATA_CREATE",
        timestamp: String(TS),
        context: { key_str: "name" },
        sourceObjectIdStr: "42",
        keyStr: "name",
      },
      originalPayload: "/w==",
    });
    expect(fromJsonString(TriggerPayloadSchema, text)).toEqual(payload);
  });

  it("protobuf and JSON round-trip for arbitrary sources and keys (property)", () => {
    const id = fc.oneof(
      fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String),
      fc.stringMatching(/^[a-z0-9._:-]{1,40}$/),
    );
    const key = fc.oneof(
      fc.integer({ min: 0, max: 4294967295 }).map((n) => ({ key: String(n), numeric: true })),
      fc.stringMatching(/^[a-z._:-][a-z0-9._:-]{0,20}$/).map((k) => ({ key: k, numeric: false })),
    );
    fc.assert(
      fc.property(id, key, fc.integer({ min: 0, max: 2 ** 32 - 1 }), (objectId, k, pid) => {
        const payload = createTriggerPayload({
          source: { objectId, clsId: "c", partitionId: pid },
          eventType: EventType.DATA_UPDATE,
          changed: { ...k, action: "update" },
          timestampMs: TS,
        });
        const bin = fromBinary(TriggerPayloadSchema, encodeTriggerPayload(payload, "protobuf"));
        const json = fromJsonString(
          TriggerPayloadSchema,
          new TextDecoder().decode(encodeTriggerPayload(payload, "json")),
        );
        for (const decoded of [bin, json]) {
          const info = decoded.eventInfo;
          expect(info?.sourceObjectIdStr).toBe(objectId);
          expect(info?.sourceObjectId).toBe(
            /^(0|[1-9][0-9]*)$/.test(objectId) ? BigInt(objectId) : 0n,
          );
          if (k.numeric) expect(info?.key).toBe(Number(k.key));
          else expect(info?.keyStr).toBe(k.key);
          expect(info?.sourcePartitionId).toBe(pid);
        }
      }),
    );
  });
});
