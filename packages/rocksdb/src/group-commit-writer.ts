// One group-commit writer per database: every write call joins the open group; exactly one
// group is being written at a time, and every call that arrives meanwhile joins the next —
// so concurrent writers share one WAL sync however fast they come. Each call stays atomic
// (one group = one WriteBatch), calls are applied in call order, and a call resolves only
// after its group's write (and sync) returned. On a worker thread by default, so an fsync
// never blocks the event loop; a small unsynced group, which waits for no disk, is written
// on the calling thread instead (see `inlineUnsyncedBytes`), and so is a small synced one when
// the caller says its thread may wait for the disk (see `inlineSynced`).
import { Worker } from "node:worker_threads";
import type { ColumnHandle, RocksBatchLike, RocksLevelLike } from "./rocks-binding.js";
import { RocksError } from "./rocks-error.js";

/** One key write of a call. */
export type RocksWriteOp =
  | {
      readonly column: string;
      readonly type: "put";
      readonly key: Uint8Array;
      readonly value: Uint8Array;
    }
  | { readonly column: string; readonly type: "del"; readonly key: Uint8Array };

/** Counters of a writer. */
export interface GroupCommitStats {
  /** Write calls accepted. */
  readonly calls: number;
  /** WriteBatches written (groups). */
  readonly batches: number;
  /** Of those, synced. */
  readonly syncedBatches: number;
  /** Largest number of calls in one batch. */
  readonly maxBatchCalls: number;
  /** Of the batches, written on the calling thread although a worker writes the others. */
  readonly inlineBatches: number;
  /**
   * How long a synced batch's write and fsync took lately, on whichever thread wrote it
   * (ms, a moving average over the last few: each new one weighs 1/4); 0 before the first.
   */
  readonly syncMs: number;
  /** Where batches are written. */
  readonly thread: "worker" | "main";
}

/** Heap of the write worker's isolate, bytes. */
export interface WorkerHeap {
  /** Live objects on its heap. */
  readonly usedBytes: number;
  /** Memory outside the heap its objects hold (ArrayBuffers such as the batches it is sent). */
  readonly externalBytes: number;
}

/** The writer of one database. */
export interface GroupCommitWriter {
  /**
   * Queues `ops` as one atomic unit; resolves once written (and synced when `sync`, or when
   * any call of its group asked for a sync). A failed group rejects every call in it and
   * every call queued behind it (they may depend on it); later calls are written normally.
   */
  write(ops: readonly RocksWriteOp[], options?: { sync?: boolean }): Promise<void>;
  /**
   * Removes every key in [`gte`, `lt`) of `column` with one range deletion (RocksDB
   * `DeleteRange`, not synced), in call order with the writes: after every call made before
   * it, before every call made after. A group of its own, on the writer's thread, so the
   * event loop does not wait for a synced write in progress (the WAL's lock).
   */
  clear(column: string, gte: Uint8Array, lt: Uint8Array): Promise<void>;
  stats(): GroupCommitStats;
  /**
   * The write worker's V8 heap (its own isolate: the process's heap metrics do not include
   * it); `undefined` on the main thread or once the worker stopped.
   */
  workerHeap(): Promise<WorkerHeap | undefined>;
  /** Waits for queued calls, stops the worker, then refuses new calls (`closed`). */
  close(): Promise<void>;
}

