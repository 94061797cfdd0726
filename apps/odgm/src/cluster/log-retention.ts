// Where a Raft group compacts its log. Not simply at what it applied: a follower a little
// behind would then need the whole shard as a snapshot, where a few entries would do. The
// log keeps a catch-up tail on every node (as etcd's SnapshotCatchUpEntries) and, on the
// leader, every entry a follower that answers still lacks (as TiKV's raft log GC), within
// half the compaction thresholds, so one slow follower cannot make the log grow without end.

export interface RetentionInput {
  /** Highest index applied here (made durable before the log is compacted). */
  readonly applied: number;
  /** First index still in the log. */
  readonly first: number;
  /** Leader only: match indexes of the followers that answered within an election timeout. */
  readonly liveMatches: readonly number[];
  /** Entries kept behind `applied` on every node, for followers a little behind. */
  readonly catchUpEntries: number;
  /** At most this many entries are kept… */
  readonly maxKeptEntries: number;
  /** …and at most this many payload bytes. */
  readonly maxKeptBytes: number;
  /** Payload bytes of the entry at `index` (first ≤ index ≤ applied). */
  readonly bytesAt: (index: number) => number;
}

export interface Retention {
  /** Entries up to this index are dropped; `first - 1` when there is nothing to drop. */
  readonly compactTo: number;
  /** Payload bytes of the entries kept in (compactTo, applied]. */
  readonly keptBytes: number;
}

/** Plans a compaction of the log (pure; see the file's comment for the policy). */
export function planRetention(i: RetentionInput): Retention {
  let keepFrom = i.applied + 1 - Math.max(0, i.catchUpEntries);
  for (const m of i.liveMatches) keepFrom = Math.min(keepFrom, m + 1);
  keepFrom = Math.max(keepFrom, i.first, i.applied + 1 - Math.max(0, i.maxKeptEntries));
  let lo = i.applied + 1;
  let keptBytes = 0;
  while (lo > keepFrom) {
    const b = i.bytesAt(lo - 1);
    if (keptBytes + b > i.maxKeptBytes) break;
    keptBytes += b;
    lo--;
  }
  return { compactTo: lo - 1, keptBytes };
}
