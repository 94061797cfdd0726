// Hand-written encoders for TriggerPayload / EventInfo (internal).
//
// The reflective protobuf-es encoders cost 1–3 µs per payload on our target VM, over the
// spec §11 budget (sub-microsecond); these fixed-shape writers emit the same bytes
// (binary: field order, implicit-presence rules and map-entry layout of protobuf-es;
// JSON: the exact string of `toJsonString`). `payload-codec.test.ts` checks both against
// protobuf-es on generated inputs, and a golden vector against an independent encoder.
//
// Each format has two writers: a one-pass writer into the pooled slab (the hot path: no
// size pass, no intermediate string, no copy) and an exact two-pass writer it falls back
// to when a payload might not fit in a 4 KiB window. Both produce the same bytes.
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
  /** `source_object_id` (3): the u64 id, 0 for string ids (a u64: 0 ≤ id < 2^64). */
  readonly sourceObjectId: bigint;
  /** `event_type` (4): an `EventType` value. */
  readonly eventType: number;
  /** `fn_id` (5), function events only. */
  readonly fnId?: string | undefined;
  /** `key` (6), numeric entry keys only. */
  readonly key?: number | undefined;
  /** `timestamp` (7), ms since the epoch (a u64). */
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
let slabBytes = new Uint8Array(slab);
let slabOffset = 0;

/** A `Uint8Array` of `size` bytes whose contents the caller overwrites entirely. */
export function allocPayload(size: number): Uint8Array {
  if (size > MAX_POOLED) return new Uint8Array(size);
  if (slabOffset + size > SLAB_SIZE) newSlab();
  const view = new Uint8Array(slab, slabOffset, size);
  slabOffset = (slabOffset + size + 7) & ~7;
  return view;
}

function newSlab(): void {
  slab = new ArrayBuffer(SLAB_SIZE);
  slabBytes = new Uint8Array(slab);
  slabOffset = 0;
}

// The fast encoders write straight into the free part of the current slab, inside a window
// of MAX_POOLED bytes that `openWindow` guarantees, then `carve` the written bytes out as
// the result (no second pass, no copy). Before each variable-length field they check that
// its worst-case size still fits in the window; when it does not, they give up (nothing is
// committed) and the caller falls back to the exact-size two-pass encoder.
function openWindow(): number {
  if (slabOffset + MAX_POOLED > SLAB_SIZE) newSlab();
  return slabOffset;
}