/** Options of {@link createGroupCommitWriter}. */
export interface GroupCommitWriterOptions {
  readonly db: RocksLevelLike;
  /** Every column family a call may name. */
  readonly columns: readonly string[];
  /**
   * `"worker"` (default when `access` is given): batches are written on a worker thread
   * through the same open database. `"main"`: on the calling thread (the binding's write is
   * synchronous, so an fsync blocks the event loop; for injected bindings).
   */
  readonly thread?: "worker" | "main";
  /** What the worker needs to reach the open database: its native handle and the binding path. */
  readonly access?: { readonly handle: bigint; readonly modulePath: string };
  /** Upper bound of calls in one batch. Default 4096. */
  readonly maxBatchCalls?: number;
  /** Upper bound of one batch's payload bytes. Default 64 MiB. */
  readonly maxBatchBytes?: number;
  /**
   * With a worker: an unsynced batch of at most this many payload bytes is written on the
   * calling thread instead, unless RocksDB reports a write stall or slowdown
   * (`rocksdb.is-write-stopped`, `rocksdb.actual-delayed-write-rate`) or is flushing a
   * memtable (`rocksdb.num-running-flushes`). Such a write is a
   * memtable insert and a WAL append to the page cache: waking the worker and hearing back
   * cost more (an apply batch of 10 Raft entries: 42 µs of CPU per entry inline against
   * 63 µs through the worker, measured). Default 256 KiB; 0 sends every batch to the worker.
   * The same limit and checks apply to a synced batch that {@link inlineSynced} lets through.
   */
  readonly inlineUnsyncedBytes?: number;
  /**
   * With a worker: asked when a synced batch of at most `inlineUnsyncedBytes` starts; `true`
   * writes it, fsync included, on the calling thread, which waits for the disk. For a caller
   * that has nothing more urgent to do meanwhile (a Raft node that leads no group with writes
   * in flight): the worker's round trip costs more CPU than the write (see the package
   * README). Default: never. Not asked while synced batches took more than
   * {@link inlineSyncedMaxMs} lately.
   */
  readonly inlineSynced?: () => boolean;
  /**
   * A slow disk's guard for {@link inlineSynced}: while the moving average of synced batches'
   * write time (`stats().syncMs`, measured on whichever thread wrote them) is above this,
   * synced batches go to the worker without asking, so the calling thread never waits that
   * long per batch; they come back once the worker's writes are fast again. Default 10 ms
   * (etcd's documentation asks a disk for a 99th-percentile WAL fsync under 10 ms; the
   * wall time also counts waits for a CPU, which a busy machine adds to a fast disk's).
   */
  readonly inlineSyncedMaxMs?: number;
  /**
   * Defers the start of a group when a call finds the writer idle. Default `setImmediate`:
   * the calls of one turn of the event loop share the group. A caller that defers its own
   * work to the end of a turn passes its scheduler, one that runs work deferred from inside
   * that work in the same check phase: an immediate queued while immediates run waits for the
   * next turn, after its I/O.
   */
  readonly schedule?: (start: () => void) => void;
  /** For tests: called before each batch is written; throwing fails the batch. */
  readonly beforeBatch?: (calls: number) => void;
}

/** A range deletion, a call of its own (see {@link GroupCommitWriter.clear}). */
interface RangeDelete {
  readonly column: string;
  readonly gte: Uint8Array;
  readonly lt: Uint8Array;
}

