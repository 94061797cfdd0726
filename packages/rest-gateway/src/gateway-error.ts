import { Code, ConnectError } from "@connectrpc/connect";
import { isIdError } from "@oprc/oprc-id";

/**
 * The closed set of {@link GatewayError} codes. Each code has exactly one HTTP status (see
 * {@link GATEWAY_ERROR_STATUS}) and is the `error.code` of the JSON error body.
 */
export type GatewayErrorCode =
  | "bad_request"
  | "failed_precondition"
  | "unauthenticated"
  | "permission_denied"
  | "not_found"
  | "method_not_allowed"
  | "not_acceptable"
  | "conflict"
  | "payload_too_large"
  | "unsupported_media_type"
  | "unprocessable_entity"
  | "client_closed_request"
  | "internal"
  | "not_implemented"
  | "bad_gateway"
  | "unavailable"
  | "gateway_timeout";

/** HTTP status of every {@link GatewayErrorCode}. */
export const GATEWAY_ERROR_STATUS: Readonly<Record<GatewayErrorCode, number>> = {
  bad_request: 400,
  // Google's HTTP mapping of FAILED_PRECONDITION (412 is for If-* headers).
  failed_precondition: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable_entity: 422,
  // nginx's status for a request the client abandoned; nobody reads the answer.
  client_closed_request: 499,
  internal: 500,
  not_implemented: 501,
  bad_gateway: 502,
  unavailable: 503,
  gateway_timeout: 504,
};

/** Options of {@link GatewayError}. */
export interface GatewayErrorOptions {
  /** The underlying error (a `ConnectError`, an `IdError`, a parse error …). */
  cause?: unknown;
}

const CONNECT_TO_GATEWAY: ReadonlyMap<Code, GatewayErrorCode> = new Map<Code, GatewayErrorCode>([
  [Code.InvalidArgument, "bad_request"],
  [Code.OutOfRange, "bad_request"],
  [Code.FailedPrecondition, "failed_precondition"],
  [Code.NotFound, "not_found"],
  [Code.Aborted, "conflict"],
  [Code.AlreadyExists, "conflict"],
  [Code.ResourceExhausted, "payload_too_large"],
  [Code.Unimplemented, "not_implemented"],
  [Code.Unavailable, "unavailable"],
  [Code.DeadlineExceeded, "gateway_timeout"],
  [Code.Unauthenticated, "unauthenticated"],
  [Code.PermissionDenied, "permission_denied"],
  [Code.Canceled, "client_closed_request"],
]);

/**
 * Codes whose upstream message is passed to the client. Everything else (5xx) gets a fixed
 * message, so neither stack traces nor upstream addresses leak.
 */
const FORWARD_MESSAGE: ReadonlySet<GatewayErrorCode> = new Set<GatewayErrorCode>([
  "bad_request",
  "failed_precondition",
  "not_found",
  "conflict",
  "payload_too_large",
  "not_implemented",
  "unauthenticated",
  "permission_denied",
]);

const FIXED_MESSAGE: Partial<Record<GatewayErrorCode, string>> = {
  client_closed_request: "the client closed the request",
  internal: "internal error",
  unavailable: "the data service is unavailable, retry later",
  gateway_timeout: "the data service did not answer in time",
  bad_gateway: "the upstream service failed",
};

/**
 * The one error class of `@oprc/rest-gateway`. Every failure the gateway answers becomes one,
 * and is rendered as `{"error":{"code","message"}}` with {@link GatewayError.status}.
 * Messages start with `[code] `; {@link GatewayError.rawMessage} is the message without it.
 *
 * @example
 * ```ts
 * const err = GatewayError.from(new ConnectError("version 3 != 4", Code.Aborted));
 * err.code; // "conflict"
 * err.status; // 409
 * ```
 */
export class GatewayError extends Error {
  override name = "GatewayError" as const;
  /** One of {@link GatewayErrorCode}. */
  readonly code: GatewayErrorCode;
  /** The message without the `[code] ` prefix: what the JSON error body carries. */
  readonly rawMessage: string;

  /** Creates an error with `code` and a human-readable `message` (without the prefix). */
  constructor(code: GatewayErrorCode, message: string, options?: GatewayErrorOptions) {
    super(
      `[${code}] ${message}`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.code = code;
    this.rawMessage = message;
  }

  /** The HTTP status this error is answered with. */
  get status(): number {
    return GATEWAY_ERROR_STATUS[this.code];
  }

  /**
   * Converts anything thrown into a {@link GatewayError}: a `GatewayError` is returned as is;
   * a `ConnectError` is mapped by code (INVALID_ARGUMENT→400, NOT_FOUND→404, ABORTED→409,
   * RESOURCE_EXHAUSTED→413, UNIMPLEMENTED→501, UNAVAILABLE→503, DEADLINE_EXCEEDED→504, other
   * codes→500); an `IdError` from id normalization is a 400 carrying its message; anything
   * else is a 500 `internal` with a fixed message.
   */
  static from(value: unknown): GatewayError {
    if (value instanceof GatewayError) return value;
    if (isIdError(value)) return new GatewayError("bad_request", value.message, { cause: value });
    if (value instanceof ConnectError) {
      const code = CONNECT_TO_GATEWAY.get(value.code) ?? "internal";
      const message =
        FORWARD_MESSAGE.has(code) && value.rawMessage !== ""
          ? value.rawMessage
          : (FIXED_MESSAGE[code] ?? `upstream answered ${Code[value.code]}`);
      return new GatewayError(code, message, { cause: value });
    }
    return new GatewayError("internal", "internal error", { cause: value });
  }
}

/** True when `value` is a {@link GatewayError} (checked by `name` and `code`, not `instanceof`). */
export function isGatewayError(value: unknown): value is GatewayError {
  if (typeof value !== "object" || value === null) return false;
  const v = value as { name?: unknown; code?: unknown };
  return v.name === "GatewayError" && typeof v.code === "string" && v.code in GATEWAY_ERROR_STATUS;
}

/** Renders a {@link GatewayError} as the JSON error body with its status. */
export function errorResponse(err: GatewayError, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify({ error: { code: err.code, message: err.rawMessage } }), {
    status: err.status,
    headers: { "content-type": "application/json; charset=UTF-8", ...headers },
  });
}
