import { decodeKey, type EntryKeyRef, encodeEntryKey, isKeyError } from "@oprc/granular-key";
import { isCanonicalU32 } from "@oprc/oprc-id";
import { compareBytes, toHex } from "./bytes.js";
import { StoreError } from "./store-error.js";

/** An entry key resolved to its storage layout. */
export interface KeyInfo {
  /** Canonical key string; numeric keys in decimal (`"42"`). */
  readonly key: string;
  /** True for a canonical u32 key (`data_trigger`), false for a string key. */
  readonly numeric: boolean;
  /** The key as the layout addresses it. */
  readonly ref: EntryKeyRef;
  /** The entry's storage key inside the shard's `objects` keyspace. */
  readonly storageKey: Uint8Array;
}

/** Runs `fn`, turning key-layout errors into `invalid_argument` store errors. */
export function keyArg<T>(fn: () => T, what: string): T {
  try {
    return fn();
  } catch (err) {
    if (isKeyError(err))
      throw new StoreError("invalid_argument", `${what}: ${err.message}`, { cause: err });
    throw err;
  }
}

/** Throws `invalid_argument` unless `id` is a non-empty string. */
export function checkId(id: unknown): asserts id is string {
  if (typeof id !== "string" || id.length === 0) {
    throw new StoreError("invalid_argument", "object id must be a non-empty normalized string");
  }
}

/** Resolves the canonical entry key `key` of object `id`. */
export function keyInfo(id: string, key: string): KeyInfo {
  if (typeof key !== "string" || key.length === 0) {
    throw new StoreError("invalid_argument", "entry key must be a non-empty canonical string");
  }
  const numeric = isCanonicalU32(key);
  const ref: EntryKeyRef = numeric ? { numeric: Number(key) } : { str: key };
  return { key, numeric, ref, storageKey: keyArg(() => encodeEntryKey(id, ref), "entry key") };
}

/** Decodes any stored key of the `objects` keyspace, or throws `corrupt_record`. */
export function decodeStoredKey(key: Uint8Array): ReturnType<typeof decodeKey> {
  try {
    return decodeKey(key);
  } catch (err) {
    throw new StoreError("corrupt_record", `key ${toHex(key)} does not decode`, {
      cause: err,
      key: key.slice(),
    });
  }
}

/** Decodes a stored key that must be an entry key of `id`. */
export function decodeEntryKey(id: string, storageKey: Uint8Array): KeyInfo {
  const decoded = decodeStoredKey(storageKey);
  if (decoded.id !== id) {
    throw new StoreError("corrupt_record", `key ${toHex(storageKey)} is outside object ${id}`, {
      key: storageKey.slice(),
    });
  }
  if (decoded.record === "numeric_entry") {
    return { key: String(decoded.key.numeric), numeric: true, ref: decoded.key, storageKey };
  }
  if (decoded.record === "string_entry") {
    return { key: decoded.key.str, numeric: false, ref: decoded.key, storageKey };
  }
  throw new StoreError("corrupt_record", `key ${toHex(storageKey)} is not an entry key`, {
    key: storageKey.slice(),
  });
}

/** Storage order of entries: numeric ascending, then strings by (UTF-8 length, bytes). */
export function compareEntryKeys(a: KeyInfo, b: KeyInfo): number {
  return compareBytes(a.storageKey, b.storageKey);
}
