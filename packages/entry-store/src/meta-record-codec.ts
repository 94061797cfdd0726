// A fast path for `ObjectMetaRecord` (read by every entry read and every mutation, written
// by every mutation). Byte-identical to protobuf-es for records without attributes or
// unknown fields; anything else goes through protobuf-es. Property-tested in
// meta-record-codec.test.ts.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type ObjectMetaRecord, ObjectMetaRecordSchema } from "@oprc/grpc-api/messages";
import { FALLBACK, FAST_MAX, FastReader, fastU64, varintSize, writeVarint } from "./proto-fast.js";

/** The fields of a metadata record as the store sets them. */
export interface MetaFields {
  objectVersion: bigint;
  tombstone: boolean;
  entryCount: bigint;
  createdAtMs: bigint;
  updatedAtMs: bigint;
  attributes: { [key: string]: string };
}

/** Encodes an `ObjectMetaRecord`; byte-identical to protobuf-es `toBinary`. */
export function encodeMetaRecord(meta: MetaFields): Uint8Array {
  const { objectVersion, entryCount, createdAtMs, updatedAtMs } = meta;
  let hasAttributes = false;
  for (const _ in meta.attributes) {
    hasAttributes = true;
    break;
  }
  if (
    hasAttributes ||
    !fastU64(objectVersion) ||
    !fastU64(entryCount) ||
    !fastU64(createdAtMs) ||
    !fastU64(updatedAtMs) ||
    (meta as { $unknown?: unknown }).$unknown !== undefined
  ) {
    return toBinary(ObjectMetaRecordSchema, create(ObjectMetaRecordSchema, meta));
  }
  const fields = [
    Number(objectVersion),
    meta.tombstone ? 1 : 0,
    Number(entryCount),
    Number(createdAtMs),
    Number(updatedAtMs),
  ];
  let size = 0;
  for (const f of fields) if (f !== 0) size += 1 + varintSize(f);
  const out = new Uint8Array(size);
  let pos = 0;
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i] as number;
    if (f === 0) continue;
    out[pos++] = (i + 1) << 3;
    pos = writeVarint(out, pos, f);
  }
  return out;
}

function fast(bytes: Uint8Array): ObjectMetaRecord {
  const r = new FastReader(bytes);
  const end = bytes.length;
  const seen = [false, false, false, false, false];
  const values = [0, 0, 0, 0, 0];
  while (r.pos < end) {
    const tag = bytes[r.pos++] as number;
    const field = tag >>> 3;
    if ((tag & 7) !== 0 || field < 1 || field > 5 || seen[field - 1]) throw FALLBACK;
    seen[field - 1] = true;
    const v = r.varint(end);
    if (v >= FAST_MAX) throw FALLBACK;
    values[field - 1] = v;
  }
  return {
    $typeName: "oprc.ObjectMetaRecord",
    objectVersion: BigInt(values[0] as number),
    tombstone: values[1] !== 0,
    entryCount: BigInt(values[2] as number),
    createdAtMs: BigInt(values[3] as number),
    updatedAtMs: BigInt(values[4] as number),
    attributes: {},
  };
}

/** Decodes an `ObjectMetaRecord`: the same values as protobuf-es `fromBinary`. Throws on malformed bytes. */
export function decodeMetaRecord(bytes: Uint8Array): ObjectMetaRecord {
  try {
    return fast(bytes);
  } catch (err) {
    if (err !== FALLBACK) throw err;
    return fromBinary(ObjectMetaRecordSchema, bytes);
  }
}
