// A fast path for the hottest record: `EntryRecord` (one per entry read or written).
// It produces exactly protobuf-es's bytes and values for the canonical shapes this store
// writes, and defers to protobuf-es for anything else (unknown fields, repeated fields,
// negative enums, varints past 49 bits), so records written by other versions still
// decode. Property-tested against protobuf-es in entry-record-codec.test.ts.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { EntryRecordSchema, type ValData } from "@oprc/grpc-api";

/** A decoded entry record. */
export interface EntryRecordFields {
  /** The value (`undefined` when the record has none: a corrupt record for the store). */
  value: ValData | undefined;
  /** Object version of the entry's last mutation. */
  version: bigint;
  /** Time of the entry's last mutation (ms). */
  updatedAtMs: bigint;
}

const TWO_49 = 2 ** 49;

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

function writeVarint(out: Uint8Array, pos: number, n: number): number {
  while (n >= 0x80) {
    out[pos++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  out[pos++] = n;
  return pos;
}

function slow(value: ValData, version: bigint, updatedAtMs: bigint): Uint8Array {
  return toBinary(EntryRecordSchema, create(EntryRecordSchema, { value, version, updatedAtMs }));
}

/** Encodes an `EntryRecord`; byte-identical to protobuf-es `toBinary`. */
export function encodeEntryRecord(
  value: ValData,
  version: bigint,
  updatedAtMs: bigint,
): Uint8Array {
  const type = value.type as number;
  if (
    version < 0n ||
    version >= BigInt(Number.MAX_SAFE_INTEGER) ||
    updatedAtMs < 0n ||
    updatedAtMs >= BigInt(Number.MAX_SAFE_INTEGER) ||
    !Number.isInteger(type) ||
    type < 0 ||
    type > 0x7fffffff ||
    (value as { $unknown?: unknown }).$unknown !== undefined
  ) {
    return slow(value, version, updatedAtMs);
  }
  const data = value.data;
  const v = Number(version);
  const u = Number(updatedAtMs);
  const valLen =
    (data.length > 0 ? 1 + varintSize(data.length) + data.length : 0) +
    (type !== 0 ? 1 + varintSize(type) : 0);
  const size =
    1 +
    varintSize(valLen) +
    valLen +
    (v !== 0 ? 1 + varintSize(v) : 0) +
    (u !== 0 ? 1 + varintSize(u) : 0);
  const out = new Uint8Array(size);
  let pos = 0;
  out[pos++] = 0x0a;
  pos = writeVarint(out, pos, valLen);
  if (data.length > 0) {
    out[pos++] = 0x0a;
    pos = writeVarint(out, pos, data.length);
    out.set(data, pos);
    pos += data.length;
  }
  if (type !== 0) {
    out[pos++] = 0x10;
    pos = writeVarint(out, pos, type);
  }
  if (v !== 0) {
    out[pos++] = 0x10;
    pos = writeVarint(out, pos, v);
  }
  if (u !== 0) {
    out[pos++] = 0x18;
    pos = writeVarint(out, pos, u);
  }
  return out;
}

/** Thrown inside the fast path to fall back to protobuf-es. */
const FALLBACK = Symbol("fallback");

let pos = 0;

/** Reads a varint of at most 7 bytes (< 2^49) at `pos`, else falls back. */
function readVarint(bytes: Uint8Array, end: number): number {
  let result = 0;
  let scale = 1;
  for (let i = 0; i < 7; i++) {
    if (pos >= end) throw FALLBACK;
    const b = bytes[pos++] as number;
    result += (b & 0x7f) * scale;
    if (b < 0x80) return result;
    scale *= 128;
  }
  throw FALLBACK;
}

function fast(bytes: Uint8Array): EntryRecordFields {
  pos = 0;
  const end = bytes.length;
  let value: ValData | undefined;
  let version = -1;
  let updated = -1;
  while (pos < end) {
    const tag = bytes[pos++] as number;
    if (tag === 0x0a && value === undefined) {
      const len = readVarint(bytes, end);
      const stop = pos + len;
      if (stop > end) throw FALLBACK;
      let data: Uint8Array | undefined;
      let type = -1;
      while (pos < stop) {
        const t = bytes[pos++] as number;
        if (t === 0x0a && data === undefined) {
          const n = readVarint(bytes, stop);
          if (pos + n > stop) throw FALLBACK;
          data = bytes.slice(pos, pos + n);
          pos += n;
        } else if (t === 0x10 && type === -1) {
          type = readVarint(bytes, stop);
          if (type > 0x7fffffff) throw FALLBACK;
        } else {
          throw FALLBACK;
        }
      }
      value = {
        $typeName: "oprc.ValData",
        data: data ?? new Uint8Array(0),
        type: type === -1 ? 0 : type,
      } as ValData;
    } else if (tag === 0x10 && version === -1) {
      version = readVarint(bytes, end);
    } else if (tag === 0x18 && updated === -1) {
      updated = readVarint(bytes, end);
    } else {
      throw FALLBACK;
    }
  }
  if (version >= TWO_49 || updated >= TWO_49) throw FALLBACK;
  return {
    value,
    version: BigInt(version === -1 ? 0 : version),
    updatedAtMs: BigInt(updated === -1 ? 0 : updated),
  };
}

/**
 * Decodes an `EntryRecord`; the same values as protobuf-es `fromBinary` (which it defers
 * to for unusual encodings). Throws on malformed bytes.
 */
export function decodeEntryRecord(bytes: Uint8Array): EntryRecordFields {
  try {
    return fast(bytes);
  } catch (err) {
    if (err !== FALLBACK) throw err;
    const r = fromBinary(EntryRecordSchema, bytes);
    return { value: r.value, version: r.version, updatedAtMs: r.updatedAtMs };
  }
}
