// A fast path for the hottest record: `EntryRecord` (one per entry read or written).
// It produces exactly protobuf-es's bytes and values for the canonical shapes this store
// writes, and defers to protobuf-es for anything else (unknown fields, repeated fields,
// negative enums, varints past 49 bits), so records written by other versions still
// decode. Property-tested against protobuf-es in entry-record-codec.test.ts.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  EntryRecordSchema,
  type ValData,
  ValDataSchema,
  type ValType,
} from "@oprc/grpc-api/messages";
import { FALLBACK, FAST_MAX, FastReader, fastU64, varintSize, writeVarint } from "./proto-fast.js";

/** A decoded entry record. */
export interface EntryRecordFields {
  /** The value (`undefined` when the record has none: a corrupt record for the store). */
  value: ValData | undefined;
  /** Object version of the entry's last mutation. */
  version: bigint;
  /** Time of the entry's last mutation (ms). */
  updatedAtMs: bigint;
}

/** The parts of a value an entry record stores: bytes and the ValType number. */
export interface EntryRecordValue {
  readonly data: Uint8Array;
  readonly type: number;
}

function slow(value: EntryRecordValue, version: bigint, updatedAtMs: bigint): Uint8Array {
  const v = create(ValDataSchema, { data: value.data, type: value.type as ValType });
  const unknown = (value as { $unknown?: ValData["$unknown"] }).$unknown;
  if (unknown !== undefined) v.$unknown = unknown;
  return toBinary(EntryRecordSchema, create(EntryRecordSchema, { value: v, version, updatedAtMs }));
}

/** Encodes an `EntryRecord`; byte-identical to protobuf-es `toBinary`. */
export function encodeEntryRecord(
  value: EntryRecordValue,
  version: bigint,
  updatedAtMs: bigint,
): Uint8Array {
  const type = value.type as number;
  if (
    !fastU64(version) ||
    !fastU64(updatedAtMs) ||
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

function fast(bytes: Uint8Array): EntryRecordFields {
  const r = new FastReader(bytes);
  const end = bytes.length;
  let value: ValData | undefined;
  let version = -1;
  let updated = -1;
  while (r.pos < end) {
    const tag = bytes[r.pos++] as number;
    if (tag === 0x0a && value === undefined) {
      const len = r.varint(end);
      const stop = r.pos + len;
      if (stop > end) throw FALLBACK;
      let data: Uint8Array | undefined;
      let type = -1;
      while (r.pos < stop) {
        const t = bytes[r.pos++] as number;
        if (t === 0x0a && data === undefined) {
          const n = r.varint(stop);
          if (r.pos + n > stop) throw FALLBACK;
          data = bytes.slice(r.pos, r.pos + n);
          r.pos += n;
        } else if (t === 0x10 && type === -1) {
          type = r.varint(stop);
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
      version = r.varint(end);
    } else if (tag === 0x18 && updated === -1) {
      updated = r.varint(end);
    } else {
      throw FALLBACK;
    }
  }
  if (version >= FAST_MAX || updated >= FAST_MAX) throw FALLBACK;
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
