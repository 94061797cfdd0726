import { createGroupCommitWriter, type GroupCommitWriter } from "@oprc/rocksdb";
import { RaftError } from "../core/raft-error.js";
import type { RocksLogDatabase, RocksWrite } from "./rocks-log-database.js";

/** Counters of a {@link GroupCommitter}. */
export interface GroupCommitStats {
  /** Synced write batches issued. */
  readonly batches: number;
  /** Writes (`save()`/`compact()` calls) committed. */
  readonly writes: number;
  /** `writes / batches` (0 before the first batch). */
  readonly averageBatchSize: number;
  /** Largest number of writes in one batch. */
  readonly maxBatchSize: number;
  /** Where the synced writes run. */
  readonly thread: "worker" | "main";
  /** Batches written on the calling thread although a worker writes the others (`inlineSynced`). */
  readonly inlineBatches: number;
  /** Moving average of a batch's write and fsync time, on whichever thread wrote it (ms; 0 before the first). */
  readonly syncMs: number;
}

/** Batches the synced writes of many Raft groups of one process into one synced write. */
export interface GroupCommitter {
  /** Queues `ops` (one group's write); resolves once they are durable. */
  write(ops: readonly RocksWrite[]): Promise<void>;
  stats(): GroupCommitStats;
  /** Waits for queued writes, stops the worker thread, then refuses new writes. */
  close(): Promise<void>;
}

/** Options of {@link createGroupCommitter}. */
export interface GroupCommitterOptions {
  /** Upper bound of writes merged into one batch. Default 1024. */
  readonly maxBatch?: number;
  /**
   * Where to run the synced write: `"worker"` (default when the database was opened with
   * `openRocksLogDatabase`): a worker thread writes through the same open database, so the
   * fsync does not block the Raft groups' JS thread; `"main"`: on the calling thread.
   */
  readonly thread?: "worker" | "main";
  /**
   * Defers the start of a batch (`@oprc/rocksdb`'s `GroupCommitWriterOptions.schedule`).
   * Default `setImmediate`: the saves of one turn of the event loop share a batch. A driver
   * that defers its groups' Readys to the end of a turn passes the scheduler it uses, so
   * their saves start in that pass rather than a turn later.
   */
  readonly schedule?: (start: () => void) => void;
  /**
   * With the worker: asked when a batch (of at most 256 KiB) starts; `true` writes and syncs
   * it on the calling thread, which waits for the disk meanwhile (`@oprc/rocksdb`'s
   * `GroupCommitWriterOptions.inlineSynced`). Cheaper in CPU than the worker's round trip,
   * for a caller with nothing more urgent to do: a node that leads no group with proposals
   * in flight. Default: never. Not asked while batches took more than `inlineSyncedMaxMs`
   * lately.
   */
  readonly inlineSynced?: () => boolean;
  /**
   * A slow disk's guard: while a batch's write and fsync took more than this lately (a moving
   * average, `stats().syncMs`), batches go to the worker without asking `inlineSynced`
   * (`@oprc/rocksdb`'s `GroupCommitWriterOptions.inlineSyncedMaxMs`). Default 10 ms.
   */
  readonly inlineSyncedMaxMs?: number;
}

/**
 * Creates a group committer for `database` — `@oprc/rocksdb`'s group-commit writer on the
 * log's column family: every save made while a batch is being synced joins the next batch;
 * one group's write is never split, so each `save()` stays atomic. Close it before the
 * database (closing the database also closes it).
 *
 * @example
 * ```ts
 * const committer = createGroupCommitter(database);
 * const a = await createRocksLogStore({ database, groupId: "a", committer });
 * const b = await createRocksLogStore({ database, groupId: "b", committer });
 * await Promise.all([a.save(readyA), b.save(readyB)]); // one synced WriteBatch
 * ```
 */
export function createGroupCommitter(
  database: RocksLogDatabase,
  options: GroupCommitterOptions = {},
): GroupCommitter {
  const access = database.workerAccess;
  const thread = options.thread ?? (access === undefined ? "main" : "worker");
  if (thread === "worker" && access === undefined) {
    throw new RaftError(
      "invalid_argument",
      "this database cannot be written from a worker thread (open it with openRocksLogDatabase)",
    );
  }
  const writer: Promise<GroupCommitWriter> = createGroupCommitWriter({
    db: database.db as never,
    columns: database.columns,
    thread,
    ...(access === undefined ? {} : { access }),
    maxBatchCalls: options.maxBatch ?? 1024,
    ...(options.schedule === undefined ? {} : { schedule: options.schedule }),
    ...(options.inlineSynced === undefined ? {} : { inlineSynced: options.inlineSynced }),
    ...(options.inlineSyncedMaxMs === undefined
      ? {}
      : { inlineSyncedMaxMs: options.inlineSyncedMaxMs }),
  });
  writer.catch(() => undefined);
  let closed = false;
  let last: GroupCommitWriter | undefined;
  void writer.then((w) => {
    last = w;
  });
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    unregister();
    await (await writer).close();
  };
  const unregister = database.beforeClose(close);
  return {
    async write(ops) {
      if (closed) throw new RaftError("invalid_state", "group committer is closed");
      try {
        // Once open, the writer is called at once (no await): a save made in a scheduler's
        // pass is queued in that pass, and its batch starts there.
        await (last ?? (await writer)).write(
          ops.map((op) => ({ column: database.columnName, ...op })),
          { sync: true },
        );
      } catch (cause) {
        throw RaftError.from(cause, "unavailable");
      }
    },
    stats(): GroupCommitStats {
      const s = last?.stats();
      const batches = s?.batches ?? 0;
      const writes = s?.calls ?? 0;
      return {
        batches,
        writes,
        averageBatchSize: batches === 0 ? 0 : writes / batches,
        maxBatchSize: s?.maxBatchCalls ?? 0,
        thread,
        inlineBatches: s?.inlineBatches ?? 0,
        syncMs: s?.syncMs ?? 0,
      };
    },
    close,
  };
}
