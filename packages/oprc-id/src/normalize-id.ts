import { IdError } from "./id-error.js";

/** Default maximum length of an object id or entry key, in UTF-8 bytes (`ODGM_MAX_STRING_ID_LEN`). */
export const DEFAULT_MAX_ID_LENGTH = 160;

/** Options shared by every function that normalizes an object id or entry key. */
export interface NormalizeOptions {
  /**
   * Maximum length in UTF-8 bytes, a positive integer. Default {@link DEFAULT_MAX_ID_LENGTH}
   * (160), the seed's value for `ODGM_MAX_STRING_ID_LEN`: it keeps ids under common index and
   * path limits.
   */
  maxLength?: number;
  /**
   * Unicode mode (`ODGM_STRING_ID_UNICODE=true`). Default `false` (strict): only
   * `[a-z0-9._:-]` after lowercasing ASCII. When `true`: NFC-normalize, lowercase ASCII A–Z
   * only, and reject control characters (C0, C1, DEL), whitespace, `/`, NUL and unpaired
   * surrogates; every other character is allowed.
   */
  unicode?: boolean;
}

// Character classes for ASCII code units: 0 = rejected, 1 = kept, 2 = uppercase (lowercased).
const STRICT_CLASS: Uint8Array = new Uint8Array(128);
const UNICODE_CLASS: Uint8Array = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const upper = c >= 65 && c <= 90;
  const strictOk =
    (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 46 || c === 95 || c === 58 || c === 45;
  STRICT_CLASS[c] = upper ? 2 : strictOk ? 1 : 0;
  // C0 controls (incl. NUL and the ASCII whitespace 0x09-0x0D), space, "/" and DEL are rejected.
  UNICODE_CLASS[c] = upper ? 2 : c <= 0x20 || c === 0x2f || c === 0x7f ? 0 : 1;
}

const ASCII_UPPER_RUN = /[A-Z]+/g;
const toLower = (run: string): string => run.toLowerCase();

type What = "object id" | "entry key";

/**
 * Normalizes an object id to the form storage sees: lowercase ASCII A–Z, then check the
 * length (UTF-8 bytes ≤ `maxLength`) and the characters (strict: `[a-z0-9._:-]`; see
 * {@link NormalizeOptions.unicode} for unicode mode). Returns the input string itself when it
 * is already normalized.
 *
 * Errors are checked in this order: `empty`, `too_long`, `invalid_char`.
 *
 * @throws {IdError} `empty`, `too_long` (names the byte length and the maximum) or
 *   `invalid_char` (names the character, its code point and its index in the normalized
 *   string); `out_of_range` for an invalid `maxLength`.
 *
 * @example
 * ```ts
 * normalizeObjectId("User-123"); // "user-123"
 * normalizeObjectId("Café", { unicode: true }); // "café" (NFC)
 * ```
 */
export function normalizeObjectId(raw: string, options?: NormalizeOptions): string {
  return normalize(raw, options, "object id");
}

/**
 * Normalizes a string entry key; the rules and the maximum are those of
 * {@link normalizeObjectId}. Use `canonicalEntryKey` to also fold canonical u32 decimals
 * (`"42"`) onto numeric keys.
 *
 * @throws {IdError} `empty`, `too_long`, `invalid_char`, `out_of_range` (as {@link normalizeObjectId}).
 */
export function normalizeEntryKey(raw: string, options?: NormalizeOptions): string {
  return normalize(raw, options, "entry key");
}

function normalize(raw: string, options: NormalizeOptions | undefined, what: What): string {
  if (typeof raw !== "string") {
    throw new IdError("invalid_char", `${what} must be a string, got ${typeof raw}`);
  }
  let max = DEFAULT_MAX_ID_LENGTH;
  if (options !== undefined) {
    if (options.maxLength !== undefined) max = checkMaxLength(options.maxLength);
    if (options.unicode === true) return normalizeUnicode(raw, max, what);
  }
  return normalizeStrict(raw, max, what);
}

