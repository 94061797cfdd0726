import { alloc } from "./byte-pool.js";
import { decodeKey } from "./decode-key.js";
import { KeyError } from "./key-error.js";
import { compareKeys, keyInRange, objectPrefix, objectsRange } from "./key-range.js";

// Cursor layout, version 1 (all integers big-endian):
//
//   [0]        version        0x01
//   [1]        kind           0x01 = entry cursor (ListValues), 0x02 = list cursor (ListObjects)
//   [2..6)     binding tag    FNV-1a 32 of (kind, binding bytes): the object prefix
//                             `<id> 00` for entry cursors, the id prefix's UTF-8 for lists
//   [6..n-4)   payload        entry cursor: the last key without its `<id> 00` prefix
//                             list cursor: the whole last key
//   [n-4..n)   check          FNV-1a 32 (other seed) of bytes [0..n-4)
//
// FNV-1a maps each step bijectively, so any single changed byte always changes the check;
// other damage slips through with probability 2^-32. Cursors are not secret and need not
// be: a forged cursor can only move a listing within the object or listing it is bound to.

const VERSION = 0x01;
const KIND_ENTRIES = 0x01;
const KIND_LIST = 0x02;
const HEADER = 6;
const CHECK = 4;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const CHECK_SEED = 0x6f64676d; // "odgm"

function fnv1a(seed: number, bytes: Uint8Array, start: number, end: number): number {
  let h = seed;
  for (let i = start; i < end; i++) {
    h ^= bytes[i] as number;
    h = Math.imul(h, FNV_PRIME);
  }
  return h >>> 0;
}

function bindingTag(kind: number, binding: Uint8Array): number {
  return fnv1a(Math.imul(FNV_OFFSET ^ kind, FNV_PRIME), binding, 0, binding.length);
}

function writeU32(out: Uint8Array, pos: number, v: number): void {
  out[pos] = v >>> 24;
  out[pos + 1] = (v >>> 16) & 0xff;
  out[pos + 2] = (v >>> 8) & 0xff;
  out[pos + 3] = v & 0xff;
}

function readU32(bytes: Uint8Array, pos: number): number {
  return (
    (((bytes[pos] as number) << 24) |
      ((bytes[pos + 1] as number) << 16) |
      ((bytes[pos + 2] as number) << 8) |
      (bytes[pos + 3] as number)) >>>
    0
  );
}

function seal(kind: number, binding: Uint8Array, payload: Uint8Array): Uint8Array {
  const out = alloc(HEADER + payload.length + CHECK);
  out[0] = VERSION;
  out[1] = kind;
  writeU32(out, 2, bindingTag(kind, binding));
  out.set(payload, HEADER);
  const end = HEADER + payload.length;
  writeU32(out, end, fnv1a(CHECK_SEED, out, 0, end));
  return out;
}

/** Checks integrity, version, kind and binding; returns the payload view. */
function open(kind: number, binding: Uint8Array, cursor: Uint8Array): Uint8Array {
  if (!(cursor instanceof Uint8Array)) {
    throw new KeyError("invalid_argument", "cursor must be a Uint8Array");
  }
  const end = cursor.length - CHECK;
  if (end <= HEADER) throw new KeyError("bad_cursor", `cursor too short (${cursor.length} bytes)`);
  if (readU32(cursor, end) !== fnv1a(CHECK_SEED, cursor, 0, end)) {
    throw new KeyError("bad_cursor", "cursor is damaged (checksum mismatch)");
  }
  if (cursor[0] !== VERSION) {
    throw new KeyError("bad_cursor", `unsupported cursor version ${String(cursor[0])}`);
  }
  const actualKind = cursor[1];
  if (actualKind !== KIND_ENTRIES && actualKind !== KIND_LIST) {
    throw new KeyError("bad_cursor", `unknown cursor kind ${String(actualKind)}`);
  }
  if (actualKind !== kind) {
    throw new KeyError(
      "foreign_cursor",
      kind === KIND_ENTRIES
        ? "an object-listing cursor was given where an entry cursor is expected"
        : "an entry cursor was given where an object-listing cursor is expected",
    );
  }
  if (readU32(cursor, 2) !== bindingTag(kind, binding)) {
    throw new KeyError(
      "foreign_cursor",
      kind === KIND_ENTRIES
        ? "cursor belongs to another object"
        : "cursor belongs to a listing with another id prefix",
    );
  }
  return cursor.subarray(HEADER, end);
}

