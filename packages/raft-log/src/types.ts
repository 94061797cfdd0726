// Shared Raft data types: the contract between the pure core (src/core), the log stores
// (src/storage), the simulator (src/sim) and the codecs. Indices and terms are plain
// numbers (safe integers: 2^53 entries is far beyond any log we keep).

/** Kind of a log entry. */
export type EntryType =
  /** An application command (opaque bytes, e.g. an encoded ODGM operation). */
  | "normal"
  /** A membership change (encoded {@link ConfChange}). */
  | "conf_change";

/** One Raft log entry. */
export interface Entry {
  readonly index: number;
  readonly term: number;
  readonly type: EntryType;
  /** Opaque payload; empty for the no-op a new leader appends. */
  readonly data: Uint8Array;
}

/** What must be durable before a node answers votes or acknowledges entries. */
export interface HardState {
  readonly term: number;
  /** Node voted for in `term`, or 0 for none. Node ids are positive integers. */
  readonly vote: number;
  readonly commit: number;
}

/** Cluster membership. `votersOutgoing` is non-empty only in a joint configuration. */
export interface ConfState {
  readonly voters: readonly number[];
  readonly learners: readonly number[];
  /** The old voter set while in joint consensus C(old,new); empty otherwise. */
  readonly votersOutgoing: readonly number[];
  /** Learners to promote when leaving the joint configuration. */
  readonly learnersNext: readonly number[];
  /** Leave the joint configuration automatically once it commits. */
  readonly autoLeave: boolean;
}

/** Identifies the state a snapshot captures. */
export interface SnapshotMetadata {
  readonly index: number;
  readonly term: number;
  readonly confState: ConfState;
}

/** A state-machine snapshot with the log position and membership it reflects. */
export interface Snapshot {
  readonly metadata: SnapshotMetadata;
  readonly data: Uint8Array;
}

/**
 * Snapshot bytes a leader reads one chunk at a time (a `Uint8Array` is one; a file read on
 * demand is another, so a large snapshot need not be held in memory while it is sent).
 * `subarray` may throw (a read error): the transfer is then given up, as on a failed
 * {@link Raft.reportSnapshot}, and started again from the source.
 */
export interface SnapshotBytes {
  readonly byteLength: number;
  subarray(start: number, end: number): Uint8Array;
}

/** A snapshot as a leader sends it: its bytes read a chunk at a time. */
export interface OutgoingSnapshot {
  readonly metadata: SnapshotMetadata;
  readonly data: SnapshotBytes;
}

/** One membership change operation. */
export interface ConfChangeSingle {
  readonly type: "add_voter" | "add_learner" | "remove";
  readonly nodeId: number;
}

/**
 * A membership change. One change with `transition: "auto"` is a single-server change;
 * several changes (or `transition: "joint"`) enter joint consensus; an empty `changes`
 * list leaves a joint configuration.
 */
export interface ConfChange {
  readonly changes: readonly ConfChangeSingle[];
  readonly transition: "auto" | "joint" | "joint_explicit";
}

/** Empty hard state of a brand-new node. */
export const EMPTY_HARD_STATE: HardState = Object.freeze({ term: 0, vote: 0, commit: 0 });
