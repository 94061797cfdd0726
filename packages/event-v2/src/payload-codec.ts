// Hand-written encoders for TriggerPayload / EventInfo (internal).
//
// The reflective protobuf-es encoders cost 1–3 µs per payload on our target VM, over the
// spec §11 budget (sub-microsecond); these fixed-shape writers emit the same bytes
// (binary: field order, implicit-presence rules and map-entry layout of protobuf-es;
// JSON: the exact string of `toJsonString`). `payload-codec.test.ts` checks both against
// protobuf-es on generated inputs, and a golden vector against an independent encoder.
import { Buffer } from "node:buffer";

/**
 * The `EventInfo` fields the encoders read, as plain data (a generated `EventInfo` is
 * assignable). Field meanings are those of `oprc.EventInfo` (spec §6).
 */
export interface EventInfoFields {
  /** `source_cls_id` (1). */
  readonly sourceClsId: string;
  /** `source_partition_id` (2). */
  readonly sourcePartitionId: number;
  /** `source_object_id` (3): the u64 id, 0 for string ids. */
  readonly sourceObjectId: bigint;
  /** `event_type` (4): an `EventType` value. */
  readonly eventType: number;
  /** `fn_id` (5), function events only. */
  readonly fnId?: string | undefined;
  /** `key` (6), numeric entry keys only. */
  readonly key?: number | undefined;
  /** `timestamp` (7), ms since the epoch. */
  readonly timestamp: bigint;
  /** `context` (8). */
  readonly context: Readonly<Record<string, string>>;
  /** `source_object_id_str` (9). */
  readonly sourceObjectIdStr?: string | undefined;
  /** `key_str` (10), string entry keys only. */
  readonly keyStr?: string | undefined;
}

/** The `TriggerPayload` fields the encoders read (a generated `TriggerPayload` is assignable). */
export interface TriggerPayloadFields {
  /** `event_info` (1). */
  readonly eventInfo?: EventInfoFields | undefined;
  /** `original_payload` (3). */
  readonly originalPayload?: Uint8Array | undefined;
}

const utf8 = new TextEncoder();

// Payloads are carved out of shared 64 KiB slabs (as Node's Buffer pool does): allocating a
// fresh backing store per payload costs more than the whole encoding. Results are plain
// Uint8Array views; every byte of a view is written, stale slab bytes stay outside it.
const SLAB_SIZE = 64 * 1024;
const MAX_POOLED = 4 * 1024;
let slab = new ArrayBuffer(SLAB_SIZE);
let slabOffset = 0;

/** A `Uint8Array` of `size` bytes whose contents the caller overwrites entirely. */
export function allocPayload(size: number): Uint8Array {
  if (size > MAX_POOLED) return new Uint8Array(size);
  if (slabOffset + size > SLAB_SIZE) {
    slab = new ArrayBuffer(SLAB_SIZE);
    slabOffset = 0;
  }
  const view = new Uint8Array(slab, slabOffset, size);
  slabOffset = (slabOffset + size + 7) & ~7;
  return view;
}

/** UTF-8 encodes `s` into a pooled view. */
export function utf8Payload(s: string): Uint8Array {
  const view = allocPayload(Buffer.byteLength(s, "utf8"));
  utf8.encodeInto(s, view);
  return view;
}

function utf8Length(s: string): number {
  const n = s.length;
  let len = n;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) len += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        len += 2; // 4 bytes for 2 UTF-16 units
        i++;
      } else len += 2; // lone surrogate → U+FFFD (3 bytes)
    } else len += 2;
  }
  return len;
}

function varintSize(v: number): number {
  if (v < 0x80) return 1;
  if (v < 0x4000) return 2;
  if (v < 0x200000) return 3;
  if (v < 0x10000000) return 4;
  if (v < 0x800000000) return 5;
  if (v < 0x40000000000) return 6;
  if (v < 0x2000000000000) return 7;
  if (v < 0x100000000000000) return 8;
  return v < 0x8000000000000000 ? 9 : 10;
}

function bigVarintSize(v: bigint): number {
  if (v <= 0x1fffffffffffffn) return varintSize(Number(v));
  let n = 1;
  let x = v >> 7n;
  while (x > 0n) {
    n++;
    x >>= 7n;
  }
  return n;
}

