import type { ConfState, Entry, HardState, Snapshot } from "./types.js";

/**
 * The log store a Raft node reads and writes. Implementations: in-memory (tests) and
 * RocksDB (durable). Reads are synchronous against the store's in-memory view of what it
 * has *accepted*; durability is decided by {@link LogStore.save} resolving.
 */
export interface LogStore {
  /** The hard state and membership to start from (empty on a new node). */
  initialState(): { hardState: HardState; confState: ConfState };
  /** Entries in [lo, hi), at most `maxBytes` of payload (always at least one). */
  entries(lo: number, hi: number, maxBytes?: number): Entry[];
  /** Term of the entry at `index`; the snapshot's index answers with the snapshot's term. */
  term(index: number): number;
  /** Index of the first entry still in the log (snapshot index + 1). */
  firstIndex(): number;
  /** Index of the last entry (or the snapshot index when the log is empty). */
  lastIndex(): number;
  /** The most recent snapshot. */
  snapshot(): Snapshot;
  /**
   * Persists one Ready as a single atomic (and, for durable stores, synced) write:
   * the snapshot first (if any), then entries — truncating any existing suffix that
   * conflicts with the first new entry — then the hard state. Resolves when durable.
   */
  save(ready: PersistBatch): Promise<void>;
  /**
   * Drops entries up to and including `index` (which must be applied and ≤ lastIndex) and
   * records `snapshot`, unless the stored one is as new or newer.
   */
  compact(index: number, snapshot: Snapshot): Promise<void>;
  close(): Promise<void>;
}

/** The part of a Ready that must be persisted, in one write. */
export interface PersistBatch {
  readonly hardState?: HardState;
  readonly entries?: readonly Entry[];
  readonly snapshot?: Snapshot;
}
