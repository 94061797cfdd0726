import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  type ObjData,
  ObjDataSchema,
  type ObjectEvent,
  ObjectEventSchema,
  type ObjectMetaRecord,
  type ShardCountersRecord,
  ShardCountersRecordSchema,
} from "@oprc/grpc-api/messages";
import { toHex } from "./bytes.js";
import {
  decodeEntryRecord,
  type EntryRecordFields,
  type EntryRecordValue,
  encodeEntryRecord,
} from "./entry-record-codec.js";
import { decodeMetaRecord, encodeMetaRecord, type MetaFields } from "./meta-record-codec.js";
import { StoreError } from "./store-error.js";

type AnySchema = typeof ObjectEventSchema | typeof ObjDataSchema | typeof ShardCountersRecordSchema;

function decode<T>(schema: AnySchema, bytes: Uint8Array, key: Uint8Array, what: string): T {
  try {
    return fromBinary(schema, bytes) as T;
  } catch (err) {
    throw new StoreError("corrupt_record", `${what} record at key ${toHex(key)} does not decode`, {
      cause: err,
      key: key.slice(),
    });
  }
}

/** Decodes an `ObjectMetaRecord` (fast path), or throws `corrupt_record` naming `key`. */
export function decodeMeta(bytes: Uint8Array, key: Uint8Array): ObjectMetaRecord {
  try {
    return decodeMetaRecord(bytes);
  } catch (err) {
    throw new StoreError("corrupt_record", `metadata record at key ${toHex(key)} does not decode`, {
      cause: err,
      key: key.slice(),
    });
  }
}

/** Decodes an `EntryRecord` (fast path), or throws `corrupt_record` naming `key`. */
export function decodeEntry(bytes: Uint8Array, key: Uint8Array): EntryRecordFields {
  try {
    return decodeEntryRecord(bytes);
  } catch (err) {
    throw new StoreError("corrupt_record", `entry record at key ${toHex(key)} does not decode`, {
      cause: err,
      key: key.slice(),
    });
  }
}

/** Decodes an `ObjectEvent`, or throws `corrupt_record` naming `key`. */
export function decodeEvent(bytes: Uint8Array, key: Uint8Array): ObjectEvent {
  return decode<ObjectEvent>(ObjectEventSchema, bytes, key, "event config");
}

/** Decodes a legacy blob (`ObjData`), or throws `corrupt_record` naming `key`. */
export function decodeBlob(bytes: Uint8Array, key: Uint8Array): ObjData {
  return decode<ObjData>(ObjDataSchema, bytes, key, "legacy blob");
}

/** Decodes the shard counters, or throws `corrupt_record` naming `key`. */
export function decodeCounters(bytes: Uint8Array, key: Uint8Array): ShardCountersRecord {
  return decode<ShardCountersRecord>(ShardCountersRecordSchema, bytes, key, "shard counters");
}

/** Encodes an `ObjectMetaRecord` (fast path). */
export function encodeMeta(meta: MetaFields): Uint8Array {
  return encodeMetaRecord(meta);
}

/** Encodes an entry record for `value` at object version `version` (fast path). */
export function encodeEntry(
  value: EntryRecordValue,
  version: bigint,
  updatedAtMs: bigint,
): Uint8Array {
  return encodeEntryRecord(value, version, updatedAtMs);
}

/** Encodes an `ObjectEvent`. */
export function encodeEvent(event: ObjectEvent): Uint8Array {
  return toBinary(ObjectEventSchema, event);
}

/** Encodes a legacy blob. */
export function encodeBlob(blob: ObjData): Uint8Array {
  return toBinary(ObjDataSchema, blob);
}

/** Encodes the shard counters. */
export function encodeCounters(liveObjects: bigint): Uint8Array {
  return toBinary(ShardCountersRecordSchema, create(ShardCountersRecordSchema, { liveObjects }));
}
