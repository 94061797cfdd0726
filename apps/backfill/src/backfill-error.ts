/**
 * The closed set of failure kinds of `odgm-backfill`.
 *
 * - `invalid_argument`: a flag or option is missing, malformed or contradicts another
 *   (the command line exits with code 2).
 * - `locked`: offline mode found the database held by another process (a running node).
 * - `not_found`: the data directory, the shard or the collection does not exist.
 * - `unavailable`: the node behind `--endpoint` cannot be reached or refused the call.
 * - `io`: storage or the checkpoint file failed.
 * - `aborted`: the run was interrupted (SIGINT/SIGTERM or an aborted signal).
 */
export type BackfillErrorCode =
  | "invalid_argument"
  | "locked"
  | "not_found"
  | "unavailable"
  | "io"
  | "aborted";

const codes: ReadonlySet<string> = new Set<BackfillErrorCode>([
  "invalid_argument",
  "locked",
  "not_found",
  "unavailable",
  "io",
  "aborted",
]);

/**
 * The one error class of `@oprc/backfill`. Its message starts with `[code] `.
 *
 * @example
 * ```ts
 * try {
 *   await runBackfill({ collection: "orders", partition: 0, dataDir: "./data" });
 * } catch (err) {
 *   if (isBackfillError(err, "locked")) console.error("stop the node first");
 * }
 * ```
 */
export class BackfillError extends Error {
  override readonly name = "BackfillError" as const;
  /** What kind of failure this is. */
  readonly code: BackfillErrorCode;

  constructor(code: BackfillErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(
      `[${code}] ${message}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.code = code;
  }

  /**
   * Converts anything thrown into a `BackfillError`: a `BackfillError` is returned as is,
   * anything else becomes a `fallback` (default `io`) error with the original as `cause`.
   */
  static from(reason: unknown, fallback: BackfillErrorCode = "io"): BackfillError {
    if (isBackfillError(reason)) return reason;
    const message = reason instanceof Error ? reason.message : String(reason);
    return new BackfillError(fallback, message, { cause: reason });
  }
}

/**
 * True when `value` is a {@link BackfillError} (checked by name and code, so it works
 * across duplicated copies of this package), optionally of the given `code`.
 */
export function isBackfillError(value: unknown, code?: BackfillErrorCode): value is BackfillError {
  if (typeof value !== "object" || value === null) return false;
  const v = value as { name?: unknown; code?: unknown };
  if (v.name !== "BackfillError" || typeof v.code !== "string" || !codes.has(v.code)) return false;
  return code === undefined || v.code === code;
}