function carve(start: number, end: number): Uint8Array {
  const view = new Uint8Array(slab, start, end - start);
  slabOffset = (end + 7) & ~7;
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

// Writes the unsigned varint of a non-negative integer ≤ 2^53 at `p`; returns the end.
// Below 2^31 it uses bit operations; above, it splits into 32-bit halves (floating-point
// `%` on large doubles is slow).
function putVarint(buf: Uint8Array, p: number, v: number): number {
  if (v < 0x80) {
    buf[p] = v;
    return p + 1;
  }
  if (v < 0x80000000) {
    while (v > 0x7f) {
      buf[p++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[p] = v;
    return p + 1;
  }
  const hi = Math.floor(v / 0x100000000);
  return putVarint64(buf, p, v - hi * 0x100000000, hi);
}

// A u64 field is split into 32-bit halves by storing it into a BigUint64Array and reading
// the two Uint32 words back (little-endian on every platform Node supports): on V8 this
// costs a fraction of one BigInt comparison or `Number(bigint)`. Values are taken mod 2^64.
const u64Cell = new BigUint64Array(1);
const u32Halves = new Uint32Array(u64Cell.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const LO = LITTLE_ENDIAN ? 0 : 1;
const HI = LITTLE_ENDIAN ? 1 : 0;

function putBigVarint(buf: Uint8Array, p: number, v: bigint): number {
  if (v <= 0x1fffffffffffffn) return putVarint(buf, p, Number(v));
  return putVarint64(buf, p, Number(v & 0xffffffffn), Number(v >> 32n));
}

// Varint of the 64-bit value hi·2^32 + lo (both unsigned 32-bit), as protobuf-es writes it.
function putVarint64(buf: Uint8Array, p: number, lo: number, hi: number): number {
  for (let i = 0; i < 28; i += 7) {
    const shift = lo >>> i;
    const more = !(shift >>> 7 === 0 && hi === 0);
    buf[p++] = (more ? shift | 0x80 : shift) & 0xff;
    if (!more) return p;
  }
  const split = ((lo >>> 28) & 0x0f) | ((hi & 0x07) << 4);
  const hasMore = hi >>> 3 !== 0;
  buf[p++] = (hasMore ? split | 0x80 : split) & 0xff;
  if (hasMore) {
    for (let i = 3; i < 31; i += 7) {
      const shift = hi >>> i;
      const more = shift >>> 7 !== 0;
      buf[p++] = (more ? shift | 0x80 : shift) & 0xff;
      if (!more) return p;
    }
    buf[p++] = (hi >>> 31) & 0x01;
  }
  return p;
}

// Writes the UTF-8 of `s`, whose UTF-8 length is `len`, at `p`; returns the end.
function putUtf8(buf: Uint8Array, p: number, s: string, len: number): number {
  const n = s.length;
  if (len === n) {
    for (let i = 0; i < n; i++) buf[p++] = s.charCodeAt(i);
    return p;
  }
  utf8.encodeInto(s, buf.subarray(p, p + len));
  return p + len;
}

class Writer {
  readonly buf: Uint8Array;
  pos = 0;
  constructor(size: number) {
    this.buf = allocPayload(size);
  }
  varint(v: number): void {
    this.pos = putVarint(this.buf, this.pos, v);
  }
  bigVarint(v: bigint): void {
    this.pos = putBigVarint(this.buf, this.pos, v);
  }
  // Writes `s` whose UTF-8 length is `len`.
  string(s: string, len: number): void {
    this.varint(len);
    this.pos = putUtf8(this.buf, this.pos, s, len);
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
  return encodeBinaryInWindow(payload) ?? encodeBinaryExact(payload);
}

// Writes the length-prefixed UTF-8 of `s` at `p`, or returns -1 when its worst case
// (3 bytes per UTF-16 unit) would pass `end`. Strings under 43 units have a UTF-8 length
// under 128, so their 1-byte length is patched in after the bytes: ASCII is copied in one
// pass, anything else goes through `encodeInto`.
function putStr(buf: Uint8Array, p: number, end: number, s: string): number {
  const n = s.length;
  if (n < 43) {
    const q0 = p + 1;
    if (q0 + 3 * n > end) return -1;
    let q = q0;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        q = q0 + utf8.encodeInto(s, buf.subarray(q0, q0 + 3 * n)).written;
        break;
      }
      buf[q++] = c;
    }
    buf[p] = q - q0;
    return q;
  }
  const len = utf8Length(s);
  if (p + 5 + len > end) return -1;
  return putUtf8(buf, putVarint(buf, p, len), s, len);
}

// The one-pass binary encoder: writes into the current slab window (see `openWindow`),
// patching the `event_info` length in front of its body. Returns `undefined`, committing
// nothing, when the payload might not fit in the window.
function encodeBinaryInWindow(payload: TriggerPayloadFields): Uint8Array | undefined {
  const info = payload.eventInfo;
  const original = payload.originalPayload;
  const start = openWindow();
  const buf = slabBytes;
  // Fixed-size fields (varints and tags) add at most 128 bytes past the checked strings.
  const end = start + MAX_POOLED - 128;
  let first = start;
  let p = start;
  if (info !== undefined) {
    // The body starts after room for its tag and a 2-byte length (a body < 16 KiB).
    const body = start + 3;
    p = body;
    if (info.sourceClsId !== "") {
      buf[p++] = 0x0a;
      p = putStr(buf, p, end, info.sourceClsId);
      if (p < 0) return undefined;
    }
    if (info.sourcePartitionId !== 0) {
      buf[p++] = 0x10;
      p = putVarint(buf, p, info.sourcePartitionId);
    }
    u64Cell[0] = info.sourceObjectId;
    let lo = u32Halves[LO] as number;
    let hi = u32Halves[HI] as number;
    if ((lo | hi) !== 0) {
      buf[p++] = 0x18;
      p = putVarint64(buf, p, lo, hi);
    }
    if (info.eventType !== 0) {
      buf[p++] = 0x20;
      p = putVarint(buf, p, info.eventType);
    }
    if (info.fnId !== undefined) {
      buf[p++] = 0x2a;
      p = putStr(buf, p, end, info.fnId);
      if (p < 0) return undefined;
    }
    if (info.key !== undefined) {
      buf[p++] = 0x30;
      p = putVarint(buf, p, info.key);
    }
    u64Cell[0] = info.timestamp;
    lo = u32Halves[LO] as number;
    hi = u32Halves[HI] as number;
    if ((lo | hi) !== 0) {
      buf[p++] = 0x38;
      p = putVarint64(buf, p, lo, hi);
    }
    const context = info.context;
    const keys = Object.keys(context);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i] as string;
      const v = context[k] as string;
      buf[p++] = 0x42;
      if (k.length + v.length < 40) {
        // entry ≤ 4 + 3·39 bytes < 128: a 1-byte length, patched in after the entry.
        const at = p;
        buf[p + 1] = 0x0a;
        p = putStr(buf, p + 2, end, k);
        if (p < 0) return undefined;
        buf[p++] = 0x12;
        p = putStr(buf, p, end, v);
        if (p < 0) return undefined;
        buf[at] = p - at - 1;
      } else {
        const entry = strField(utf8Length(k)) + strField(utf8Length(v));
        if (p + 5 + entry > end) return undefined;
        p = putVarint(buf, p, entry);
        buf[p++] = 0x0a;
        p = putStr(buf, p, end, k);
        buf[p++] = 0x12;
        p = putStr(buf, p, end, v);
      }
    }
    if (info.sourceObjectIdStr !== undefined) {
      buf[p++] = 0x4a;
      p = putStr(buf, p, end, info.sourceObjectIdStr);
      if (p < 0) return undefined;
    }
    if (info.keyStr !== undefined) {
      buf[p++] = 0x52;
      p = putStr(buf, p, end, info.keyStr);
      if (p < 0) return undefined;
    }
    const size = p - body;
    first = size < 0x80 ? body - 2 : body - 3;
    buf[first] = 0x0a; // 1: event_info, length-delimited
    putVarint(buf, first + 1, size);
  }
  if (original !== undefined) {
    const n = original.length;
    if (p + 6 + n > end) return undefined;
    buf[p++] = 0x1a; // 3: original_payload
    p = putVarint(buf, p, n);
    buf.set(original, p);
    p += n;
  }
  return carve(first, p);
}

// The two-pass encoder: exact sizes first, then one allocation of the exact length.
function encodeBinaryExact(payload: TriggerPayloadFields): Uint8Array {
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

/**
 * Encodes a TriggerPayload as proto3 JSON in UTF-8: the bytes of
 * `encodeTriggerPayloadJsonString(payload)` (and so of protobuf-es `toJsonString`), written
 * in one pass into a pooled view.
 */
export function encodeTriggerPayloadJson(payload: TriggerPayloadFields): Uint8Array {
  return encodeJsonInWindow(payload) ?? utf8Payload(encodeTriggerPayloadJsonString(payload));
}

// Writes a string known to be ASCII (property names, digits, base64) at `p`.
function putAscii(buf: Uint8Array, p: number, s: string): number {
  const n = s.length;
  for (let i = 0; i < n; i++) buf[p++] = s.charCodeAt(i);
  return p;
}

// Writes `JSON.stringify(s)` as UTF-8 at `p`, or returns -1 when its worst case (6 bytes
// per UTF-16 unit, `\uXXXX`) would pass `end`. Printable ASCII without `"` or `\` is
// copied directly; any other string goes through `JSON.stringify` and `encodeInto`
// (JSON.stringify escapes lone surrogates, so the pieces are well-formed UTF-16).
function putJsonStr(buf: Uint8Array, p: number, end: number, s: string): number {
  const n = s.length;
  if (p + 6 * n + 2 > end) return -1;
  buf[p] = 0x22;
  let q = p + 1;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || c >= 0x80) {
      return p + utf8.encodeInto(str(s), buf.subarray(p, p + 6 * n + 2)).written;
    }
    buf[q++] = c;
  }
  buf[q] = 0x22;
  return q + 1;
}