class Writer {
  readonly buf: Uint8Array;
  pos = 0;
  constructor(size: number) {
    this.buf = allocPayload(size);
  }
  // Unsigned varint of a non-negative integer ≤ 2^53. Below 2^31 it uses bit operations;
  // above, it splits into 32-bit halves (floating-point `%` on large doubles is slow).
  varint(v: number): void {
    if (v < 0x80000000) {
      const buf = this.buf;
      let p = this.pos;
      while (v > 0x7f) {
        buf[p++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      buf[p++] = v;
      this.pos = p;
      return;
    }
    const hi = Math.floor(v / 0x100000000);
    this.varint64(v - hi * 0x100000000, hi);
  }
  bigVarint(v: bigint): void {
    if (v <= 0x1fffffffffffffn) this.varint(Number(v));
    else this.varint64(Number(v & 0xffffffffn), Number(v >> 32n));
  }
  // Varint of the 64-bit value hi·2^32 + lo (both unsigned 32-bit), as protobuf-es writes it.
  varint64(lo: number, hi: number): void {
    const buf = this.buf;
    let p = this.pos;
    for (let i = 0; i < 28; i += 7) {
      const shift = lo >>> i;
      const more = !(shift >>> 7 === 0 && hi === 0);
      buf[p++] = (more ? shift | 0x80 : shift) & 0xff;
      if (!more) {
        this.pos = p;
        return;
      }
    }
    const split = ((lo >>> 28) & 0x0f) | ((hi & 0x07) << 4);
    const hasMore = hi >>> 3 !== 0;
    buf[p++] = (hasMore ? split | 0x80 : split) & 0xff;
    if (hasMore) {
      for (let i = 3; i < 31; i += 7) {
        const shift = hi >>> i;
        const more = shift >>> 7 !== 0;
        buf[p++] = (more ? shift | 0x80 : shift) & 0xff;
        if (!more) {
          this.pos = p;
          return;
        }
      }
      buf[p++] = (hi >>> 31) & 0x01;
    }
    this.pos = p;
  }
  // Writes `s` whose UTF-8 length is `len`.
  string(s: string, len: number): void {
    this.varint(len);
    const buf = this.buf;
    let p = this.pos;
    if (len === s.length) {
      for (let i = 0; i < len; i++) buf[p++] = s.charCodeAt(i);
      this.pos = p;
      return;
    }
    utf8.encodeInto(s, buf.subarray(p, p + len));
    this.pos = p + len;
  }
  bytes(b: Uint8Array): void {
    this.varint(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }
}

// Sizes of a string field's payload and of the field as a whole (1-byte tags: fields ≤ 15).
function strField(len: number): number {
  return 1 + varintSize(len) + len;
}

/** Encodes a TriggerPayload in the protobuf binary format, byte-identical to protobuf-es `toBinary`. */
export function encodeTriggerPayloadBinary(payload: TriggerPayloadFields): Uint8Array {
  const info = payload.eventInfo;
  const original = payload.originalPayload;
  let infoSize = 0;
  let clsLen = 0;
  let fnLen = 0;
  let idStrLen = 0;
  let keyStrLen = 0;
  let ctxKeys: string[] = [];
  let ctxLens: number[] = [];
  if (info !== undefined) {
    if (info.sourceClsId !== "") {
      clsLen = utf8Length(info.sourceClsId);
      infoSize += strField(clsLen);
    }
    if (info.sourcePartitionId !== 0) infoSize += 1 + varintSize(info.sourcePartitionId);
    if (info.sourceObjectId !== 0n) infoSize += 1 + bigVarintSize(info.sourceObjectId);
    if (info.eventType !== 0) infoSize += 1 + varintSize(info.eventType);
    if (info.fnId !== undefined) {
      fnLen = utf8Length(info.fnId);
      infoSize += strField(fnLen);
    }
    if (info.key !== undefined) infoSize += 1 + varintSize(info.key);
    if (info.timestamp !== 0n) infoSize += 1 + bigVarintSize(info.timestamp);
    ctxKeys = Object.keys(info.context);
    if (ctxKeys.length > 0) {
      ctxLens = new Array<number>(ctxKeys.length * 3);
      for (let i = 0; i < ctxKeys.length; i++) {
        const k = ctxKeys[i] as string;
        const kl = utf8Length(k);
        const vl = utf8Length(info.context[k] as string);
        const entry = strField(kl) + strField(vl);
        ctxLens[i * 3] = kl;
        ctxLens[i * 3 + 1] = vl;
        ctxLens[i * 3 + 2] = entry;
        infoSize += 1 + varintSize(entry) + entry;
      }
    }
    if (info.sourceObjectIdStr !== undefined) {
      idStrLen = utf8Length(info.sourceObjectIdStr);
      infoSize += strField(idStrLen);
    }
    if (info.keyStr !== undefined) {
      keyStrLen = utf8Length(info.keyStr);
      infoSize += strField(keyStrLen);
    }
  }
  let total = 0;
  if (info !== undefined) total += 1 + varintSize(infoSize) + infoSize;
  if (original !== undefined) total += 1 + varintSize(original.length) + original.length;

  const w = new Writer(total);
  const buf = w.buf;
  if (info !== undefined) {
    buf[w.pos++] = 0x0a; // 1: event_info, length-delimited
    w.varint(infoSize);
    if (info.sourceClsId !== "") {
      buf[w.pos++] = 0x0a;
      w.string(info.sourceClsId, clsLen);
    }
    if (info.sourcePartitionId !== 0) {
      buf[w.pos++] = 0x10;
      w.varint(info.sourcePartitionId);
    }
    if (info.sourceObjectId !== 0n) {
      buf[w.pos++] = 0x18;
      w.bigVarint(info.sourceObjectId);
    }
    if (info.eventType !== 0) {
      buf[w.pos++] = 0x20;
      w.varint(info.eventType);
    }
    if (info.fnId !== undefined) {
      buf[w.pos++] = 0x2a;
      w.string(info.fnId, fnLen);
    }
    if (info.key !== undefined) {
      buf[w.pos++] = 0x30;
      w.varint(info.key);
    }
    if (info.timestamp !== 0n) {
      buf[w.pos++] = 0x38;
      w.bigVarint(info.timestamp);
    }
    for (let i = 0; i < ctxKeys.length; i++) {
      const k = ctxKeys[i] as string;
      buf[w.pos++] = 0x42;
      w.varint(ctxLens[i * 3 + 2] as number);
      buf[w.pos++] = 0x0a;
      w.string(k, ctxLens[i * 3] as number);
      buf[w.pos++] = 0x12;
      w.string(info.context[k] as string, ctxLens[i * 3 + 1] as number);
    }
    if (info.sourceObjectIdStr !== undefined) {
      buf[w.pos++] = 0x4a;
      w.string(info.sourceObjectIdStr, idStrLen);
    }
    if (info.keyStr !== undefined) {
      buf[w.pos++] = 0x52;
      w.string(info.keyStr, keyStrLen);
    }
  }
  if (original !== undefined) {
    buf[w.pos++] = 0x1a; // 3: original_payload
    w.bytes(original);
  }
  return buf;
}

const EVENT_TYPE_NAMES: readonly string[] = [
  "EVENT_TYPE_UNKNOWN",
  "EVENT_TYPE_FUNC_COMPLETE",
  "EVENT_TYPE_FUNC_ERROR",
  "EVENT_TYPE_DATA_CREATE",
  "EVENT_TYPE_DATA_UPDATE",
  "EVENT_TYPE_DATA_DELETE",
];

const str = JSON.stringify;

/** Encodes a TriggerPayload as proto3 JSON, the same string as protobuf-es `toJsonString`. */
export function encodeTriggerPayloadJsonString(payload: TriggerPayloadFields): string {
  const info = payload.eventInfo;
  let out = "{";
  if (info !== undefined) {
    let s = "";
    if (info.sourceClsId !== "") s += `,"sourceClsId":${str(info.sourceClsId)}`;
    if (info.sourcePartitionId !== 0) s += `,"sourcePartitionId":${info.sourcePartitionId}`;
    if (info.sourceObjectId !== 0n) s += `,"sourceObjectId":"${info.sourceObjectId}"`;
    if (info.eventType !== 0) {
      const name = EVENT_TYPE_NAMES[info.eventType];
      s += `,"eventType":${name === undefined ? info.eventType : `"${name}"`}`;
    }
    if (info.fnId !== undefined) s += `,"fnId":${str(info.fnId)}`;
    if (info.key !== undefined) s += `,"key":${info.key}`;
    if (info.timestamp !== 0n) s += `,"timestamp":"${info.timestamp}"`;
    let ctx = "";
    const keys = Object.keys(info.context);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i] as string;
      ctx += `,${str(k)}:${str(info.context[k])}`;
    }
    if (ctx !== "") s += `,"context":{${ctx.slice(1)}}`;
    if (info.sourceObjectIdStr !== undefined)
      s += `,"sourceObjectIdStr":${str(info.sourceObjectIdStr)}`;
    if (info.keyStr !== undefined) s += `,"keyStr":${str(info.keyStr)}`;
    out += `"eventInfo":{${s.slice(1)}}`;
  }
  if (payload.originalPayload !== undefined) {
    if (info !== undefined) out += ",";
    const b = payload.originalPayload;
    out += `"originalPayload":"${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64")}"`;
  }
  return `${out}}`;
}
