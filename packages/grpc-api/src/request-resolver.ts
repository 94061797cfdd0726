import type { EntryKey, NormalizeOptions, ObjectIdentity } from "@oprc/oprc-id";
import {
  buildIdentity,
  canonicalEntryKey,
  isCanonicalU64,
  normalizeEntryKey,
  normalizeObjectId,
} from "@oprc/oprc-id";
import { COLLECTION_NAME_RULE, isCollectionName, quoteInput } from "./collection-name.js";
import type { EntryWrite, ObjectRef, PartitionRef } from "./data-plane.js";
import { DataPlaneError } from "./data-plane-error.js";
import type { ObjData, ValData } from "./gen/oprc-data_pb.js";
import type { ResolvedGrpcApiOptions } from "./grpc-api-options.js";

/** Turns raw request fields into resolved plane arguments, enforcing the feature flags. */
export interface RequestResolver {
  /** Checks `cls_id` and the partition id (int32 on some requests, so it may be negative). */
  partition(cls: string, partitionId: number): PartitionRef;
  /** Builds the object reference; exactly one of the numeric and string id. */
  object(
    cls: string,
    partitionId: number,
    objectId: bigint,
    objectIdStr: string | undefined,
  ): ObjectRef;
  /** Canonical key from `key` (u32) / `key_str`. */
  key(key: number, keyStr: string | undefined): EntryKey;
  /** Canonical key from a string (batch map keys, delete keys). */
  keyString(key: string): EntryKey;
  /** The entries of an `ObjData` (both maps), keys canonical and unique. */
  entries(obj: ObjData): EntryWrite[];
  /** Normalized ListValues key prefix; `undefined` for none. */
  keyPrefix(prefix: string | undefined): string | undefined;
  /** Normalized ListObjects id prefix; `undefined` for none. */
  idPrefix(prefix: string | undefined): string | undefined;
  /** Page size: 0 → default, capped at the maximum. */
  limit(limit: number): number;
}

/** Creates a {@link RequestResolver} for the given options. */
export function createRequestResolver(options: ResolvedGrpcApiOptions): RequestResolver {
  const norm: NormalizeOptions = { maxLength: options.maxIdLength, unicode: options.unicode };
  const { stringIds, stringKeys, listDefaultLimit, listMaxLimit, onIdNormalized } = options;
  /** {@link buildIdentity}, timed for {@link ResolvedGrpcApiOptions.onIdNormalized} when a string id is given. */
  const identity = (input: { numeric: bigint; str?: string }): ObjectIdentity => {
    if (onIdNormalized === undefined || input.str === undefined || input.str === "") {
      return buildIdentity(input, norm);
    }
    const started = process.hrtime.bigint();
    try {
      return buildIdentity(input, norm);
    } finally {
      onIdNormalized(Number(process.hrtime.bigint() - started));
    }
  };

  const partition = (cls: string, partitionId: number): PartitionRef => {
    if (cls === "") throw new DataPlaneError("invalid_argument", "cls_id is required");
    if (!isCollectionName(cls)) {
      throw new DataPlaneError(
        "invalid_argument",
        `cls_id ${quoteInput(cls)} is not a collection name (${COLLECTION_NAME_RULE})`,
      );
    }
    if (partitionId < 0) {
      throw new DataPlaneError(
        "invalid_argument",
        `partition_id must be non-negative, got ${partitionId}`,
      );
    }
    return { cls, partition: partitionId };
  };

  const checkKey = (k: EntryKey): EntryKey => {
    if (k.kind === "string" && !stringKeys) {
      throw new DataPlaneError("unimplemented", "string entry keys are disabled on this node");
    }
    return k;
  };

  const keyString = (key: string): EntryKey => {
    if (key === "") throw new DataPlaneError("invalid_argument", "entry key must not be empty");
    return checkKey(canonicalEntryKey({ keyStr: key }, norm));
  };

  const value = (v: ValData): EntryWrite["value"] => ({ data: v.data, type: v.type });

  return {
    partition,
    object(cls, partitionId, objectId, objectIdStr) {
      const p = partition(cls, partitionId);
      const input: { numeric: bigint; str?: string } = { numeric: objectId };
      if (objectIdStr !== undefined) input.str = objectIdStr;
      const id = identity(input);
      if (id.kind === "string" && !stringIds && !isCanonicalU64(id.id)) {
        throw new DataPlaneError("unimplemented", "string object ids are disabled on this node");
      }
      return { cls: p.cls, partition: p.partition, id };
    },
    key(key, keyStr) {
      const input: { key: number; keyStr?: string } = { key };
      if (keyStr !== undefined) input.keyStr = keyStr;
      return checkKey(canonicalEntryKey(input, norm));
    },
    keyString,
    entries(obj) {
      const out: EntryWrite[] = [];
      const seen = new Set<string>();
      for (const [k, v] of Object.entries(obj.entries)) {
        // Map keys of a map<uint32, …> arrive as decimal strings; canonical by construction.
        const key = canonicalEntryKey({ key: Number(k) }, norm);
        seen.add(key.key);
        out.push({ key, value: value(v) });
      }
      for (const [k, v] of Object.entries(obj.entriesStr)) {
        const key = keyString(k);
        if (seen.has(key.key)) {
          throw new DataPlaneError(
            "invalid_argument",
            `entry key ${JSON.stringify(key.key)} is given more than once (after normalization)`,
          );
        }
        seen.add(key.key);
        out.push({ key, value: value(v) });
      }
      return out;
    },
    keyPrefix(prefix) {
      if (prefix === undefined || prefix === "") return undefined;
      if (!stringKeys) {
        throw new DataPlaneError("unimplemented", "string entry keys are disabled on this node");
      }
      return normalizeEntryKey(prefix, norm);
    },
    idPrefix(prefix) {
      if (prefix === undefined || prefix === "") return undefined;
      return normalizeObjectId(prefix, norm);
    },
    limit(limit) {
      if (limit === 0) return listDefaultLimit;
      return Math.min(limit, listMaxLimit);
    },
  };
}