// `${v}` of a u64 (see `u64Cell`), through the number conversion when it is exact; returns
// "" for zero, which proto3 JSON omits.
function u64Decimal(v: bigint): string {
  u64Cell[0] = v;
  const lo = u32Halves[LO] as number;
  const hi = u32Halves[HI] as number;
  if (hi < 0x200000) return (lo | hi) === 0 ? "" : String(hi * 0x100000000 + lo);
  return String(v);
}

// The one-pass JSON encoder: writes into the current slab window (see `openWindow`).
// Every field is written with a leading comma; the first comma of an object is then
// overwritten by its `{`. Returns `undefined`, committing nothing, when the payload might
// not fit in the window.
function encodeJsonInWindow(payload: TriggerPayloadFields): Uint8Array | undefined {
  const info = payload.eventInfo;
  const start = openWindow();
  const buf = slabBytes;
  // Property names, numbers and punctuation add at most 512 bytes past the checked strings.
  const end = start + MAX_POOLED - 512;
  let p = start;
  buf[p++] = 0x7b; // {
  if (info !== undefined) {
    p = putAscii(buf, p, '"eventInfo":');
    const open = p;
    if (info.sourceClsId !== "") {
      p = putJsonStr(buf, putAscii(buf, p, ',"sourceClsId":'), end, info.sourceClsId);
      if (p < 0) return undefined;
    }
    if (info.sourcePartitionId !== 0) {
      p = putAscii(buf, p, ',"sourcePartitionId":');
      p = putAscii(buf, p, String(info.sourcePartitionId));
    }
    const objectId = u64Decimal(info.sourceObjectId);
    if (objectId !== "") {
      p = putAscii(buf, p, ',"sourceObjectId":"');
      p = putAscii(buf, p, objectId);
      buf[p++] = 0x22;
    }
    if (info.eventType !== 0) {
      p = putAscii(buf, p, ',"eventType":');
      const name = EVENT_TYPE_NAMES[info.eventType];
      if (name === undefined) p = putAscii(buf, p, String(info.eventType));
      else {
        buf[p++] = 0x22;
        p = putAscii(buf, p, name);
        buf[p++] = 0x22;
      }
    }
    if (info.fnId !== undefined) {
      p = putJsonStr(buf, putAscii(buf, p, ',"fnId":'), end, info.fnId);
      if (p < 0) return undefined;
    }
    if (info.key !== undefined) {
      p = putAscii(buf, p, ',"key":');
      p = putAscii(buf, p, String(info.key));
    }
    const timestamp = u64Decimal(info.timestamp);
    if (timestamp !== "") {
      p = putAscii(buf, p, ',"timestamp":"');
      p = putAscii(buf, p, timestamp);
      buf[p++] = 0x22;
    }
    const context = info.context;
    const before = p;
    p = putAscii(buf, p, ',"context":');
    const ctxOpen = p;
    const keys = Object.keys(context);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i] as string;
      buf[p++] = 0x2c; // ,
      p = putJsonStr(buf, p, end, k);
      if (p < 0) return undefined;
      buf[p++] = 0x3a; // :
      p = putJsonStr(buf, p, end, context[k] as string);
      if (p < 0) return undefined;
    }
    if (p === ctxOpen) p = before;
    else {
      buf[ctxOpen] = 0x7b;
      buf[p++] = 0x7d;
    }
    if (info.sourceObjectIdStr !== undefined) {
      p = putJsonStr(buf, putAscii(buf, p, ',"sourceObjectIdStr":'), end, info.sourceObjectIdStr);
      if (p < 0) return undefined;
    }
    if (info.keyStr !== undefined) {
      p = putJsonStr(buf, putAscii(buf, p, ',"keyStr":'), end, info.keyStr);
      if (p < 0) return undefined;
    }
    if (p === open) buf[p++] = 0x7b;
    else buf[open] = 0x7b;
    buf[p++] = 0x7d;
  }
  const original = payload.originalPayload;
  if (original !== undefined) {
    if (p + 4 * Math.ceil(original.length / 3) > end) return undefined;
    if (info !== undefined) buf[p++] = 0x2c;
    p = putAscii(buf, p, '"originalPayload":"');
    p = putAscii(
      buf,
      p,
      Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString("base64"),
    );
    buf[p++] = 0x22;
  }
  buf[p++] = 0x7d;
  return carve(start, p);
}
