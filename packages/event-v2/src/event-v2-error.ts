/**
 * The closed set of error codes `@oprc/event-v2` raises.
 *
 * - `invalid_config`: an `ODGM_EVENT_*` / `ODGM_MAX_*` variable (or an option) has an invalid value.
 * - `invalid_argument`: a caller passed a value the pipeline cannot represent (e.g. a negative version).
 * - `closed`: the dispatcher or a subscription was used after it was closed.
 */
export type EventV2ErrorCode = "invalid_config" | "invalid_argument" | "closed";

const CODES: ReadonlySet<string> = new Set<EventV2ErrorCode>([
  "invalid_config",
  "invalid_argument",
  "closed",
]);

/** Options for {@link EventV2Error}. */
export interface EventV2ErrorOptions {
  /** The underlying error, if any. */
  cause?: unknown;
  /** For `invalid_config`: the environment variable (or option) that was rejected. */
  variable?: string;
}

/**
 * The one error class of `@oprc/event-v2`. Messages start with `[code] `.
 *
 * @example
 * ```ts
 * try {
 *   eventConfigFromEnv({ ODGM_EVENT_QUEUE_BOUND: "lots" });
 * } catch (err) {
 *   if (isEventV2Error(err) && err.code === "invalid_config") console.error(err.variable);
 * }
 * ```
 */
export class EventV2Error extends Error {
  override name = "EventV2Error" as const;
  /** One of {@link EventV2ErrorCode}. */
  readonly code: EventV2ErrorCode;
  /** For `invalid_config`: the variable that was rejected. */
  readonly variable: string | undefined;
  /** The message without the `[code] ` prefix. */
  readonly rawMessage: string;

  constructor(code: EventV2ErrorCode, message: string, options: EventV2ErrorOptions = {}) {
    super(
      `[${code}] ${message}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.code = code;
    this.rawMessage = message;
    this.variable = options.variable;
  }

  /**
   * Wraps any thrown value: an `EventV2Error` is returned as is, anything else becomes
   * `invalid_argument` with the original as `cause`.
   */
  static from(reason: unknown, code: EventV2ErrorCode = "invalid_argument"): EventV2Error {
    if (isEventV2Error(reason)) return reason;
    const message = reason instanceof Error ? reason.message : String(reason);
    return new EventV2Error(code, message, { cause: reason });
  }
}

/** True when `value` is an {@link EventV2Error} (checked by name and code, not `instanceof` alone). */
export function isEventV2Error(value: unknown): value is EventV2Error {
  if (value instanceof EventV2Error) return true;
  if (typeof value !== "object" || value === null) return false;
  const v = value as { name?: unknown; code?: unknown };
  return v.name === "EventV2Error" && typeof v.code === "string" && CODES.has(v.code);
}
