import { equals } from "@bufbuild/protobuf";
import {
  type ObjData,
  type ObjectEvent,
  ObjectEventSchema,
  type ValData,
  ValDataSchema,
} from "@oprc/grpc-api/messages";
import { isCanonicalU32 } from "@oprc/oprc-id";

/** An object's data as the comparison sees it: canonical key → value, plus event config. */
export interface ComparableObject {
  /** Entries by canonical key (numeric keys in decimal). */
  readonly entries: ReadonlyMap<string, ValData>;
  /** The event config, if any. */
  readonly event: ObjectEvent | undefined;
}

/**
 * The entries a legacy blob converts to: string keys first, then numeric keys, so a
 * numeric key wins over a string key in canonical u32 form (they are the same entry,
 * spec §2). Mirrors the entry store's conversion rule.
 */
export function blobToComparable(blob: ObjData): ComparableObject {
  const entries = new Map<string, ValData>();
  for (const [k, v] of Object.entries(blob.entriesStr)) entries.set(k, v);
  for (const [k, v] of Object.entries(blob.entries)) entries.set(k, v);
  return { entries, event: blob.event };
}

/** A reconstructed object (numeric + string entry maps) in comparable form. */
export function objectToComparable(object: {
  readonly entries: ReadonlyMap<number, ValData> | Readonly<Record<number, ValData>>;
  readonly entriesStr: ReadonlyMap<string, ValData> | Readonly<Record<string, ValData>>;
  readonly event?: ObjectEvent | undefined;
}): ComparableObject {
  const entries = new Map<string, ValData>();
  const pairs = <K, V>(m: ReadonlyMap<K, V> | Readonly<Record<string, V>>): [string, V][] =>
    m instanceof Map ? [...m].map(([k, v]) => [String(k), v]) : Object.entries(m);
  for (const [k, v] of pairs(object.entriesStr)) entries.set(k, v);
  for (const [k, v] of pairs(object.entries)) entries.set(k, v);
  return { entries, event: object.event };
}

/** Number of entries a blob converts to (numeric and string keys, deduplicated). */
export function blobEntryCount(blob: ObjData): number {
  let n = Object.keys(blob.entries).length;
  for (const k of Object.keys(blob.entriesStr)) {
    if (!(isCanonicalU32(k) && Object.hasOwn(blob.entries, k))) n++;
  }
  return n;
}

function sameValue(a: ValData, b: ValData): boolean {
  return equals(ValDataSchema, a, b);
}

/**
 * Compares an object's original (blob) form with its converted form. Returns `undefined`
 * when they hold the same entries (same keys, bytes and value types) and event config, else a
 * one-line description of the first differences found.
 */
export function compareObjects(
  original: ComparableObject,
  converted: ComparableObject,
): string | undefined {
  const problems: string[] = [];
  for (const [key, value] of original.entries) {
    const other = converted.entries.get(key);
    if (other === undefined) problems.push(`entry ${JSON.stringify(key)} is missing`);
    else if (!sameValue(value, other)) problems.push(`entry ${JSON.stringify(key)} differs`);
    if (problems.length >= 3) break;
  }
  for (const key of converted.entries.keys()) {
    if (problems.length >= 3) break;
    if (!original.entries.has(key)) problems.push(`entry ${JSON.stringify(key)} is unexpected`);
  }
  const a = original.event;
  const b = converted.event;
  const eventSame =
    (a === undefined && b === undefined) ||
    (a !== undefined && b !== undefined && equals(ObjectEventSchema, a, b));
  if (!eventSame) problems.push("event config differs");
  return problems.length === 0 ? undefined : problems.join("; ");
}
