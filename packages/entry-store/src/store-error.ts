/**
 * The closed set of failure kinds an entry store reports.
 *
 * - `not_found`: the object, shard or record asked for does not exist.
 * - `version_mismatch`: compare-and-swap failed; `expected` and `actual` are set.
 * - `too_large`: the object has more entries than the reconstruction ceiling allows.
 * - `invalid_cursor`: a list cursor is corrupted or belongs to another object/listing.
 * - `invalid_argument`: the caller passed something the store cannot accept.
 * - `corrupt_record`: bytes on disk do not decode; `key` names the record.
 * - `closed`: the store or engine was closed.
 * - `locked`: the database (or shard) is held by another process or store.
 * - `io`: the storage engine failed.
 * - `write_failed`: the engine refused a write (a full disk, an I/O error); RocksDB then
 *   refuses every write until the database is reopened.
 * - `unavailable`: an optional component (the RocksDB binding) is not installed.
 */
export type StoreErrorCode =
  | "not_found"
  | "version_mismatch"
  | "too_large"
  | "invalid_cursor"
  | "invalid_argument"
  | "corrupt_record"
  | "closed"
  | "locked"
  | "io"
  | "write_failed"
  | "unavailable";

const codes: ReadonlySet<string> = new Set<StoreErrorCode>([
  "not_found",
  "version_mismatch",
  "too_large",
  "invalid_cursor",
  "invalid_argument",
  "corrupt_record",
  "closed",
  "locked",
  "io",
  "write_failed",
  "unavailable",
]);

/** Extra, code-specific details of a {@link StoreError}. */
export interface StoreErrorDetails {
  /** The underlying error, if any. */
  cause?: unknown;
  /** `version_mismatch`: the version the caller expected. */
  expected?: bigint;
  /** `version_mismatch`: the object's current version (0 for a missing object). */
  actual?: bigint;
  /** `corrupt_record`: the storage key of the record that failed to decode. */
  key?: Uint8Array;
}

/**
 * The one error class of `@oprc/entry-store`. Every failure of a store operation is a
 * `StoreError` with a {@link StoreErrorCode}; its message starts with `[code] `.
 *
 * @example
 * ```ts
 * try {
 *   await store.setEntry("user-1", "name", value, { expectedVersion: 3n });
 * } catch (err) {
 *   if (isStoreError(err, "version_mismatch")) console.log(err.expected, err.actual);
 * }
 * ```
 */
export class StoreError extends Error {
  override readonly name = "StoreError" as const;
  /** What kind of failure this is. */
  readonly code: StoreErrorCode;
  /** `version_mismatch`: the expected version. */
  readonly expected: bigint | undefined;
  /** `version_mismatch`: the actual version. */
  readonly actual: bigint | undefined;
  /** `corrupt_record`: the key of the undecodable record. */
  readonly key: Uint8Array | undefined;

  constructor(code: StoreErrorCode, message: string, details: StoreErrorDetails = {}) {
    super(
      // One prefix: a wrapped error's own `[code] ` prefixes are dropped, not stacked.
      `[${code}] ${message.replace(/^(\[[a-z_]+\] )+/, "")}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.code = code;
    this.expected = details.expected;
    this.actual = details.actual;
    this.key = details.key;
  }

  /**
   * Converts anything thrown into a `StoreError`: a `StoreError` is returned as is, any
   * other value becomes an `io` error (or `fallback`) with the original as `cause`.
   */
  static from(reason: unknown, fallback: StoreErrorCode = "io"): StoreError {
    if (isStoreError(reason)) return reason;
    const message = reason instanceof Error ? reason.message : String(reason);
    return new StoreError(fallback, message, { cause: reason });
  }
}

/**
 * True when `value` is a {@link StoreError} (checked by name and code, so it works across
 * duplicated copies of this package), optionally of the given `code`.
 */
export function isStoreError(value: unknown, code?: StoreErrorCode): value is StoreError {
  if (typeof value !== "object" || value === null) return false;
  const v = value as { name?: unknown; code?: unknown };
  if (v.name !== "StoreError" || typeof v.code !== "string" || !codes.has(v.code)) return false;
  return code === undefined || v.code === code;
}
