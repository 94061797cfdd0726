/** What went wrong, as a closed set. */
export type OdgmErrorCode =
  /** An `ODGM_*` variable is invalid (`variable` names it). The `odgm` command exits with 2. */
  | "invalid_config"
  /** A collection spec is invalid (name, partition count, shard type, function route). */
  | "invalid_collection"
  /** A collection of that name exists with a different spec. */
  | "collection_exists"
  /** Creating the collection would exceed `ODGM_MAX_PARTITIONS`. */
  | "too_many_partitions"
  /** Asked for something this build does not serve (`raft` shards). */
  | "unsupported"
  /** The data directory is held by another process. */
  | "data_dir_locked";

const CODES: ReadonlySet<string> = new Set<OdgmErrorCode>([
  "invalid_config",
  "invalid_collection",
  "collection_exists",
  "too_many_partitions",
  "unsupported",
  "data_dir_locked",
]);

/** Options of {@link OdgmError}. */
export interface OdgmErrorOptions {
  /** The underlying error. */
  readonly cause?: unknown;
  /** For `invalid_config`: the offending variable. */
  readonly variable?: string;
}

/**
 * The one error class of `@oprc/odgm`. Messages start with `[code] `; configuration errors
 * name their variable (`[invalid_config] ODGM_HTTP_PORT: …`).
 *
 * @example
 * try {
 *   loadConfig(process.env);
 * } catch (err) {
 *   if (isOdgmError(err) && err.code === "invalid_config") console.error(err.variable);
 * }
 */
export class OdgmError extends Error {
  override readonly name = "OdgmError";
  /** What went wrong. */
  readonly code: OdgmErrorCode;
  /** For `invalid_config`: the offending variable; otherwise `undefined`. */
  readonly variable: string | undefined;
  constructor(code: OdgmErrorCode, message: string, options: OdgmErrorOptions = {}) {
    super(
      `[${code}] ${options.variable === undefined ? "" : `${options.variable}: `}${message}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.code = code;
    this.variable = options.variable;
  }

  /** `reason` if it is an OdgmError, else one with `code` wrapping it. */
  static from(reason: unknown, code: OdgmErrorCode = "invalid_config"): OdgmError {
    if (isOdgmError(reason)) return reason;
    const message = reason instanceof Error ? reason.message : String(reason);
    return new OdgmError(code, message, { cause: reason });
  }
}

/** True when `value` is an {@link OdgmError} (checked by name and code, not `instanceof` alone). */
export function isOdgmError(value: unknown): value is OdgmError {
  if (typeof value !== "object" || value === null) return false;
  const v = value as { name?: unknown; code?: unknown };
  return v.name === "OdgmError" && typeof v.code === "string" && CODES.has(v.code);
}