interface Call {
  readonly ops: readonly RocksWriteOp[];
  readonly range?: RangeDelete;
  readonly sync: boolean;
  readonly bytes: number;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Writes one group: its calls, whether to sync, and its payload bytes (the calls' `bytes`).
 * Resolves with the ms the write (and its sync) took on the thread that did it.
 */
type BatchSink = (calls: readonly Call[], sync: boolean, bytes: number) => Promise<number>;

/** Where groups are written: batches, and range deletions (a group of their own each). */
interface Sink {
  readonly batch: BatchSink;
  readonly clear: (range: RangeDelete) => Promise<void>;
}

function sizeOf(ops: readonly RocksWriteOp[]): number {
  let n = 0;
  for (const op of ops) n += 10 + op.key.length + (op.type === "put" ? op.value.length : 0);
  return n;
}

/** The worker file next to this module (`.ts` from sources, `.js` from `dist/`). */
function workerUrl(): URL {
  const ext = import.meta.url.endsWith(".ts") ? "ts" : "js";
  return new URL(`./write-worker.${ext}`, import.meta.url);
}

function workerSink(
  access: { handle: bigint; modulePath: string },
  columns: readonly string[],
): Sink & {
  ready: Promise<void>;
  heap(): Promise<WorkerHeap | undefined>;
  stop(): Promise<void>;
} {
  const worker = new Worker(workerUrl(), {
    workerData: { handle: access.handle, modulePath: access.modulePath, columns },
  });
  worker.unref();
  const pending = new Map<
    number,
    { resolve: (ms: number) => void; reject: (e: unknown) => void }
  >();
  let next = 0;
  let failure: unknown;
  const ready = new Promise<void>((resolve, reject) => {
    worker.once("message", (m: { ready?: boolean; fatal?: string }) => {
      if (m.ready === true) resolve();
      else reject(new RocksError("io", `the RocksDB write worker failed to start: ${m.fatal}`));
    });
  });
  ready.catch(() => undefined);
  const failAll = (e: unknown): void => {
    failure ??= e;
    for (const p of pending.values()) p.reject(e);
    pending.clear();
  };
  worker.on("message", (m: { id?: number; ms?: number; error?: string }) => {
    if (m.id === undefined) return;
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (pending.size === 0) worker.unref();
    if (m.error === undefined) p?.resolve(m.ms ?? 0);
    else p?.reject(new RocksError("io", `RocksDB write failed: ${m.error}`));
  });
  worker.on("error", (e) => failAll(RocksError.from(e)));
  worker.on("exit", () => failAll(new RocksError("closed", "the RocksDB write worker exited")));
  const index = new Map(columns.map((c, i) => [c, i]));
  const post = (buf: Uint8Array<ArrayBuffer>, sync: boolean): Promise<number> =>
    new Promise<number>((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      worker.ref(); // a write in flight keeps the process alive
      worker.postMessage({ id, sync, buf: buf.buffer }, [buf.buffer]);
    });
  return {
    ready,
    async heap() {
      try {
        const h = await worker.getHeapStatistics();
        return { usedBytes: h.used_heap_size, externalBytes: h.external_memory };
      } catch {
        return undefined; // the worker stopped (ERR_WORKER_NOT_RUNNING)
      }
    },
    async clear(range) {
      await ready;
      if (failure !== undefined) throw failure;
      const col = index.get(range.column);
      if (col === undefined) throw new RocksError("io", `unknown column family ${range.column}`);
      const buf = new Uint8Array(10 + range.gte.length + range.lt.length);
      const view = new DataView(buf.buffer);
      buf[0] = 3;
      buf[1] = col;
      view.setUint32(2, range.gte.length, true);
      buf.set(range.gte, 6);
      view.setUint32(6 + range.gte.length, range.lt.length, true);
      buf.set(range.lt, 10 + range.gte.length);
      await post(buf, false);
    },
    async batch(calls, sync) {
      await ready;
      if (failure !== undefined) throw failure;
      let size = 0;
      for (const c of calls)
        for (const op of c.ops)
          size += 6 + op.key.length + (op.type === "put" ? 4 + op.value.length : 0);
      const buf = new Uint8Array(size);
      const view = new DataView(buf.buffer);
      let at = 0;
      for (const c of calls) {
        for (const op of c.ops) {
          const col = index.get(op.column);
          if (col === undefined) throw new RocksError("io", `unknown column family ${op.column}`);
          buf[at] = op.type === "put" ? 1 : 2;
          buf[at + 1] = col;
          view.setUint32(at + 2, op.key.length, true);
          buf.set(op.key, at + 6);
          at += 6 + op.key.length;
          if (op.type === "put") {
            view.setUint32(at, op.value.length, true);
            buf.set(op.value, at + 4);
            at += 4 + op.value.length;
          }
        }
      }
      return post(buf, sync);
    },
    async stop() {
      await worker.terminate();
    },
  };
}

/** A batch that held more than this is replaced, not cleared (see `mainSink`). */
const REUSED_BATCH_MAX_BYTES = 1024 * 1024;

/** Typed arrays up to this many bytes are allocated on V8's heap (`typed_array_max_size_in_heap`). */
const ON_HEAP_MAX = 64;

function mainSink(db: RocksLevelLike): Sink {
  // Column options built once per writer (a database's column families do not change).
  const handles = new Map<string, { column: ColumnHandle }>();
  const column = (name: string): { column: ColumnHandle } => {
    let h = handles.get(name);
    if (h === undefined) {
      const handle = db.columns[name];
      if (handle === undefined) throw new RocksError("io", `unknown column family ${name}`);
      h = { column: handle };
      handles.set(name, h);
    }
    return h;
  };
  let batch: RocksBatchLike | undefined;
  const clear = async (range: RangeDelete): Promise<void> => {
    await db._clear({ column: column(range.column).column, gte: range.gte, lt: range.lt });
  };
  const write: BatchSink = async (calls, sync, bytes) => {
    // Keys and values of at most 64 bytes live on V8's heap, and the binding reading one
    // makes V8 move it off the heap first (an allocation and a copy each). Copied into one
    // off-heap buffer they are read in place: 2.2-2.7 µs of CPU per put instead of
    // 3.2-4.1 µs, for batches of 30 keys of 32 bytes and values of 40 (measured).
    let small = 0;
    for (const c of calls) {
      for (const op of c.ops) {
        if (op.key.byteLength <= ON_HEAP_MAX) small += op.key.byteLength;
        if (op.type === "put" && op.value.byteLength <= ON_HEAP_MAX) small += op.value.byteLength;
      }
    }
    const pack = small === 0 ? undefined : Buffer.allocUnsafe(Math.max(small, ON_HEAP_MAX + 1));
    let at = 0;
    const offHeap = (b: Uint8Array): Uint8Array => {
      if (pack === undefined || b.byteLength > ON_HEAP_MAX) return b;
      pack.set(b, at);
      at += b.byteLength;
      return pack.subarray(at - b.byteLength, at);
    };
    // The binding's synchronous internals, as the write worker uses them (see RocksBatchLike),
    // on one batch cleared after each write (the database closes it with itself), and a new
    // one after a large write, whose buffer the cleared batch would keep.
    batch ??= db.batch();
    try {
      for (const c of calls) {
        for (const op of c.ops) {
          if (op.type === "put") batch._put(offHeap(op.key), offHeap(op.value), column(op.column));
          else batch._del(offHeap(op.key), column(op.column));
        }
      }
      const start = performance.now();
      batch._writeSync({ sync });
      return performance.now() - start;
    } finally {
      if (bytes <= REUSED_BATCH_MAX_BYTES) batch._clear();
      else {
        batch._closeSync();
        db.detachResource(batch);
        batch = undefined;
      }
    }
  };
  return { batch: write, clear };
}

/**
 * Creates the group-commit writer of an open database (see the module comment).
 *
 * @example
 * ```ts
 * const writer = createGroupCommitWriter({ db, columns: ["data"], access });
 * await Promise.all([writer.write([putA], { sync: true }), writer.write([putB], { sync: true })]);
 * ```
 */
export async function createGroupCommitWriter(
  o: GroupCommitWriterOptions,
): Promise<GroupCommitWriter> {
  const thread = o.thread ?? (o.access === undefined ? "main" : "worker");
  if (thread === "worker" && o.access === undefined) {
    throw new RocksError(
      "unavailable",
      "a worker-thread writer needs the database's native handle",
    );
  }
  const worker =
    thread === "worker"
      ? workerSink(o.access as { handle: bigint; modulePath: string }, o.columns)
      : undefined;
  if (worker !== undefined) {
    try {
      await worker.ready;
    } catch (err) {
      await worker.stop();
      throw err;
    }
  }
  const direct = mainSink(o.db);
  const sink: Sink = worker ?? direct;
  const maxCalls = o.maxBatchCalls ?? 4096;
  const maxBytes = o.maxBatchBytes ?? 64 * 1024 * 1024;
  const inlineBytes = worker === undefined ? 0 : (o.inlineUnsyncedBytes ?? 256 * 1024);
  const inlineSyncedMaxMs = o.inlineSyncedMaxMs ?? 10;
  /** Moving average of synced batches' write time (ms); undefined before the first. */
  let syncMs: number | undefined;
  const schedule = o.schedule ?? setImmediate;
  // A stalled or slowed-down RocksDB would hold the calling thread (the event loop) in its
  // write. So would a write that fills a memtable while the previous one is still being
  // flushed (with RocksDB's two write buffers that stops writes at once, no slowdown first):
  // while any flush runs, unsynced groups go to the worker too.
  const stalled = (): boolean =>
    o.db.getProperty("rocksdb.is-write-stopped") !== "0" ||
    o.db.getProperty("rocksdb.actual-delayed-write-rate") !== "0" ||
    o.db.getProperty("rocksdb.num-running-flushes") !== "0";
  let queue: Call[] = [];
  let writing = false;
  let scheduled = false;
  let closed = false;
  let idle: (() => void) | undefined;
  const counters = { calls: 0, batches: 0, syncedBatches: 0, maxBatchCalls: 0, inlineBatches: 0 };

  const pump = (): void => {
    scheduled = false;
    if (writing) return;
    if (queue.length === 0) {
      idle?.();
      return;
    }
    let take = 0;
    let bytes = 0;
    // A range deletion is a group of its own (a WriteBatch of the binding cannot hold one).
    if ((queue[0] as Call).range !== undefined) take = 1;
    else {
      while (
        take < queue.length &&
        take < maxCalls &&
        (take === 0 || bytes + (queue[take] as Call).bytes <= maxBytes) &&
        (queue[take] as Call).range === undefined
      ) {
        bytes += (queue[take] as Call).bytes;
        take++;
      }
    }
    const group = queue.slice(0, take);
    queue = queue.slice(take);
    let sync = false;
    for (const c of group) if (c.sync) sync = true;
    writing = true;
    counters.batches++;
    if (sync) counters.syncedBatches++;
    counters.maxBatchCalls = Math.max(counters.maxBatchCalls, group.length);
    const done = (): void => {
      writing = false;
      pump();
    };
    let started: Promise<unknown>;
    try {
      o.beforeBatch?.(group.length);
      const range = group[0]?.range;
      if (range !== undefined) started = sink.clear(range);
      else if (
        inlineBytes > 0 &&
        bytes <= inlineBytes &&
        (!sync || ((syncMs ?? 0) <= inlineSyncedMaxMs && o.inlineSynced?.() === true)) &&
        !stalled()
      ) {
        counters.inlineBatches++;
        started = direct.batch(group, sync, bytes);
      } else {
        started = sink.batch(group, sync, bytes);
      }
    } catch (err) {
      started = Promise.reject(err);
    }
    started.then(
      (ms) => {
        if (sync && typeof ms === "number")
          syncMs = syncMs === undefined ? ms : syncMs + (ms - syncMs) / 4;
        for (const c of group) c.resolve();
        done();
      },
      (err: unknown) => {
        // Calls queued behind a failed group may have been planned on its effects.
        const e = RocksError.from(err);
        const failed = [...group, ...queue];
        queue = [];
        for (const c of failed) c.reject(e);
        done();
      },
    );
  };

  const enqueue = (call: Omit<Call, "resolve" | "reject">): Promise<void> => {
    if (closed) return Promise.reject(new RocksError("closed", "the RocksDB writer is closed"));
    counters.calls++;
    return new Promise<void>((resolve, reject) => {
      queue.push({ ...call, resolve, reject });
      // A new group starts at the end of this turn (so one turn's calls share it); while a
      // group is being written, calls simply wait for the next one.
      if (!writing && !scheduled) {
        scheduled = true;
        schedule(pump);
      }
    });
  };

  return {
    write: (ops, options = {}) =>
      enqueue({ ops, sync: options.sync !== false, bytes: sizeOf(ops) }),
    clear: (column, gte, lt) =>
      enqueue({ ops: [], range: { column, gte, lt }, sync: false, bytes: gte.length + lt.length }),
    stats: () => ({ ...counters, syncMs: syncMs ?? 0, thread }),
    workerHeap: () => worker?.heap() ?? Promise.resolve(undefined),
    async close() {
      if (closed) return;
      closed = true;
      if (writing || queue.length > 0 || scheduled) {
        await new Promise<void>((resolve) => {
          idle = resolve;
          if (!writing && !scheduled) pump();
        });
      }
      await worker?.stop();
    },
  };
}
