import { isCanonicalU32 } from "./canonical-decimal.js";
import { IdError } from "./id-error.js";
import { type NormalizeOptions, normalizeEntryKey } from "./normalize-id.js";

/**
 * An entry key in canonical form. `key` is always the storage string (numeric 42 → `"42"`);
 * a numeric key and the string in its canonical u32 decimal form are the same entry.
 */
export type EntryKey =
  | { kind: "numeric"; key: string; numeric: number }
  | { kind: "string"; key: string };

/** Input of {@link canonicalEntryKey}: the two wire fields `key` and `key_str`. */
export interface EntryKeyInput {
  /** `key` (u32). `0` is a real key, but counts as absent when `keyStr` is given. */
  key?: number;
  /** `key_str`. `""` means absent (the proto3 default). Normalized when present. */
  keyStr?: string;
}

const U32_MAX = 0xffff_ffff;

/**
 * Builds the canonical {@link EntryKey} from the wire fields. A string key is normalized; if
 * the result is a canonical u32 decimal it is the numeric key (`"42"` → 42), otherwise a
 * string key (`"007"` stays a string).
 *
 * @throws {IdError} `both_provided` (a non-zero `key` and a `keyStr`), `none_provided`,
 *   `out_of_range` (`key` not an integer in 0..2^32-1) or a normalization error.
 *
 * @example
 * ```ts
 * canonicalEntryKey({ keyStr: "Email" }); // { kind: "string", key: "email" }
 * canonicalEntryKey({ keyStr: "42" }); // { kind: "numeric", key: "42", numeric: 42 }
 * canonicalEntryKey({ key: 7 }); // { kind: "numeric", key: "7", numeric: 7 }
 * ```
 */
export function canonicalEntryKey(input: EntryKeyInput, options?: NormalizeOptions): EntryKey {
  const { key, keyStr } = input;
  if (
    key !== undefined &&
    (typeof key !== "number" || !Number.isInteger(key) || key < 0 || key > U32_MAX)
  ) {
    throw new IdError(
      "out_of_range",
      `numeric entry key must be an integer in 0..4294967295, got ${String(key)}`,
    );
  }
  if (keyStr !== undefined && keyStr !== "") {
    if (key !== undefined && key !== 0) {
      throw new IdError("both_provided", "give either a numeric or a string entry key, not both");
    }
    const s = normalizeEntryKey(keyStr, options);
    if (isCanonicalU32(s)) return { kind: "numeric", key: s, numeric: Number(s) };
    return { kind: "string", key: s };
  }
  if (key !== undefined) return { kind: "numeric", key: String(key), numeric: key };
  throw new IdError("none_provided", "an entry key is required");
}
