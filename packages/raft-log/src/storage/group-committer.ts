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
}

/** Batches the synced writes of many Raft groups of one process into one synced write. */
export interface GroupCommitter {
  /** Queues `ops` (one group's write); resolves once they are durable. */
  write(ops: readonly RocksWrite[]): Promise<void>;
  stats(): GroupCommitStats;
  /** Waits for queued writes, then refuses new ones. */
  close(): Promise<void>;
}

/** Options of {@link createGroupCommitter}. */
export interface GroupCommitterOptions {
  /**
   * Upper bound of writes merged into one batch. Default 1024: large enough to absorb a
   * whole tick of every group in a process, small enough to bound one batch's size.
   */
  readonly maxBatch?: number;
}

/**
 * Creates a group committer for `database`: every write queued while the previous synced
 * batch is being written — and every write queued in the same event-loop turn — joins the
 * next batch, which is written with one fsync. Writes of one group keep their order, and
 * one group's write is never split across batches, so each `save()` stays atomic.
 *
 * Note: `@nxtedition/rocksdb` executes `WriteBatch.write` synchronously on the JS thread,
 * so the batch boundary is the event-loop turn: every `save()` made before the flush
 * (scheduled with `setImmediate`) runs is in it.
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
  const maxBatch = options.maxBatch ?? 1024;
  type Item = { ops: readonly RocksWrite[]; resolve: () => void; reject: (e: unknown) => void };
  let queue: Item[] = [];
  let scheduled = false;
  let inFlight: Promise<void> | undefined;
  let closed = false;
  let batches = 0;
  let writes = 0;
  let maxBatchSize = 0;

  const flush = async (): Promise<void> => {
    scheduled = false;
    while (queue.length > 0) {
      const items = queue.slice(0, maxBatch);
      queue = queue.slice(items.length);
      const ops: RocksWrite[] = [];
      for (const it of items) for (const op of it.ops) ops.push(op);
      batches++;
      writes += items.length;
      maxBatchSize = Math.max(maxBatchSize, items.length);
      try {
        await database.write(ops, true);
        for (const it of items) it.resolve();
      } catch (e) {
        for (const it of items) it.reject(e);
      }
    }
  };
  const schedule = (): void => {
    if (scheduled || inFlight !== undefined) return;
    scheduled = true;
    setImmediate(() => {
      inFlight = flush().finally(() => {
        inFlight = undefined;
        if (queue.length > 0) schedule();
      });
    });
  };

  return {
    write(ops: readonly RocksWrite[]): Promise<void> {
      if (closed) {
        return Promise.reject(new RaftError("invalid_state", "group committer is closed"));
      }
      return new Promise<void>((resolve, reject) => {
        queue.push({ ops, resolve, reject });
        schedule();
      });
    },
    stats: (): GroupCommitStats => ({
      batches,
      writes,
      averageBatchSize: batches === 0 ? 0 : writes / batches,
      maxBatchSize,
    }),
    async close(): Promise<void> {
      while (queue.length > 0 || inFlight !== undefined || scheduled) {
        await (inFlight ?? new Promise((r) => setImmediate(r)));
      }
      closed = true;
    },
  };
}
