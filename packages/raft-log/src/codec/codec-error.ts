/**
 * Closed set of {@link CodecError} codes.
 * - `truncated`: a length or field runs past the end of the input.
 * - `bad_varint`: a varint is longer than allowed or exceeds its integer range.
 * - `non_minimal_varint`: a varint has redundant trailing zero groups.
 * - `trailing_bytes`: bytes remain after a complete value.
 * - `unknown_version`: the format header byte names a version this code does not know.
 * - `unknown_tag`: an operation tag, identity variant or key variant is not defined.
 * - `unknown_flags`: a flags byte has bits set that the operation does not define.
 * - `unsorted_keys`: map keys or delete keys are not in strictly increasing byte order.
 * - `duplicate_key`: a key appears twice (or in both the sets and deletes of a batch).
 * - `invalid_utf8`: a string is not well-formed UTF-8 (or, when encoding, not well-formed UTF-16).
 * - `non_canonical`: a value has another, canonical encoding (e.g. a canonical decimal
 *   id under the string variant) or breaks a structural rule (empty id, NUL in an id).
 * - `invalid_value`: a value handed to an encoder is out of range or of the wrong shape.
 * - `invalid_history`: a text history (EDN) cannot be parsed or paired.
 */
export type CodecErrorCode =
  | "truncated"
  | "bad_varint"
  | "non_minimal_varint"
  | "trailing_bytes"
  | "unknown_version"
  | "unknown_tag"
  | "unknown_flags"
  | "unsorted_keys"
  | "duplicate_key"
  | "invalid_utf8"
  | "non_canonical"
  | "invalid_value"
  | "invalid_history";

const CODES: ReadonlySet<string> = new Set<CodecErrorCode>([
  "truncated",
  "bad_varint",
  "non_minimal_varint",
  "trailing_bytes",
  "unknown_version",
  "unknown_tag",
  "unknown_flags",
  "unsorted_keys",
  "duplicate_key",
  "invalid_utf8",
  "non_canonical",
  "invalid_value",
  "invalid_history",
]);

/**
 * The one error the codecs of this package throw: decoding bytes (log entries) or text
 * (histories) that are malformed or not in canonical form, or encoding a value that has
 * no valid encoding. The message starts with `[code] `.
 *
 * @example
 * ```ts
 * try { decodeOdgmOp(bytes) } catch (e) { if (isCodecError(e)) console.log(e.code, e.offset) }
 * ```
 */
export class CodecError extends Error {
  override readonly name = "CodecError";
  /** What went wrong (closed set). */
  readonly code: CodecErrorCode;
  /** Byte offset in the input where decoding failed, when known. */
  readonly offset: number | undefined;

  constructor(
    code: CodecErrorCode,
    message: string,
    options: { cause?: unknown; offset?: number } = {},
  ) {
    super(
      `[${code}] ${message}${options.offset === undefined ? "" : ` (at byte ${options.offset})`}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.code = code;
    this.offset = options.offset;
  }

  /** Wraps anything thrown into a `CodecError` (returned unchanged when it already is one). */
  static from(reason: unknown, code: CodecErrorCode = "invalid_value"): CodecError {
    if (isCodecError(reason)) return reason;
    const message = reason instanceof Error ? reason.message : String(reason);
    return new CodecError(code, message, { cause: reason });
  }
}

/** True for a {@link CodecError}, also across module copies (checks `name` and `code`). */
export function isCodecError(value: unknown): value is CodecError {
  return (
    value instanceof Error &&
    value.name === "CodecError" &&
    CODES.has((value as { code?: unknown }).code as string)
  );
}
