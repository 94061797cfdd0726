import { create, fromBinary, toBinary, toJsonString } from "@bufbuild/protobuf";
import { EventInfoSchema, TriggerPayloadSchema } from "@oprc/grpc-api/messages";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  encodeTriggerPayloadBinary,
  encodeTriggerPayloadJson,
  encodeTriggerPayloadJsonString,
} from "./payload-codec.js";

const utf8 = new TextEncoder();
const u64 = fc.oneof(
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  fc.constantFrom(0n, 1n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n),
  fc.bigInt({ min: 0n, max: 2n ** 53n }),
);
const u32 = fc.oneof(
  fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  fc.constantFrom(0, 1, 127, 128, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1),
);
// Pieces that steer strings into every path of the writers: ASCII (copied directly),
// characters JSON must escape, non-ASCII and lone surrogates (encodeInto / JSON.stringify).
const piece = fc.constantFrom(
  '"',
  "\\",
  "\n",
  "\u0000",
  "\u001f",
  "\u007f",
  "é",
  "\u20ac",
  "😀",
  "\ud800",
  "\udc00",
);
const tricky = fc
  .array(fc.oneof(fc.string({ unit: "grapheme-ascii", maxLength: 8 }), piece), { maxLength: 8 })
  .map((parts) => parts.join(""));
// Lengths around the writers' thresholds: 1-byte length prefixes end at 43 UTF-16 units,
// varint lengths grow at 128 bytes, and the pooled window is 4 KiB.
const long = fc
  .tuple(fc.constantFrom(40, 42, 43, 44, 127, 128, 129, 700, 1400, 5000), tricky)
  .map(([n, t]) => (t + "x".repeat(n)).slice(0, Math.max(n, t.length)));
const text = fc.oneof(
  fc.string(),
  fc.string({ unit: "grapheme" }),
  fc.string({ unit: "binary" }),
  fc.string({ unit: "grapheme-ascii" }),
  tricky,
  long,
);
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
  originalPayload: opt(
    fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ minLength: 3000, maxLength: 5000 })),
  ),
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

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function wellFormed(p: PayloadInput): boolean {
  const i = p.eventInfo;
  if (i === undefined) return true;
  const strings = [i.sourceClsId, i.fnId, i.sourceObjectIdStr, i.keyStr];
  for (const [k, v] of Object.entries(i.context)) strings.push(k, v);
  return strings.every((s) => s === undefined || !LONE_SURROGATE.test(s));
}

describe("payload codec", () => {
  it("binary output is byte-identical to protobuf-es toBinary (property)", () => {
    fc.assert(
      fc.property(payloadArb, (p) => {
        const msg = message(p);
        const ours = encodeTriggerPayloadBinary(msg);
        expect(ours).toEqual(toBinary(TriggerPayloadSchema, msg));
        // Lone surrogates become U+FFFD in UTF-8, so only well-formed strings round-trip.
        if (wellFormed(p)) expect(fromBinary(TriggerPayloadSchema, ours)).toEqual(msg);
      }),
      { numRuns: 1000 },
    );
  });

  it("JSON output is the same string as protobuf-es toJsonString (property)", () => {
    fc.assert(
      fc.property(payloadArb, (p) => {
        const msg = message(p);
        const json = toJsonString(TriggerPayloadSchema, msg);
        expect(encodeTriggerPayloadJsonString(msg)).toBe(json);
        expect(encodeTriggerPayloadJson(msg)).toEqual(utf8.encode(json));
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
      json: Uint8Array;
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
      kept.push({
        bytes: encodeTriggerPayloadBinary(msg),
        json: encodeTriggerPayloadJson(msg),
        msg,
      });
    }
    const utf8Decoder = new TextDecoder();
    for (const { bytes, json, msg } of kept) {
      expect(fromBinary(TriggerPayloadSchema, bytes)).toEqual(msg);
      expect(bytes.constructor).toBe(Uint8Array);
      expect(utf8Decoder.decode(json)).toBe(toJsonString(TriggerPayloadSchema, msg));
      expect(json.constructor).toBe(Uint8Array);
    }
  });
});
