import { Worker } from "node:worker_threads";
import { RaftError } from "../core/raft-error.js";
import { GROUP_COMMIT_WORKER_SOURCE } from "./group-commit-worker.js";
import type { RocksLogDatabase, RocksWorkerAccess, RocksWrite } from "./rocks-log-database.js";

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
  /**
   * Upper bound of writes merged into one batch. Default 1024: large enough to absorb a
   * whole tick of every group in a process, small enough to bound one batch's size.
   */
  readonly maxBatch?: number;
  /**
   * Where to run the synced write:
   * - `"worker"` (default when the database allows it, i.e. it was opened with
   *   `openRocksLogDatabase`): a worker thread writes through the same open database, so
   *   the fsync does not block the Raft groups' JS thread, and every `save()` made while a
   *   sync is in flight joins the next batch;
   * - `"main"`: on the calling thread (`@nxtedition/rocksdb` writes synchronously), so the
   *   batch boundary is the event-loop turn.
   */
  readonly thread?: "worker" | "main";
}

type Writer = { write(ops: readonly RocksWrite[]): Promise<void>; stop(): Promise<void> };

function mainThreadWriter(database: RocksLogDatabase): Writer {
  return { write: (ops) => database.write(ops, true), stop: async () => undefined };
}

function workerWriter(access: RocksWorkerAccess): Writer {
  const worker = new Worker(GROUP_COMMIT_WORKER_SOURCE, {
    eval: true,
    workerData: { handle: access.handle, modulePath: access.modulePath, column: access.column },
  });
  worker.unref();
  const pending = new Map<number, { resolve: () => void; reject: (e: unknown) => void }>();
  let nextId = 0;
  let failure: unknown;
  const ready = new Promise<void>((resolve, reject) => {
    worker.once("message", (m: { ready?: boolean; fatal?: string }) => {
      if (m.ready) resolve();
      else reject(new RaftError("unavailable", `group commit worker failed: ${m.fatal}`));
    });
  });
  ready.catch(() => undefined);
  const failAll = (e: unknown): void => {
    failure = e;
    for (const p of pending.values()) p.reject(e);
    pending.clear();
  };
  worker.on("message", (m: { id?: number; error?: string }) => {
    if (m.id === undefined) return;
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (pending.size === 0) worker.unref();
    if (m.error === undefined) p?.resolve();
    else p?.reject(new RaftError("unavailable", `synced write failed: ${m.error}`));
  });
  worker.on("error", (e) => failAll(RaftError.from(e, "unavailable")));
  worker.on("exit", () => failAll(new RaftError("invalid_state", "group commit worker exited")));
  return {
    async write(ops) {
      await ready;
      if (failure !== undefined) throw failure;
      // Pack the batch into one buffer and transfer it (no per-key structured clone).
      let size = 0;
      for (const op of ops)
        size += 5 + op.key.length + (op.type === "put" ? 4 + op.value.length : 0);
      const buf = new Uint8Array(size);
      const view = new DataView(buf.buffer);
      let at = 0;
      for (const op of ops) {
        buf[at] = op.type === "put" ? 1 : 2;
        view.setUint32(at + 1, op.key.length, true);
        buf.set(op.key, at + 5);
        at += 5 + op.key.length;
        if (op.type === "put") {
          view.setUint32(at, op.value.length, true);
          buf.set(op.value, at + 4);
          at += 4 + op.value.length;
        }
      }
      return new Promise<void>((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve, reject });
        worker.ref(); // a write in flight keeps the process alive
        worker.postMessage({ id, buf: buf.buffer }, [buf.buffer]);
      });
    },
    async stop() {
      await worker.terminate();
    },
  };
}

/**
 * Creates a group committer for `database`: the saves of many Raft groups are merged into
 * one synced WriteBatch. Every write queued while the previous batch is being synced (or,
 * on the main thread, in the same event-loop turn) joins the next batch. Writes of one
 * group keep their order, and one group's write is never split across batches, so each
 * `save()` stays atomic.
 *
 * Close the committer before the database (closing the database also closes it).
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
  const access = database.workerAccess;
  const thread = options.thread ?? (access === undefined ? "main" : "worker");
  if (thread === "worker" && access === undefined) {
    throw new RaftError(
      "invalid_argument",
      "this database cannot be written from a worker thread (open it with openRocksLogDatabase)",
    );
  }
  const writer =
    thread === "worker" ? workerWriter(access as RocksWorkerAccess) : mainThreadWriter(database);
  type Item = { ops: readonly RocksWrite[]; resolve: () => void; reject: (e: unknown) => void };
  let queue: Item[] = [];
  let running: Promise<void> | undefined;
  let closed = false;
  let batches = 0;
  let writes = 0;
  let maxBatchSize = 0;

  const drain = async (): Promise<void> => {
    // Let every save of the current turn arrive before the first batch goes out.
    await new Promise((r) => setImmediate(r));
    while (queue.length > 0) {
      const items = queue.slice(0, maxBatch);
      queue = queue.slice(items.length);
      const ops: RocksWrite[] = [];
      for (const it of items) for (const op of it.ops) ops.push(op);
      batches++;
      writes += items.length;
      maxBatchSize = Math.max(maxBatchSize, items.length);
      try {
        await writer.write(ops);
        for (const it of items) it.resolve();
      } catch (e) {
        for (const it of items) it.reject(e);
      }
    }
  };
  const kick = (): void => {
    if (running !== undefined) return; // the running drain picks the new write up
    running = drain().finally(() => {
      running = undefined;
      if (queue.length > 0) kick();
    });
  };
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    while (running !== undefined) await running;
    unregister();
    await writer.stop();
  };
  const unregister = database.beforeClose(close);

  return {
    write(ops: readonly RocksWrite[]): Promise<void> {
      if (closed) {
        return Promise.reject(new RaftError("invalid_state", "group committer is closed"));
      }
      return new Promise<void>((resolve, reject) => {
        queue.push({ ops, resolve, reject });
        kick();
      });
    },
    stats: (): GroupCommitStats => ({
      batches,
      writes,
      averageBatchSize: batches === 0 ? 0 : writes / batches,
      maxBatchSize,
      thread,
    }),
    close,
  };
}
