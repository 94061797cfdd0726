/**
 * Closed set of {@link RaftError} codes.
 * - `not_leader`: this node is not the leader and does not forward; `leaderHint` names the leader.
 * - `no_leader`: no leader is known, so a proposal or read cannot be routed (fail fast).
 * - `proposal_dropped`: the proposal cannot be accepted right now (e.g. this node was removed).
 * - `transfer_in_progress`: a leadership transfer is under way; proposals are refused.
 * - `conf_change_pending`: an earlier membership change is not applied yet, or the change is
 *   not valid in the current configuration (e.g. entering joint consensus twice).
 * - `compacted`: the requested index lies before the first retained log index.
 * - `unavailable`: the requested index lies after the last log index, or a snapshot is not ready.
 * - `lease_expired`: a lease-based read was asked for after the leader's lease ran out.
 * - `invalid_argument`: the caller passed something the core cannot accept.
 * - `invalid_state`: the API was used out of order (e.g. `ready()` twice without `advance()`).
 * - `invariant_violation`: the invariant checker found a Raft safety property broken.
 */
export type RaftErrorCode =
  | "not_leader"
  | "no_leader"
  | "proposal_dropped"
  | "transfer_in_progress"
  | "conf_change_pending"
  | "compacted"
  | "unavailable"
  | "lease_expired"
  | "invalid_argument"
  | "invalid_state"
  | "invariant_violation";

const CODES: ReadonlySet<string> = new Set<RaftErrorCode>([
  "not_leader",
  "no_leader",
  "proposal_dropped",
  "transfer_in_progress",
  "conf_change_pending",
  "compacted",
  "unavailable",
  "lease_expired",
  "invalid_argument",
  "invalid_state",
  "invariant_violation",
]);

/**
 * The one error class of `@oprc/raft-log`'s Raft core. Its message starts with `[code] `.
 *
 * @example
 * ```ts
 * try {
 *   node.propose(data);
 * } catch (err) {
 *   if (isRaftError(err, "not_leader")) redirect(err.leaderHint);
 * }
 * ```
 */
export class RaftError extends Error {
  override readonly name = "RaftError" as const;
  /** What kind of failure this is. */
  readonly code: RaftErrorCode;
  /** `not_leader`: the id of the leader this node knows of (0 when unknown). */
  readonly leaderHint: number;

  constructor(
    code: RaftErrorCode,
    message: string,
    options: { cause?: unknown; leaderHint?: number } = {},
  ) {
    super(
      `[${code}] ${message}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.code = code;
    this.leaderHint = options.leaderHint ?? 0;
  }

  /** Wraps anything thrown into a `RaftError` (returned unchanged when it already is one). */
  static from(reason: unknown, code: RaftErrorCode = "invalid_state"): RaftError {
    if (isRaftError(reason)) return reason;
    const message = reason instanceof Error ? reason.message : String(reason);
    return new RaftError(code, message, { cause: reason });
  }
}

/** True for a {@link RaftError} (checked by name and code), optionally of the given `code`. */
export function isRaftError(value: unknown, code?: RaftErrorCode): value is RaftError {
  if (typeof value !== "object" || value === null) return false;
  const v = value as { name?: unknown; code?: unknown };
  if (v.name !== "RaftError" || typeof v.code !== "string" || !CODES.has(v.code)) return false;
  return code === undefined || v.code === code;
}
