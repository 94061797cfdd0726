import { KeyError } from "./key-error.js";
import { RecordType } from "./record-type.js";
import { encodeIdKey, strByteLength, writeStr } from "./utf8.js";
import { varintLength, writeVarint } from "./varint.js";

/**
 * An entry key as the byte layout sees it: a u32 (`numeric`) or a string (`str`).
 *
 * Deciding which one a user-supplied key is (`"42"` is numeric 42, `"007"` is a string)
 * is `@oprc/oprc-id`'s job; this package encodes what it is given.
 */
export type EntryKeyRef = { readonly numeric: number } | { readonly str: string };

/** Largest numeric entry key (u32). */
export const MAX_NUMERIC_ENTRY_KEY = 0xffff_ffff;

/**
 * Internal: encodes `<id> 00 <type>`.
 * @internal
 */
export function encodeRecordKey(id: string, type: number): Uint8Array {
  const out = encodeIdKey(id, 1);
  out[out.length - 1] = type;
  return out;
}

/**
 * The key of an object's metadata record: `<id> 00 00`.
 *
 * `id` is an already-normalized object id (numeric ids as unpadded decimal, e.g. `"42"`).
 * Only what the layout needs is checked: non-empty (`empty_id`), no U+0000 (`nul_in_id`),
 * no lone surrogate (`invalid_utf8`).
 *
 * The returned array may be a view on a shared 16 KiB slab (as Node's `Buffer`s are);
 * it is never reused, but copy it with `.slice()` before transferring its `.buffer`.
 *
 * @example
 * ```ts
 * encodeMetadataKey("user-123"); // 75 73 65 72 2d 31 32 33 00 00
 * ```
 */
export function encodeMetadataKey(id: string): Uint8Array {
  return encodeRecordKey(id, RecordType.Metadata);
}

/** The key of an object's event config record (`ObjectEvent`): `<id> 00 01`. */
export function encodeEventConfigKey(id: string): Uint8Array {
  return encodeRecordKey(id, RecordType.EventConfig);
}

/**
 * The key of one entry of an object:
 * `<id> 00 10 <u32 big-endian>` for `{ numeric }`, or
 * `<id> 00 11 <LEB128 byte length> <utf8>` for `{ str }`.
 *
 * A numeric key must be an integer in 0..4294967295 (`out_of_range`). A string key may
 * be any well-formed string, including `""` (the layout allows it; normalization decides
 * whether it is allowed).
 *
 * @example
 * ```ts
 * encodeEntryKey("user-123", { numeric: 42 }); // … 00 10 00 00 00 2a
 * encodeEntryKey("user-123", { str: "name" }); // … 00 11 04 6e 61 6d 65
 * ```
 */
export function encodeEntryKey(id: string, key: EntryKeyRef): Uint8Array {
  if (typeof key !== "object" || key === null) {
    throw new KeyError("invalid_argument", "entry key must be { numeric } or { str }");
  }
  const numeric = (key as { numeric?: unknown }).numeric;
  const str = (key as { str?: unknown }).str;
  if (numeric !== undefined && str === undefined) {
    if (
      typeof numeric !== "number" ||
      !Number.isInteger(numeric) ||
      numeric < 0 ||
      numeric > MAX_NUMERIC_ENTRY_KEY
    ) {
      throw new KeyError(
        "out_of_range",
        `numeric entry key must be an integer in 0..4294967295, got ${String(numeric)}`,
      );
    }
    const out = encodeIdKey(id, 5);
    const p = out.length - 5;
    out[p] = RecordType.NumericEntry;
    out[p + 1] = numeric >>> 24;
    out[p + 2] = (numeric >>> 16) & 0xff;
    out[p + 3] = (numeric >>> 8) & 0xff;
    out[p + 4] = numeric & 0xff;
    return out;
  }
  if (str !== undefined && numeric === undefined) {
    const k = strByteLength(str as string, "string entry key");
    const v = varintLength(k);
    const out = encodeIdKey(id, 1 + v + k);
    const p = out.length - 1 - v - k;
    out[p] = RecordType.StringEntry;
    writeStr(str as string, out, writeVarint(out, p + 1, k), k);
    return out;
  }
  throw new KeyError("invalid_argument", "entry key must have exactly one of numeric or str");
}
