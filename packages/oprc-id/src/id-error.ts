/**
 * The closed set of error codes `@oprc/oprc-id` raises.
 *
 * - `empty`: an id or entry key is the empty string.
 * - `too_long`: an id or entry key is longer (in UTF-8 bytes) than the configured maximum.
 * - `invalid_char`: an id or entry key contains a character the active mode forbids.
 * - `both_provided`: a numeric and a string form were given where exactly one is allowed.
 * - `none_provided`: neither a numeric nor a string form was given (numeric 0 counts as absent).
 * - `out_of_range`: a number is negative, not an integer or outside its range (u64 ids, u32 keys,
 *   TID fields, options).
 * - `invalid_tid`: a string is not a well-formed TID.
 * - `invalid_record_key`: a string is not a valid record key of the requested type.
 */
export type IdErrorCode =
  | "empty"
  | "too_long"
  | "invalid_char"
  | "both_provided"
  | "none_provided"
  | "out_of_range"
  | "invalid_tid"
  | "invalid_record_key";

const CODES: ReadonlySet<string> = new Set<IdErrorCode>([
  "empty",
  "too_long",
  "invalid_char",
  "both_provided",
  "none_provided",
  "out_of_range",
  "invalid_tid",
  "invalid_record_key",
]);

/** Options for {@link IdError}. */
export interface IdErrorOptions {
  /** The underlying error, if any. */
  cause?: unknown;
}

/**
 * The one error class of `@oprc/oprc-id`. Messages start with `[code] ` and name what was
 * wrong: the character and its index for `invalid_char`, the byte length and the maximum for
 * `too_long`.
 *
 * @example
 * ```ts
 * try {
 *   normalizeObjectId("user/1");
 * } catch (err) {
 *   if (isIdError(err) && err.code === "invalid_char") console.error(err.message);
 *   // [invalid_char] object id has invalid character "/" (U+002F) at index 4; allowed: a-z 0-9 . _ : -
 * }
 * ```
 */
export class IdError extends Error {
  override name = "IdError" as const;
  /** One of {@link IdErrorCode}. */
  readonly code: IdErrorCode;
  /** The message without the `[code] ` prefix. */
  readonly rawMessage: string;

  constructor(code: IdErrorCode, message: string, options: IdErrorOptions = {}) {
    super(
      `[${code}] ${message}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.code = code;
    this.rawMessage = message;
  }

  /**
   * Wraps any thrown value: an `IdError` is returned as is, anything else becomes an `IdError`
   * with `code` (default `invalid_char`: input that could not be read as an id) and the original
   * as `cause`.
   */
  static from(reason: unknown, code: IdErrorCode = "invalid_char"): IdError {
    if (isIdError(reason)) return reason;
    const message = reason instanceof Error ? reason.message : String(reason);
    return new IdError(code, message, { cause: reason });
  }
}

/** True when `value` is an {@link IdError} (checked by name and code, not `instanceof` alone). */
export function isIdError(value: unknown): value is IdError {
  if (value instanceof IdError) return true;
  if (typeof value !== "object" || value === null) return false;
  const v = value as { name?: unknown; code?: unknown };
  return v.name === "IdError" && typeof v.code === "string" && CODES.has(v.code);
}
