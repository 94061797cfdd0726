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

/**
 * A state-machine snapshot with the log position and membership it reflects. Its data is
 * read a chunk at a time, so it need not be in memory: a leader sends it from a file it
 * builds ({@link RaftOptions.snapshotSource}), a follower receives it into one
 * ({@link RaftOptions.snapshotReceiver}).
 */
export interface Snapshot {
  readonly metadata: SnapshotMetadata;
  readonly data: SnapshotBytes;
}

/**
 * Snapshot bytes read one range at a time (a `Uint8Array` is one; a file read on demand is
 * another). `subarray` may throw (a read error): a leader then gives the transfer up, as on
 * a failed {@link Raft.reportSnapshot}, and starts again from the source.
 */
export interface SnapshotBytes {
  readonly byteLength: number;
  subarray(start: number, end: number): Uint8Array;
}

/** One chunk of a snapshot transfer, as a `snap` message carries it. */
export interface SnapshotChunk {
  readonly metadata: SnapshotMetadata;
  /** This chunk's bytes. */
  readonly data: Uint8Array;
}

/**
 * Where a follower keeps the chunks of a snapshot while it receives them (a file, so that a
 * snapshot larger than memory can be received). Set with {@link RaftOptions.snapshotReceiver};
 * the default keeps them in memory.
 */
export interface SnapshotReceiver {
  /** A transfer of `total` bytes of the snapshot `metadata` starts. */
  begin(metadata: SnapshotMetadata, total: number): SnapshotSink;
}

/**
 * The bytes of one snapshot transfer. A method that throws (a failed disk write) gives the
 * transfer up: the follower answers that it rejects the chunk, and the sink is discarded.
 */
export interface SnapshotSink {
  /** Appends the next bytes of the snapshot, in order. */
  append(bytes: Uint8Array): void;
  /** Every byte was appended: the snapshot's data, handed to the application in a Ready. */
  finish(): SnapshotBytes;
  /**
   * The transfer was given up (a newer one started, a new term, or a failure): nothing of
   * it is needed any more. Not called once {@link finish} succeeded.
   */
  discard(): void;
}

/** Bytes `[0, byteLength)` of `data` in one array (`data` itself when it is one). */
export function snapshotBytes(data: SnapshotBytes): Uint8Array {
  return data instanceof Uint8Array ? data : data.subarray(0, data.byteLength);
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
