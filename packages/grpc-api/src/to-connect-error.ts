import { Code, ConnectError } from "@connectrpc/connect";
import { isIdError } from "@oprc/oprc-id";
import { DataPlaneError, type DataPlaneErrorCode } from "./data-plane-error.js";

/** Response metadata (trailers) carrying the facts of a CAS mismatch. */
export const EXPECTED_VERSION_HEADER = "odgm-expected-version";
/** Response metadata carrying the object's actual version on a CAS mismatch. */
export const ACTUAL_VERSION_HEADER = "odgm-actual-version";
/** Response metadata carrying the leader hint of a `not_leader` error. */
export const LEADER_HINT_HEADER = "odgm-leader-hint";
/** Response header carrying a warning for the client (see `DataPlaneCall.warn`). */
export const WARNING_HEADER = "odgm-warning";

/** Options of {@link toConnectError}. */
export interface ToConnectErrorOptions {
  /**
   * Called with the original error whenever it becomes INTERNAL (the client only sees
   * "internal error"). Default: none — pass a logger so the cause is not lost.
   */
  onInternalError?: ((cause: unknown) => void) | undefined;
}

const STATUS: Readonly<Record<DataPlaneErrorCode, Code>> = {
  invalid_argument: Code.InvalidArgument,
  invalid_cursor: Code.InvalidArgument,
  not_found: Code.NotFound,
  version_mismatch: Code.Aborted,
  too_large: Code.ResourceExhausted,
  unimplemented: Code.Unimplemented,
  failed_precondition: Code.FailedPrecondition,
  unavailable: Code.Unavailable,
  not_leader: Code.Unavailable,
  internal: Code.Internal,
};

/**
 * Maps anything a handler or data plane throws to the `ConnectError` the client sees
 * (spec §6): a `ConnectError` passes through; an `@oprc/oprc-id` normalization error is
 * INVALID_ARGUMENT with its message; a {@link DataPlaneError} (or an error carrying one of
 * its codes) gets its status; an aborted call is CANCELED; anything else is INTERNAL with
 * the message "internal error" and the original passed to `onInternalError`.
 *
 * The REST gateway maps the resulting `code` to HTTP.
 *
 * @example
 * ```ts
 * const ce = toConnectError(new DataPlaneError("not_found", "no collection c"));
 * ce.code; // Code.NotFound
 * ```
 */
export function toConnectError(err: unknown, options: ToConnectErrorOptions = {}): ConnectError {
  if (err instanceof ConnectError) {
    if (err.code === Code.Internal || err.code === Code.Unknown) {
      options.onInternalError?.(err.cause ?? err);
    }
    return err;
  }
  if (isIdError(err)) {
    return new ConnectError(err.message, Code.InvalidArgument, undefined, undefined, err);
  }
  const abort = abortCode(err);
  if (abort !== undefined) {
    return new ConnectError("request aborted", abort, undefined, undefined, err);
  }
  const e = DataPlaneError.from(err);
  if (e.code === "internal") {
    options.onInternalError?.(e.cause ?? err);
    return new ConnectError("internal error", Code.Internal, undefined, undefined, err);
  }
  const metadata = new Headers();
  let message = e.message;
  if (e.code === "version_mismatch" && e.expected !== undefined && e.actual !== undefined) {
    message = `[version_mismatch] expected object version ${e.expected}, actual ${e.actual}`;
    metadata.set(EXPECTED_VERSION_HEADER, e.expected.toString());
    metadata.set(ACTUAL_VERSION_HEADER, e.actual.toString());
  }
  if (e.code === "not_leader" && e.leaderHint !== undefined) {
    metadata.set(LEADER_HINT_HEADER, e.leaderHint);
  }
  return new ConnectError(message, STATUS[e.code], metadata, undefined, err);
}

function abortCode(err: unknown): Code | undefined {
  const name =
    typeof err === "object" && err !== null ? (err as { name?: unknown }).name : undefined;
  if (name === "AbortError") return Code.Canceled;
  if (name === "TimeoutError") return Code.DeadlineExceeded;
  return undefined;
}
