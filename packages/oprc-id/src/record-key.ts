import { IdError } from "./id-error.js";
import { isValidTid } from "./tid.js";

/**
 * A record-key type (seed 004): `"tid"` (a TID), `"any"` (any valid record key) or
 * `{ literal: v }` (exactly `v`, e.g. `{ literal: "self" }` for `literal:self`).
 */
export type RecordKeyType = "tid" | "any" | { literal: string };

/** Maximum length of a record key, in characters (all ASCII). */
export const RECORD_KEY_MAX_LENGTH = 512;

const ALLOWED: Uint8Array = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const alnum = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
  // . - _ : ~
  ALLOWED[c] = alnum || c === 46 || c === 45 || c === 95 || c === 58 || c === 126 ? 1 : 0;
}

/**
 * True when `s` satisfies the generic record-key syntax: 1–512 characters of
 * `A-Za-z0-9 . - _ : ~`, and neither `.` nor `..`. Record keys are case-sensitive and are not
 * normalized (this is separate from ODGM id normalization, which lowercases).
 */
export function isValidRecordKey(s: string): boolean {
  if (typeof s !== "string") return false;
  const n = s.length;
  if (n === 0 || n > RECORD_KEY_MAX_LENGTH) return false;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || ALLOWED[c] !== 1) return false;
  }
  return !(s === "." || s === "..");
}

/**
 * Checks that `s` is a valid record key of `type` and returns it unchanged.
 *
 * @throws {IdError} `invalid_record_key`, with the reason in the message.
 *
 * @example
 * ```ts
 * validateRecordKey("self", { literal: "self" }); // "self"
 * validateRecordKey("3jzfcijpj2z2a", "tid"); // "3jzfcijpj2z2a"
 * validateRecordKey("alpha/beta", "any"); // throws [invalid_record_key]
 * ```
 */
export function validateRecordKey(s: string, type: RecordKeyType): string {
  if (!isValidRecordKey(s)) throw new IdError("invalid_record_key", describe(s));
  if (type === "any") return s;
  if (type === "tid") {
    if (!isValidTid(s)) {
      throw new IdError("invalid_record_key", `record key ${JSON.stringify(s)} is not a TID`);
    }
    return s;
  }
  if (typeof type === "object" && type !== null && typeof type.literal === "string") {
    if (s !== type.literal) {
      throw new IdError(
        "invalid_record_key",
        `record key ${JSON.stringify(s)} must be the literal ${JSON.stringify(type.literal)}`,
      );
    }
    return s;
  }
  throw new IdError("invalid_record_key", `unknown record key type ${JSON.stringify(type)}`);
}

function describe(s: string): string {
  if (typeof s !== "string") return `record key must be a string, got ${typeof s}`;
  const n = s.length;
  if (n === 0) return "record key is empty";
  if (n > RECORD_KEY_MAX_LENGTH) {
    return `record key is ${n} characters long; the maximum is ${RECORD_KEY_MAX_LENGTH}`;
  }
  if (s === "." || s === "..") return `record key ${JSON.stringify(s)} is not allowed`;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || ALLOWED[c] !== 1) {
      return `record key has invalid character ${JSON.stringify(s.charAt(i))} at index ${i}; allowed: A-Z a-z 0-9 . - _ : ~`;
    }
  }
  return `record key ${JSON.stringify(s)} is invalid`;
}
