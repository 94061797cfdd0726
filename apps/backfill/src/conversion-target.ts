/** Progress persisted between runs (offline: in the database; online: in a file). */
export interface Checkpoint {
  /** Every legacy id up to and including this one was attempted; `undefined` = from the start. */
  readonly lastId: bigint | undefined;
  /** Objects converted by every run recorded in this checkpoint. */
  readonly converted: bigint;
  /** Objects skipped (already converted) by those runs. */
  readonly skipped: bigint;
  /** Objects that failed in those runs (they keep their blob and are retried). */
  readonly failed: bigint;
  /** True once a run ended with no blob left and nothing failed. */
  readonly complete: boolean;
  /** When the checkpoint was written (ms since the epoch). */
  readonly updatedAtMs: bigint;
}

/** One object that could not be converted or did not verify. */
export interface ObjectProblem {
  /** The legacy (numeric) object id, in decimal. */
  readonly id: string;
  /** What went wrong. */
  readonly message: string;
}

/** What converting one batch of ids did. */
export interface BatchOutcome {
  /** Blobs converted. */
  converted: number;
  /** Ids that had no blob any more (converted by the service or an earlier run). */
  skipped: number;
  /** Entries written by the conversions. */
  entries: number;
  /** Ids whose conversion failed (their blob is kept). */
  readonly failures: ObjectProblem[];
  /** Objects compared with their original blob (verify only). */
  verified: number;
  /** Objects whose converted form differs from their original blob (verify only). */
  readonly mismatches: ObjectProblem[];
  /** Objects not compared because a client modified them after conversion (verify, online). */
  modifiedConcurrently: number;
}

/** Result of the whole-shard consistency check of `--verify`. */
export interface ConsistencyReport {
  /** Objects checked. */
  objects: number;
  /** Entries checked. */
  entries: number;
  /** Objects that are inconsistent or unreadable. */
  readonly problems: ObjectProblem[];
}

/**
 * Where a backfill converts: a stopped node's database (offline) or a running node's
 * maintenance API (online). The runner drives both the same way.
 */
export interface ConversionTarget {
  /** `"offline"` or `"online"`. */
  readonly kind: "offline" | "online";
  /** Where the target lives (data directory or endpoint), for messages. */
  readonly location: string;
  /** Ids per conversion call (1 offline: the engine group-commits parallel writes). */
  readonly batchSize: number;
  /** Legacy blob ids in ascending order, after `after` when given. */
  listIds(after?: bigint): AsyncIterable<bigint>;
  /** Entries the given blobs would convert to (dry run); vanished blobs count 0. */
  countEntries(ids: readonly bigint[]): Promise<number>;
  /** Converts the given ids; with `verify`, compares each converted object with its blob. */
  convert(ids: readonly bigint[], verify: boolean): Promise<BatchOutcome>;
  /** Checks every object of the shard is readable and its entries match its metadata. */
  checkConsistency(signal?: AbortSignal): Promise<ConsistencyReport>;
  /** The persisted checkpoint, if any. */
  loadCheckpoint(): Promise<Checkpoint | undefined>;
  /** Persists the checkpoint durably. */
  saveCheckpoint(checkpoint: Checkpoint): Promise<void>;
  /** Releases the target (closes what it opened). */
  close(): Promise<void>;
}

/** An empty {@link BatchOutcome}. */
export function emptyOutcome(): BatchOutcome {
  return {
    converted: 0,
    skipped: 0,
    entries: 0,
    failures: [],
    verified: 0,
    mismatches: [],
    modifiedConcurrently: 0,
  };
}

/** The message of anything thrown, on one line. */
export function messageOf(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\s+/g, " ").trim();
}
