import { create } from "@bufbuild/protobuf";
import { encodeLegacyKey } from "@oprc/granular-key";
import {
  type ObjData,
  ObjDataSchema,
  type ObjectEvent,
  type ValData,
  ValDataSchema,
} from "@oprc/grpc-api/messages";
import { isCanonicalU64 } from "@oprc/oprc-id";
import { type KeyInfo, keyInfo } from "./entry-keys.js";
import type { OpValue } from "./mutation-op.js";

/** One entry of a legacy blob, resolved to its granular key. */
export interface BlobEntry {
  readonly info: KeyInfo;
  readonly value: ValData;
}

/**
 * The entries of a legacy blob by canonical key. A numeric entry wins over a string entry
 * in canonical u32 form: they are the same entry (spec §2).
 */
export function blobEntries(id: string, blob: ObjData): Map<string, BlobEntry> {
  const out = new Map<string, BlobEntry>();
  for (const [k, v] of Object.entries(blob.entriesStr))
    out.set(k, { info: keyInfo(id, k), value: v });
  for (const [k, v] of Object.entries(blob.entries)) out.set(k, { info: keyInfo(id, k), value: v });
  return out;
}

/** The legacy blob key of `id`, or `undefined` when `id` is not a canonical u64 (no blob possible). */
export function legacyKeyOf(id: string): Uint8Array | undefined {
  return isCanonicalU64(id) ? encodeLegacyKey(BigInt(id)) : undefined;
}

/** Builds a legacy blob holding `entries` and `event`. */
export function buildBlob(
  entries: Iterable<{ readonly info: KeyInfo; readonly value: OpValue }>,
  event: ObjectEvent | undefined,
): ObjData {
  const blob = create(ObjDataSchema, {});
  for (const { info, value } of entries) {
    const v = create(ValDataSchema, { data: value.data, type: value.type });
    if (info.numeric) blob.entries[Number(info.key)] = v;
    // A plain assignment would let a key like "__proto__" reach the prototype.
    else
      Object.defineProperty(blob.entriesStr, info.key, {
        value: v,
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  if (event !== undefined) blob.event = event;
  return blob;
}
