import { create, fromBinary, fromJsonString, toBinary, toJsonString } from "@bufbuild/protobuf";
import {
  type BackfillCheckpointRecord,
  BackfillCheckpointRecordSchema,
} from "@oprc/grpc-api/messages";
import { BackfillError } from "./backfill-error.js";
import type { Checkpoint } from "./conversion-target.js";

/** The 8-byte big-endian key of a legacy id (the layout of spec §3). */
export function legacyKeyOf(id: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, id, false);
  return out;
}

/** The legacy id of an 8-byte big-endian key. */
export function legacyIdOf(key: Uint8Array): bigint {
  if (key.length !== 8) {
    throw new BackfillError("io", `legacy blob key must be 8 bytes, got ${key.length}`);
  }
  return new DataView(key.buffer, key.byteOffset, 8).getBigUint64(0, false);
}

function toRecord(
  collection: string,
  partition: number,
  checkpoint: Checkpoint,
): BackfillCheckpointRecord {
  return create(BackfillCheckpointRecordSchema, {
    collection,
    partitionId: partition,
    lastKey: checkpoint.lastId === undefined ? new Uint8Array(0) : legacyKeyOf(checkpoint.lastId),
    converted: checkpoint.converted,
    skipped: checkpoint.skipped,
    failed: checkpoint.failed,
    complete: checkpoint.complete,
    updatedAtMs: checkpoint.updatedAtMs,
  });
}

function fromRecord(
  record: BackfillCheckpointRecord,
  collection: string,
  partition: number,
  where: string,
): Checkpoint {
  if (record.collection !== collection || record.partitionId !== partition) {
    throw new BackfillError(
      "invalid_argument",
      `checkpoint ${where} belongs to ${record.collection}/${record.partitionId}, not ${collection}/${partition}`,
    );
  }
  return {
    lastId: record.lastKey.length === 0 ? undefined : legacyIdOf(record.lastKey),
    converted: record.converted,
    skipped: record.skipped,
    failed: record.failed,
    complete: record.complete,
    updatedAtMs: record.updatedAtMs,
  };
}

/** Encodes a checkpoint as a binary `BackfillCheckpointRecord` (offline, system keyspace). */
export function encodeCheckpoint(
  collection: string,
  partition: number,
  checkpoint: Checkpoint,
): Uint8Array {
  return toBinary(BackfillCheckpointRecordSchema, toRecord(collection, partition, checkpoint));
}

/** Decodes a binary `BackfillCheckpointRecord`, checking it belongs to the shard. */
export function decodeCheckpoint(
  bytes: Uint8Array,
  collection: string,
  partition: number,
  where: string,
): Checkpoint {
  let record: BackfillCheckpointRecord;
  try {
    record = fromBinary(BackfillCheckpointRecordSchema, bytes);
  } catch (err) {
    throw new BackfillError("io", `checkpoint ${where} does not decode`, { cause: err });
  }
  return fromRecord(record, collection, partition, where);
}

/** Encodes a checkpoint as proto3 JSON of `BackfillCheckpointRecord` (online, a file). */
export function checkpointToJson(
  collection: string,
  partition: number,
  checkpoint: Checkpoint,
): string {
  return `${toJsonString(BackfillCheckpointRecordSchema, toRecord(collection, partition, checkpoint), { prettySpaces: 2 })}\n`;
}

/** Decodes a checkpoint file written by {@link checkpointToJson}. */
export function checkpointFromJson(
  text: string,
  collection: string,
  partition: number,
  where: string,
): Checkpoint {
  let record: BackfillCheckpointRecord;
  try {
    record = fromJsonString(BackfillCheckpointRecordSchema, text);
  } catch (err) {
    throw new BackfillError("io", `checkpoint file ${where} does not decode`, { cause: err });
  }
  return fromRecord(record, collection, partition, where);
}
