/**
 * The closed set of failures a {@link DataPlane} reports. Each maps to one gRPC status
 * (spec §6) in {@link toConnectError}:
 *
 * | code | gRPC status |
 * |---|---|
 * | `invalid_argument`, `invalid_cursor` | INVALID_ARGUMENT |
 * | `not_found` (collection, partition or object) | NOT_FOUND |
 * | `version_mismatch` (CAS) | ABORTED |
 * | `too_large` | RESOURCE_EXHAUSTED |
 * | `unimplemented` | UNIMPLEMENTED |
 * | `failed_precondition` (refused by the node's configuration, e.g. a rollout phase) | FAILED_PRECONDITION |
 * | `unavailable` (not ready), `not_leader` | UNAVAILABLE |
 * | `internal` | INTERNAL (message not sent to the client) |
 */
export type DataPlaneErrorCode =
  | "invalid_argument"
  | "invalid_cursor"
  | "not_found"
  | "version_mismatch"
  | "too_large"
  | "unimplemented"
  | "failed_precondition"
  | "unavailable"
  | "not_leader"
  | "internal";

const CODES: ReadonlySet<string> = new Set<DataPlaneErrorCode>([
  "invalid_argument",
  "invalid_cursor",
  "not_found",
  "version_mismatch",
  "too_large",
  "unimplemented",
  "failed_precondition",
  "unavailable",
  "not_leader",
  "internal",
]);

/** True for one of the {@link DataPlaneErrorCode} strings. */
export function isDataPlaneErrorCode(code: string): code is DataPlaneErrorCode {
  return CODES.has(code);
}

/** Extra facts some codes carry. */
export interface DataPlaneErrorOptions {
  /** The underlying error (never sent to clients). */
  cause?: unknown;
  /** `version_mismatch`: the version the client expected. */
  expected?: bigint;
  /** `version_mismatch`: the object's actual version. */
  actual?: bigint;
  /** `not_leader`: where the leader is (node id or address), when known. */
  leaderHint?: string;
}

/** `[code] ` prefixes at the start of a message (as every error class here writes them). */
const LEADING_CODES = /^(\[[a-z_]+\] )+/;

/**
 * The error a data plane throws. Messages start with the code (`[not_found] …`).
 *
 * @example
 * ```ts
 * throw new DataPlaneError("version_mismatch", "object version differs", { expected: 3n, actual: 5n });
 * ```
 */
export class DataPlaneError extends Error {
  override readonly name = "DataPlaneError";
  /** What went wrong; decides the gRPC status. */
  readonly code: DataPlaneErrorCode;
  /** `version_mismatch`: the version the client expected. */
  readonly expected: bigint | undefined;
  /** `version_mismatch`: the object's actual version. */
  readonly actual: bigint | undefined;
  /** `not_leader`: where the leader is, when known. */
  readonly leaderHint: string | undefined;

  /**
   * @param code - what went wrong
   * @param message - human-readable detail (the `[code] ` prefix is added; prefixes it
   *   already starts with, e.g. of a wrapped error, are dropped)
   * @param options - cause and code-specific facts
   */
  constructor(code: DataPlaneErrorCode, message: string, options: DataPlaneErrorOptions = {}) {
    super(
      // One prefix: a wrapped error's own `[code] ` prefixes are dropped, not stacked.
      `[${code}] ${message.replace(LEADING_CODES, "")}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.code = code;
    this.expected = options.expected;
    this.actual = options.actual;
    this.leaderHint = options.leaderHint;
  }

  /**
   * Converts anything thrown into a DataPlaneError. An error whose `code` is one of
   * {@link DataPlaneErrorCode} (e.g. a store error with `not_found` or `version_mismatch`
   * and `expected`/`actual`) keeps its code and message; everything else is `internal`
   * with the original as `cause`.
   */
  static from(err: unknown): DataPlaneError {
    if (isDataPlaneError(err)) return err;
    if (typeof err === "object" && err !== null) {
      const e = err as { code?: unknown; message?: unknown; expected?: unknown; actual?: unknown };
      if (typeof e.code === "string" && CODES.has(e.code)) {
        const code = e.code as DataPlaneErrorCode;
        const message = typeof e.message === "string" ? e.message : code;
        const options: DataPlaneErrorOptions = { cause: err };
        const expected = toBigint(e.expected);
        const actual = toBigint(e.actual);
        if (expected !== undefined) options.expected = expected;
        if (actual !== undefined) options.actual = actual;
        return new DataPlaneError(code, message, options);
      }
    }
    return new DataPlaneError("internal", "unexpected error", { cause: err });
  }
}

function toBigint(v: unknown): bigint | undefined {
  if (typeof v === "bigint") return v;
  if (typeof v === "number" && Number.isSafeInteger(v)) return BigInt(v);
  return undefined;
}

/** True for a {@link DataPlaneError} (checked by name and code, so it works across copies). */
export function isDataPlaneError(err: unknown): err is DataPlaneError {
  return (
    typeof err === "object" &&
    err !== null &&
    (err as { name?: unknown }).name === "DataPlaneError" &&
    CODES.has((err as { code?: unknown }).code as string)
  );
}
