import { create, fromBinary, toBinary, toJsonString } from "@bufbuild/protobuf";
import { EventInfoSchema, TriggerPayloadSchema } from "@oprc/grpc-api/messages";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeTriggerPayloadBinary, encodeTriggerPayloadJsonString } from "./payload-codec.js";

const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
const u32 = fc.integer({ min: 0, max: 2 ** 32 - 1 });
const text = fc.oneof(fc.string(), fc.string({ unit: "grapheme" }), fc.string({ unit: "binary" }));
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });

const eventInfo = fc.record({
  sourceClsId: text,
  sourcePartitionId: u32,
  sourceObjectId: u64,
  eventType: fc.integer({ min: 0, max: 7 }),
  fnId: opt(text),
  key: opt(u32),
  timestamp: u64,
  context: fc.dictionary(text, text, { maxKeys: 4 }),
  sourceObjectIdStr: opt(text),
  keyStr: opt(text),
});
const payloadArb = fc.record({
  eventInfo: opt(eventInfo),
  originalPayload: opt(fc.uint8Array({ maxLength: 40 })),
});

type PayloadInput = typeof payloadArb extends fc.Arbitrary<infer T> ? T : never;

function message(p: PayloadInput) {
  const msg = create(TriggerPayloadSchema);
  if (p.eventInfo !== undefined) {
    const info = create(EventInfoSchema, { ...p.eventInfo, context: { ...p.eventInfo.context } });
    // create() drops explicitly-undefined optionals; mirror the input's presence exactly.
    for (const k of ["fnId", "key", "sourceObjectIdStr", "keyStr"] as const) {
      if (p.eventInfo[k] === undefined) delete (info as Record<string, unknown>)[k];
    }
    msg.eventInfo = info;
  }
  if (p.originalPayload !== undefined) msg.originalPayload = p.originalPayload;
  return msg;
}

describe("payload codec", () => {
  it("binary output is byte-identical to protobuf-es toBinary (property)", () => {
    fc.assert(
      fc.property(payloadArb, (p) => {
        const msg = message(p);
        const ours = encodeTriggerPayloadBinary(msg);
        expect(ours).toEqual(toBinary(TriggerPayloadSchema, msg));
        expect(fromBinary(TriggerPayloadSchema, ours)).toEqual(msg);
      }),
      { numRuns: 1000 },
    );
  });

  it("JSON output is the same string as protobuf-es toJsonString (property)", () => {
    fc.assert(
      fc.property(payloadArb, (p) => {
        const msg = message(p);
        expect(encodeTriggerPayloadJsonString(msg)).toBe(toJsonString(TriggerPayloadSchema, msg));
      }),
      { numRuns: 1000 },
    );
  });

  it("handles varint boundaries and an empty payload", () => {
    for (const v of [0n, 127n, 128n, 2n ** 31n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 64n - 1n]) {
      const msg = create(TriggerPayloadSchema, {
        eventInfo: { sourceObjectId: v, timestamp: v, sourcePartitionId: 2 ** 32 - 1 },
      });
      expect(encodeTriggerPayloadBinary(msg)).toEqual(toBinary(TriggerPayloadSchema, msg));
    }
    const empty = create(TriggerPayloadSchema);
    expect(encodeTriggerPayloadBinary(empty)).toEqual(new Uint8Array(0));
    expect(encodeTriggerPayloadJsonString(empty)).toBe("{}");
  });

  it("pooled outputs never overlap across slab boundaries; large payloads are unpooled", () => {
    const kept: {
      bytes: Uint8Array;
      msg: ReturnType<typeof create<typeof TriggerPayloadSchema>>;
    }[] = [];
    for (let i = 0; i < 5000; i++) {
      const msg = create(TriggerPayloadSchema, {
        eventInfo: {
          sourceClsId: `c${i}`,
          sourceObjectIdStr: "x".repeat(i % 50),
          timestamp: BigInt(i),
        },
      });
      if (i % 1000 === 0) msg.originalPayload = new Uint8Array(5000 + i).fill(i & 255);
      kept.push({ bytes: encodeTriggerPayloadBinary(msg), msg });
    }
    for (const { bytes, msg } of kept) {
      expect(fromBinary(TriggerPayloadSchema, bytes)).toEqual(msg);
      expect(bytes.constructor).toBe(Uint8Array);
    }
  });
});