function validatePayloadKey(key: Uint8Array): void {
  try {
    decodeKey(key);
  } catch (cause) {
    throw new KeyError("bad_cursor", "cursor does not hold a valid key", { cause });
  }
}

/**
 * An opaque cursor for resuming a listing of one object's records (ListValues) after
 * `lastKey`, the storage key of the last record returned.
 *
 * The cursor is versioned, bound to the object (a hash of `<id> 00`) and checksummed;
 * it carries `lastKey` without the object prefix, so its size does not grow with the id.
 *
 * @param id - the object id the listing is over.
 * @param lastKey - a key of that object (`out_of_range` otherwise).
 * @example
 * ```ts
 * const last = encodeEntryKey("user-123", { str: "name" });
 * const cursor = encodeCursor("user-123", last);
 * decodeCursor("user-123", cursor); // equals `last`
 * ```
 */
export function encodeCursor(id: string, lastKey: Uint8Array): Uint8Array {
  const prefix = objectPrefix(id);
  if (!(lastKey instanceof Uint8Array)) {
    throw new KeyError("invalid_argument", "lastKey must be a Uint8Array");
  }
  const p = prefix.length;
  if (lastKey.length <= p || compareKeys(lastKey.subarray(0, p), prefix) !== 0) {
    throw new KeyError("out_of_range", `lastKey is not a key of object ${JSON.stringify(id)}`);
  }
  decodeKey(lastKey);
  return seal(KIND_ENTRIES, prefix, lastKey.subarray(p));
}

/**
 * Validates a cursor made by {@link encodeCursor} for the object `id` and returns its last
 * key (a complete storage key of that object; resume strictly after it, e.g. with
 * {@link rangesAfter}).
 *
 * Throws `foreign_cursor` for a cursor of another object (or a list cursor), `bad_cursor`
 * for a damaged, truncated or unknown-version one — never anything but a `KeyError`.
 */
export function decodeCursor(id: string, cursor: Uint8Array): Uint8Array {
  const prefix = objectPrefix(id);
  const suffix = open(KIND_ENTRIES, prefix, cursor);
  const key = alloc(prefix.length + suffix.length);
  key.set(prefix);
  key.set(suffix, prefix.length);
  validatePayloadKey(key);
  return key;
}

function listBinding(idPrefix: string | undefined): Uint8Array {
  if (idPrefix === undefined || idPrefix === "") return new Uint8Array(0);
  return objectsRange({ idPrefix }).gte;
}

/**
 * An opaque cursor for resuming an object listing (ListObjects) after `lastKey`, the key
 * (normally the metadata key) of the last object returned. Bound to the listing's id
 * prefix (`undefined` and `""` are the same listing: every object).
 *
 * Resume at {@link afterObject}`(lastKey)` to skip the rest of that object.
 *
 * @param idPrefix - the listing's `object_id_prefix`.
 * @param lastKey - an object key inside `objectsRange({ idPrefix })` (`out_of_range`
 *   otherwise).
 */
export function encodeListCursor(idPrefix: string | undefined, lastKey: Uint8Array): Uint8Array {
  const binding = listBinding(idPrefix);
  if (!(lastKey instanceof Uint8Array)) {
    throw new KeyError("invalid_argument", "lastKey must be a Uint8Array");
  }
  const range = objectsRange(idPrefix === undefined ? undefined : { idPrefix });
  if (!keyInRange(lastKey, range)) {
    throw new KeyError("out_of_range", "lastKey is outside the listing's id prefix");
  }
  decodeKey(lastKey);
  return seal(KIND_LIST, binding, lastKey);
}

/**
 * Validates a cursor made by {@link encodeListCursor} for the same `idPrefix` and returns
 * its last key. `foreign_cursor` for another listing's (or an entry) cursor, `bad_cursor`
 * for a damaged one.
 */
export function decodeListCursor(idPrefix: string | undefined, cursor: Uint8Array): Uint8Array {
  const binding = listBinding(idPrefix);
  const payload = open(KIND_LIST, binding, cursor);
  const range = objectsRange(idPrefix === undefined ? undefined : { idPrefix });
  if (!keyInRange(payload, range)) {
    throw new KeyError("bad_cursor", "cursor key is outside the listing's id prefix");
  }
  validatePayloadKey(payload);
  return payload.slice();
}
