import type { Entry, SnapshotChunk } from "../types.js";

/**
 * Kinds of Raft messages. `hup`, `beat`, `check_quorum` are local (never sent); the rest
 * travel between nodes.
 */
export type MessageType =
  | "hup"
  | "beat"
  | "check_quorum"
  | "prop"
  | "app"
  | "app_resp"
  | "vote"
  | "vote_resp"
  | "pre_vote"
  | "pre_vote_resp"
  | "snap"
  | "snap_resp"
  | "snap_status"
  | "heartbeat"
  | "heartbeat_resp"
  | "unreachable"
  | "transfer_leader"
  | "timeout_now"
  | "read_index"
  | "read_index_resp";

/** One Raft message. Fields not used by a message type hold their zero value. */
export interface Message {
  readonly type: MessageType;
  readonly from: number;
  readonly to: number;
  /** Sender's term (0 for local messages). */
  readonly term: number;
  /** `app`: term of the entry at `index`; vote requests: last log term; rejections: hint term. */
  readonly logTerm: number;
  /** `app`: prevLogIndex; `app_resp`: last matching index (or the rejected index); votes: last index. */
  readonly index: number;
  readonly entries: readonly Entry[];
  /**
   * `app`, `heartbeat`: the leader's commit index (for a heartbeat, capped at the follower's
   * match); `app_resp` (success), `heartbeat_resp`: the follower's commit index.
   */
  readonly commit: number;
  readonly reject: boolean;
  /** `app_resp` rejections: the follower's hint index (with `logTerm` as the hint term). */
  readonly rejectHint: number;
  /** Opaque request context (ReadIndex, campaign-transfer marker). */
  readonly context: Uint8Array;
  /** `snap`: the snapshot metadata plus this chunk's bytes in `data`. */
  readonly snapshot?: SnapshotChunk;
  /** `snap`: byte offset of this chunk; `snap_resp`: next byte offset expected. */
  readonly chunkOffset: number;
  /** `snap`: total size of the snapshot data in bytes. */
  readonly chunkTotal: number;
}

const EMPTY = new Uint8Array(0);

/** Builds a message, filling unspecified fields with their zero values. */
export function createMessage(m: Partial<Message> & Pick<Message, "type">): Message {
  const base: Message = {
    type: m.type,
    from: m.from ?? 0,
    to: m.to ?? 0,
    term: m.term ?? 0,
    logTerm: m.logTerm ?? 0,
    index: m.index ?? 0,
    entries: m.entries ?? [],
    commit: m.commit ?? 0,
    reject: m.reject ?? false,
    rejectHint: m.rejectHint ?? 0,
    context: m.context ?? EMPTY,
    chunkOffset: m.chunkOffset ?? 0,
    chunkTotal: m.chunkTotal ?? 0,
  };
  return m.snapshot === undefined ? base : { ...base, snapshot: m.snapshot };
}

/** True for message types that are answers (they never reset election timers on their own). */
export function isResponse(type: MessageType): boolean {
  return (
    type === "app_resp" ||
    type === "vote_resp" ||
    type === "pre_vote_resp" ||
    type === "heartbeat_resp" ||
    type === "snap_resp" ||
    type === "read_index_resp"
  );
}
