/**
 * The closed set of reasons a key, range or cursor operation fails.
 *
 * - `truncated` — the bytes end before the layout says they may (no id terminator, no
 *   record type, a short numeric key, a string key shorter than its length prefix, an
 *   unfinished varint, a legacy key shorter than 8 bytes).
 * - `bad_varint` — a varint that is non-canonical (a redundant trailing `0x00` group),
 *   longer than 8 bytes, or above `Number.MAX_SAFE_INTEGER`.
 * - `unknown_record` — a record type that is not allocated and has no extension bit (0x80).
 * - `invalid_utf8` — an id or string entry key that is not well-formed UTF-8 (bytes), or a
 *   JavaScript string with a lone surrogate (which has no UTF-8 form).
 * - `trailing_bytes` — bytes after a complete fixed-layout record.
 * - `nul_in_id` — an object id (or id prefix) containing U+0000, which terminates ids.
 * - `empty_id` — an empty object id; keys starting with `0x00` belong to system records.
 * - `foreign_cursor` — a well-formed cursor issued for another object or another listing.
 * - `bad_cursor` — a cursor that is damaged, truncated or of an unknown version.
 * - `out_of_range` — a number outside what the layout can hold (u32 entry key, u64 legacy
 *   id, safe-integer varint), or a key outside the object/listing a cursor is bound to.
 * - `invalid_argument` — a value of the wrong JavaScript type (e.g. a number where a
 *   string id is expected), only reachable from untyped callers.
 * - `unknown` — anything else, wrapped by {@link KeyError.from}.
 */
export type KeyErrorCode =
  | "truncated"
  | "bad_varint"
  | "unknown_record"
  | "invalid_utf8"
  | "trailing_bytes"
  | "nul_in_id"
  | "empty_id"
  | "foreign_cursor"
  | "bad_cursor"
  | "out_of_range"
  | "invalid_argument"
  | "unknown";

const CODES: ReadonlySet<string> = new Set<KeyErrorCode>([
  "truncated",
  "bad_varint",
  "unknown_record",
  "invalid_utf8",
  "trailing_bytes",
  "nul_in_id",
  "empty_id",
  "foreign_cursor",
  "bad_cursor",
  "out_of_range",
  "invalid_argument",
  "unknown",
]);

/**
 * The one error class of `@oprc/granular-key`. Every failure of this package is a
 * `KeyError` with a {@link KeyErrorCode}; its message starts with `[code] `.
 *
 * @example
 * ```ts
 * try {
 *   decodeKey(new Uint8Array([0x61]));
 * } catch (err) {
 *   if (isKeyError(err) && err.code === "truncated") {
 *     // the bytes are not a complete key
 *   }
 * }
 * ```
 */
export class KeyError extends Error {
  /** Why the operation failed. */
  readonly code: KeyErrorCode;
  /** The message without the `[code] ` prefix. */
  readonly rawMessage: string;
  override name = "KeyError";

  /**
   * @param code - why the operation failed.
   * @param message - human-readable detail; the `[code] ` prefix is added here.
   * @param options - `cause`: the underlying error, if any.
   */
  constructor(code: KeyErrorCode, message: string, options?: { cause?: unknown }) {
    super(`[${code}] ${message}`, options?.cause === undefined ? undefined : options);
    this.code = code;
    this.rawMessage = message;
  }

  /**
   * Returns `reason` if it already is a `KeyError`, else wraps it in one with code
   * `unknown` (or `fallbackCode`) and the original as `cause`.
   */
  static from(reason: unknown, fallbackCode: KeyErrorCode = "unknown"): KeyError {
    if (isKeyError(reason)) return reason;
    const message = reason instanceof Error ? reason.message : String(reason);
    return new KeyError(fallbackCode, message, { cause: reason });
  }
}

/**
 * True when `value` is a {@link KeyError}, checked by `name` and `code` so that it also
 * holds across duplicated copies of this package (where `instanceof` fails).
 */
export function isKeyError(value: unknown): value is KeyError {
  if (value instanceof KeyError) return true;
  if (typeof value !== "object" || value === null) return false;
  const v = value as { name?: unknown; code?: unknown };
  return v.name === "KeyError" && typeof v.code === "string" && CODES.has(v.code);
}