function normalizeStrict(raw: string, max: number, what: What): string {
  const n = raw.length;
  if (n === 0) throw emptyError(what);
  // UTF-8 byte length ≥ UTF-16 length, so this is too long whatever the characters are.
  if (n > max) throw tooLongError(what, Buffer.byteLength(raw, "utf8"), max);
  let upper = false;
  let i = 0;
  for (; i < n; i++) {
    const c = raw.charCodeAt(i);
    const k = c < 128 ? (STRICT_CLASS[c] ?? 0) : 0;
    if (k !== 1) {
      if (k === 2) upper = true;
      else break; // keeps the throw out of the loop, which V8 compiles tighter
    }
  }
  if (i < n) throw strictInvalid(raw, i, max, what);
  // Safe: every character is ASCII here, and toLowerCase only changes A-Z in ASCII.
  return upper ? raw.toLowerCase() : raw;
}

function strictInvalid(raw: string, index: number, max: number, what: What): IdError {
  const bytes = Buffer.byteLength(raw, "utf8");
  if (bytes > max) return tooLongError(what, bytes, max);
  return invalidCharError(what, raw, index, "; allowed: a-z 0-9 . _ : -");
}

function normalizeUnicode(raw: string, max: number, what: What): string {
  const n = raw.length;
  if (n === 0) throw emptyError(what);
  // Fast path: pure ASCII is already NFC and its byte length is its length.
  let upper = false;
  let i = 0;
  for (; i < n; i++) {
    const c = raw.charCodeAt(i);
    if (c >= 128) break;
    const k = UNICODE_CLASS[c] ?? 0;
    if (k !== 1) {
      if (k === 2) upper = true;
      else break; // the general path decides between too_long and invalid_char
    }
  }
  if (i === n) {
    if (n > max) throw tooLongError(what, n, max);
    return upper ? raw.toLowerCase() : raw;
  }
  return normalizeUnicodeSlow(raw, max, what);
}

function normalizeUnicodeSlow(raw: string, max: number, what: What): string {
  let s = raw.normalize("NFC");
  const lowered = s.replace(ASCII_UPPER_RUN, toLower);
  // Lowercasing can enable a composition NFC did not make (e.g. "W\u030A" → "w\u030A" → "ẘ"),
  // so normalize again to keep the output NFC and the function idempotent. A second NFC only
  // composes into non-ASCII characters, so it cannot bring back an ASCII capital.
  if (lowered !== s) s = lowered.normalize("NFC");
  const n = s.length;
  let bytes = 0;
  let bad = -1;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 128) {
      bytes += 1;
      if (bad < 0 && UNICODE_CLASS[c] !== 1) bad = i;
    } else if (c < 0x800) {
      bytes += 2;
      if (bad < 0 && (c <= 0x9f || c === 0xa0)) bad = i; // C1 controls, NO-BREAK SPACE
    } else if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < n ? s.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4;
        i++;
      } else {
        bytes += 3; // what an encoder would write for the replacement character
        if (bad < 0) bad = i;
      }
    } else {
      bytes += 3;
      if (bad < 0 && ((c >= 0xdc00 && c <= 0xdfff) || isNonAsciiSpace(c))) bad = i;
    }
  }
  if (bytes > max) throw tooLongError(what, bytes, max);
  if (bad >= 0) {
    throw invalidCharError(
      what,
      s,
      bad,
      "; control characters, whitespace, / and unpaired surrogates are not allowed",
    );
  }
  return s;
}

// Unicode White_Space characters at or above U+0800 (the lower ones are handled inline).
function isNonAsciiSpace(c: number): boolean {
  return (
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000
  );
}

function checkMaxLength(max: number): number {
  if (!Number.isSafeInteger(max) || max < 1) {
    throw new IdError("out_of_range", `maxLength must be a positive integer, got ${String(max)}`);
  }
  return max;
}

function emptyError(what: What): IdError {
  return new IdError("empty", `${what} is empty`);
}

function tooLongError(what: What, bytes: number, max: number): IdError {
  return new IdError("too_long", `${what} is ${bytes} bytes long; the maximum is ${max}`);
}

function invalidCharError(what: What, s: string, index: number, hint: string): IdError {
  const cp = s.codePointAt(index) ?? 0;
  const ch = cp > 0xffff ? String.fromCodePoint(cp) : s.charAt(index);
  const hex = cp.toString(16).toUpperCase().padStart(4, "0");
  return new IdError(
    "invalid_char",
    `${what} has invalid character ${JSON.stringify(ch)} (U+${hex}) at index ${index}${hint}`,
  );
}
