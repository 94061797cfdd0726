/**
 * What went wrong, as a closed set.
 * - `unavailable`: the `@nxtedition/rocksdb` binding is not installed or does not load.
 * - `locked`: another process (or another open in this process) holds the database's lock.
 * - `read_only`: the database directory is on a read-only file system.
 * - `permission_denied`: the directory cannot be read or written by this user.
 * - `io`: any other storage failure (a failed write, a full disk, a corrupt file).
 * - `closed`: the database or writer was closed.
 */
export type RocksErrorCode =
  | "unavailable"
  | "locked"
  | "read_only"
  | "permission_denied"
  | "io"
  | "closed";

const CODES: ReadonlySet<string> = new Set<RocksErrorCode>([
  "unavailable",
  "locked",
  "read_only",
  "permission_denied",
  "io",
  "closed",
]);

/**
 * The one error class of `@oprc/rocksdb`. Its message starts with `[code] `.
 *
 * @example
 * ```ts
 * try { await openRocksDatabase({ location, columns: ["data"] }) }
 * catch (err) { if (isRocksError(err, "locked")) console.error("another process has it") }
 * ```
 */
export class RocksError extends Error {
  override readonly name = "RocksError" as const;
  readonly code: RocksErrorCode;
  constructor(code: RocksErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(
      `[${code}] ${message}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.code = code;
  }

  /** `reason` when it is a RocksError, else one with `code` wrapping it. */
  static from(reason: unknown, code: RocksErrorCode = "io"): RocksError {
    if (isRocksError(reason)) return reason;
    const message = reason instanceof Error ? reason.message : String(reason);
    return new RocksError(code, message, { cause: reason });
  }
}

/** True for a {@link RocksError} (checked by name and code), optionally of `code`. */
export function isRocksError(value: unknown, code?: RocksErrorCode): value is RocksError {
  if (typeof value !== "object" || value === null) return false;
  const v = value as { name?: unknown; code?: unknown };
  if (v.name !== "RocksError" || typeof v.code !== "string" || !CODES.has(v.code)) return false;
  return code === undefined || v.code === code;
}
