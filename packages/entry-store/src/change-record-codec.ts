// A fast path for writing `ChangeRecord`s (one per mutation that wrote, on every replica).
// Byte-identical to protobuf-es for records without a trigger configuration (`event`),
// with numbers below 2^49 and no unknown fields; anything else goes through protobuf-es.
// Property-tested in change-record-codec.test.ts.
import { toBinary } from "@bufbuild/protobuf";
import { type ChangeRecord, ChangeRecordSchema } from "@oprc/grpc-api/messages";
import { FAST_MAX, utf8Of, varintSize, writeUtf8, writeVarint } from "./proto-fast.js";

const FAST_MAX_BIG = BigInt(FAST_MAX);

/** A u64 the fast path writes as a number, or `undefined` when it must fall back. */
function small(v: bigint): number | undefined {
  return v >= 0n && v < FAST_MAX_BIG ? Number(v) : undefined;
}

/** An enum number written as a short varint (negative ones take ten bytes: protobuf-es). */
function enumValue(v: number): boolean {
  return Number.isInteger(v) && v >= 0 && v < FAST_MAX;
}

/** Bytes of a length-delimited field's tag, length and body. */
function delimited(bodyBytes: number): number {
  return 1 + varintSize(bodyBytes) + bodyBytes;
}

/** Encodes a change record; byte-identical to `toBinary(ChangeRecordSchema, record)`. */
export function encodeChangeRecord(record: ChangeRecord): Uint8Array {
  const revision = small(record.revision);
  const objectId = record.objectId === undefined ? undefined : small(record.objectId);
  const before = small(record.versionBefore);
  const after = small(record.versionAfter);
  const timestamp = small(record.timestampMs);
  if (
    revision === undefined ||
    (record.objectId !== undefined && objectId === undefined) ||
    before === undefined ||
    after === undefined ||
    timestamp === undefined ||
    record.event !== undefined ||
    (record as { $unknown?: unknown }).$unknown !== undefined
  ) {
    return toBinary(ChangeRecordSchema, record);
  }
  // Sizes first (protobuf-es writes fields in field-number order, skipping zero values).
  const id = utf8Of(record.objectIdStr);
  const changes: { key: string | Uint8Array; body: number; value: number }[] = [];
  let size = 0;
  if (revision !== 0) size += 1 + varintSize(revision);
  if (id.length > 0) size += delimited(id.length);
  if (objectId !== undefined) size += 1 + varintSize(objectId);
  if (before !== 0) size += 1 + varintSize(before);
  if (after !== 0) size += 1 + varintSize(after);
  if (timestamp !== 0) size += 1 + varintSize(timestamp);
  for (const c of record.changes) {
    if ((c as { $unknown?: unknown }).$unknown !== undefined || !enumValue(c.action)) {
      return toBinary(ChangeRecordSchema, record);
    }
    const key = utf8Of(c.key);
    let body = 0;
    if (key.length > 0) body += delimited(key.length);
    if (c.numeric) body += 2;
    if (c.action !== 0) body += 1 + varintSize(c.action);
    let value = -1;
    if (c.value !== undefined) {
      if ((c.value as { $unknown?: unknown }).$unknown !== undefined || !enumValue(c.value.type)) {
        return toBinary(ChangeRecordSchema, record);
      }
      value = 0;
      if (c.value.data.length > 0) value += delimited(c.value.data.length);
      if (c.value.type !== 0) value += 1 + varintSize(c.value.type);
      body += delimited(value);
    }
    changes.push({ key, body, value });
    size += delimited(body);
  }
  if (record.exists) size += 2;
  if (record.partitionId !== 0) size += 1 + varintSize(record.partitionId);
  if (record.triggerKeysSkipped !== 0) size += 1 + varintSize(record.triggerKeysSkipped);

  const out = new Uint8Array(size);
  let pos = 0;
  const varintField = (field: number, v: number): void => {
    out[pos++] = field << 3;
    pos = writeVarint(out, pos, v);
  };
  const bytesField = (field: number, bytes: Uint8Array): void => {
    out[pos++] = (field << 3) | 2;
    pos = writeVarint(out, pos, bytes.length);
    out.set(bytes, pos);
    pos += bytes.length;
  };
  const stringField = (field: number, text: string | Uint8Array): void => {
    out[pos++] = (field << 3) | 2;
    pos = writeVarint(out, pos, text.length);
    pos = writeUtf8(out, pos, text);
  };
  if (revision !== 0) varintField(1, revision);
  if (id.length > 0) stringField(2, id);
  if (objectId !== undefined) varintField(3, objectId);
  if (before !== 0) varintField(4, before);
  if (after !== 0) varintField(5, after);
  if (timestamp !== 0) varintField(6, timestamp);
  record.changes.forEach((c, i) => {
    const sized = changes[i] as (typeof changes)[number];
    out[pos++] = (7 << 3) | 2;
    pos = writeVarint(out, pos, sized.body);
    if (sized.key.length > 0) stringField(1, sized.key);
    if (c.numeric) varintField(2, 1);
    if (c.action !== 0) varintField(3, c.action);
    if (c.value !== undefined) {
      out[pos++] = (4 << 3) | 2;
      pos = writeVarint(out, pos, sized.value);
      if (c.value.data.length > 0) bytesField(1, c.value.data);
      if (c.value.type !== 0) varintField(2, c.value.type);
    }
  });
  if (record.exists) varintField(8, 1);
  if (record.partitionId !== 0) varintField(9, record.partitionId);
  if (record.triggerKeysSkipped !== 0) varintField(11, record.triggerKeysSkipped);
  return out;
}
