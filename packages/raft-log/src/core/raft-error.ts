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
 * - `log_lost`: the leader counts entries as held by this node that its log does not hold:
 *   its storage lost writes it had acknowledged (Raft needs stable storage). The node must
 *   not go on as this member; remove it from the group and add it back.
 *
 * Codes of the codecs (log entries, log records, EDN histories), with `offset` set to the
 * byte where decoding failed when known:
 * - `truncated`: a length or field runs past the end of the input.
 * - `bad_varint`: a varint is longer than allowed or exceeds its integer range.
 * - `non_minimal_varint`: a varint has redundant trailing zero groups.
 * - `trailing_bytes`: bytes remain after a complete value.
 * - `unknown_version`: the format header byte names a version this code does not know.
 * - `unknown_tag`: an operation tag, identity variant or key variant is not defined.
 * - `unknown_flags`: a flags byte has bits set that the operation does not define.
 * - `unsorted_keys`: map keys or delete keys are not in strictly increasing byte order.
 * - `duplicate_key`: a key appears twice (or in both the sets and deletes of a batch).
 * - `invalid_utf8`: a string is not well-formed UTF-8 (or, when encoding, UTF-16).
 * - `non_canonical`: a value has another, canonical encoding, or breaks a structural rule.
 * - `invalid_value`: a value handed to an encoder is out of range or of the wrong shape.
 * - `invalid_history`: a text history (EDN) cannot be parsed or paired.
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
  | "invariant_violation"
  | "log_lost"
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
  "log_lost",
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
 * The one error class of `@oprc/raft-log`: the Raft core, the stores and the codecs. Its
 * message starts with `[code] `.
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
  /** Codec codes: the byte offset in the input where decoding failed, when known. */
  readonly offset: number | undefined;

  constructor(
    code: RaftErrorCode,
    message: string,
    options: { cause?: unknown; leaderHint?: number; offset?: number } = {},
  ) {
    super(
      `[${code}] ${message}${options.offset === undefined ? "" : ` (at byte ${options.offset})`}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.code = code;
    this.leaderHint = options.leaderHint ?? 0;
    this.offset = options.offset;
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
