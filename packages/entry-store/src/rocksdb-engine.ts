import {
  type ColumnHandle,
  type GroupCommitWriter,
  isRocksError,
  openRocksDatabase,
  type RocksDatabase,
  type RocksIteratorLike,
  type RocksLevelConstructor,
  type RocksLevelLike,
  type RocksWriteOp,
  type WorkerHeap,
} from "@oprc/rocksdb";
import { compareBytes } from "./bytes.js";
import type {
  Keyspace,
  KvEngine,
  KvEntry,
  KvIterator,
  KvIteratorOptions,
  KvShard,
  KvWriteOp,
  KvWriteOptions,
} from "./kv.js";
import { validateShardName } from "./memory-engine.js";
import { StoreError } from "./store-error.js";

/** The binding module shape: `{ RocksLevel }` of `@nxtedition/rocksdb`. */
export interface RocksBinding {
  /** The `RocksLevel` class. */
  RocksLevel: new (
    location: string,
    options: Record<string, unknown>,
  ) => unknown;
}

/** Options of {@link openRocksEngine}. */
export interface RocksEngineOptions {
  /** Directory of the database; created when missing. */
  location: string;
  /**
   * Kept for compatibility; writes are always group-committed: every write issued while a
   * batch is being written (by any shard of this engine) joins the next batch, and each
   * caller's ops stay atomic.
   */
  groupCommit?: boolean;
  /**
   * Where write batches are written. `"worker"` (default): on a worker thread sharing the
   * database handle, so a synced write never blocks the event loop. `"main"`: on the JS
   * thread (the binding writes synchronously). An injected `binding` always uses `"main"`.
   */
  writeThread?: "main" | "worker";
  /**
   * Where point reads run. `"main"` (default): on the JS thread through the binding's
   * synchronous multi-get — microseconds when the data is cached, but a read that misses
   * the cache waits for the disk on the event loop. `"pool"`: on libuv's thread pool
   * (about 20–50 µs more per read, never blocking the event loop). Iterators always use
   * the pool.
   */
  readThread?: "main" | "pool";
  /** Create the database when missing. Default true. */
  createIfMissing?: boolean;
  /**
   * The `@nxtedition/rocksdb` module, injected. Default: loaded with `import()` on first
   * use; a missing module fails with an `unavailable` error.
   */
  binding?: RocksBinding;
  /** Extra options passed to the binding's `open` (e.g. `{ parallelism: 2 }`). Default none. */
  openOptions?: Record<string, unknown>;
}

/** Write counters of a RocksDB engine, for observing group commit. */
export interface RocksEngineStats {
  /** `write` calls accepted from shards. */
  writes: number;
  /** RocksDB write batches issued (≤ `writes`: group commit). */
  batches: number;
  /** Of those, how many were synced. */
  syncedBatches: number;
  /** Where batches are written: `"main"` or `"worker"`. */
  writeThread: "main" | "worker";
}

/** A RocksDB-backed {@link KvEngine}. */
export interface RocksEngine extends KvEngine {
  readonly kind: "rocksdb";
  /** The database directory. */
  readonly location: string;
  /** Write counters since open. */
  stats(): RocksEngineStats;
  /**
   * The write worker's V8 heap (not part of the process's heap metrics); `undefined` when
   * writes run on the main thread or the engine is closed.
   */
  writeWorkerHeap(): Promise<WorkerHeap | undefined>;
}

/** Column families of the layout; `default` is required by RocksDB and stays empty. */
const COLUMNS: readonly Keyspace[] = ["objects", "blobs", "system"];
/** Engine-level records in the `system` column family live under tag 0 (no shard has it). */
const ENGINE_TAG = new Uint8Array(4);
const SHARD_NAME_PREFIX = new TextEncoder().encode("shard/");
const NEXT_TAG_KEY = concat(ENGINE_TAG, new TextEncoder().encode("next-tag"));
const MAX_TAG = 0xfffffffe;

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

function u32be(n: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, n, false);
  return out;
}

function readU32be(b: Uint8Array): number {
  if (b.length !== 4)
    throw new StoreError("corrupt_record", `shard tag must be 4 bytes, got ${b.length}`);
  return new DataView(b.buffer, b.byteOffset, 4).getUint32(0, false);
}

class RocksShard implements KvShard {
  private readonly end: Uint8Array;

  constructor(
    readonly name: string,
    readonly tag: Uint8Array,
    private readonly engine: RocksEngineImpl,
  ) {
    this.end = u32be(readU32be(tag) + 1);
  }

  private key(key: Uint8Array): Uint8Array {
    return concat(this.tag, key);
  }

  async get(keyspace: Keyspace, key: Uint8Array): Promise<Uint8Array | undefined> {
    const [v] = await this.getMany(keyspace, [key]);
    return v;
  }

  getMany(keyspace: Keyspace, keys: readonly Uint8Array[]): Promise<(Uint8Array | undefined)[]> {
    try {
      const db = this.engine.use();
      const full = keys.map((k) => this.key(k));
      const column = { column: this.engine.column(keyspace) };
      // Point reads are served on this thread: a hit in the memtable or block cache costs a
      // few microseconds, far less than a hop through libuv's thread pool and back.
      if (this.engine.syncReads) return Promise.resolve(db._getManySync(full, column));
      return db.getMany(full, column).catch((err: unknown) => {
        throw this.engine.ioError(err);
      });
    } catch (err) {
      return Promise.reject(this.engine.ioError(err));
    }
  }

  iterator(keyspace: Keyspace, options: KvIteratorOptions = {}): KvIterator {
    const db = this.engine.use();
    const o: Record<string, unknown> = {
      column: this.engine.column(keyspace),
      reverse: options.reverse === true,
      values: options.keysOnly !== true,
      keyEncoding: "buffer",
      valueEncoding: "buffer",
    };
    let lower = this.tag;
    if (options.gte !== undefined) o.gte = lower = this.key(options.gte);
    else if (options.gt !== undefined) o.gt = lower = this.key(options.gt);
    else o.gte = this.tag;
    if (options.lt !== undefined) o.lt = this.key(options.lt);
    else if (options.lte !== undefined) o.lte = this.key(options.lte);
    else o.lt = this.end;
    if (options.limit !== undefined && options.limit >= 0) o.limit = options.limit;
    let it: RocksIteratorLike;
    try {
      it = db.iterator(o);
    } catch (err) {
      throw this.engine.ioError(err);
    }
    const engine = this.engine;
    let closed = false;
    return {
      async next(max: number): Promise<KvEntry[]> {
        if (closed) throw new StoreError("closed", "iterator is closed");
        engine.use();
        let rows: [Uint8Array, Uint8Array][];
        try {
          rows = await it.nextv(max);
        } catch (err) {
          throw engine.ioError(err);
        }
        const out: KvEntry[] = new Array(rows.length);
        for (let i = 0; i < rows.length; i++) {
          const row = rows[i] as [Uint8Array, Uint8Array];
          out[i] = [row[0].subarray(4), row[1] ?? new Uint8Array(0)];
        }
        return out;
      },
      seek: (key: Uint8Array): void => {
        if (options.reverse === true) {
          throw new StoreError("invalid_argument", "seek is supported on forward iterators only");
        }
        let target = this.key(key);
        if (compareBytes(target, lower) < 0) target = lower;
        it.seek(target);
      },
      async close(): Promise<void> {
        if (closed) return;
        closed = true;
        try {
          await it.close();
        } catch {
          // Closing an iterator of a closed database is harmless.
        }
      },
    };
  }

  write(ops: readonly KvWriteOp[], options: KvWriteOptions = {}): Promise<void> {
    return this.engine.submit(this.tag, ops, options.sync !== false);
  }

  clear(keyspace: Keyspace, range: { gte: Uint8Array; lt: Uint8Array }): Promise<void> {
    return this.engine.submitClear(keyspace, this.key(range.gte), this.key(range.lt));
  }
}

class RocksEngineImpl implements RocksEngine {
  readonly kind = "rocksdb" as const;
  readonly location: string;
  private readonly shards = new Map<string, RocksShard>();
  private opening: Promise<unknown> = Promise.resolve();
  private open = true;
  private readonly db: RocksLevelLike;
  private readonly writer: GroupCommitWriter;

  constructor(
    private readonly database: RocksDatabase,
    readonly syncReads: boolean,
  ) {
    this.location = database.location;
    this.db = database.db;
    this.writer = database.writer;
  }

  use(): RocksLevelLike {
    if (!this.open) throw new StoreError("closed", `RocksDB engine ${this.location} is closed`);
    return this.db;
  }

  column(keyspace: Keyspace): ColumnHandle {
    const c = this.db.columns[keyspace];
    if (c === undefined) throw new StoreError("io", `column family ${keyspace} is missing`);
    return c;
  }

  ioError(err: unknown): StoreError {
    if (!this.open)
      return new StoreError("closed", `RocksDB engine ${this.location} is closed`, { cause: err });
    return StoreError.from(err, "io");
  }

  writeWorkerHeap(): Promise<WorkerHeap | undefined> {
    return this.writer.workerHeap();
  }

  stats(): RocksEngineStats {
    const s = this.writer.stats();
    return {
      writes: s.calls,
      batches: s.batches,
      syncedBatches: s.syncedBatches,
      writeThread: s.thread,
    };
  }

  openShard(name: string): Promise<KvShard> {
    const run = async (): Promise<KvShard> => {
      this.use();
      validateShardName(name);
      const cached = this.shards.get(name);
      if (cached !== undefined) return cached;
      const nameKey = concat(ENGINE_TAG, concat(SHARD_NAME_PREFIX, new TextEncoder().encode(name)));
      const system = this.column("system");
      const [existing, next] = await this.db.getMany([nameKey, NEXT_TAG_KEY], { column: system });
      let tag: Uint8Array;
      if (existing !== undefined) {
        readU32be(existing);
        tag = Uint8Array.from(existing);
      } else {
        const n = next === undefined ? 1 : readU32be(next);
        if (n > MAX_TAG)
          throw new StoreError("invalid_argument", "too many shards in one database");
        tag = u32be(n);
        await this.writer.write(
          [
            { column: "system", type: "put", key: nameKey, value: tag },
            { column: "system", type: "put", key: NEXT_TAG_KEY, value: u32be(n + 1) },
          ],
          { sync: true },
        );
      }
      const shard = new RocksShard(name, tag, this);
      this.shards.set(name, shard);
      return shard;
    };
    const p = this.opening.then(run, run);
    this.opening = p.catch(() => undefined);
    return p.catch((err: unknown) => {
      throw this.ioError(err);
    });
  }

  async listShards(): Promise<string[]> {
    const db = this.use();
    const prefix = concat(ENGINE_TAG, SHARD_NAME_PREFIX);
    const end = concat(ENGINE_TAG, new TextEncoder().encode("shard0"));
    const it = db.iterator({
      column: this.column("system"),
      gte: prefix,
      lt: end,
      values: false,
      keyEncoding: "buffer",
      valueEncoding: "buffer",
    });
    const names: string[] = [];
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const rows = await it.nextv(1000);
        if (rows.length === 0) break;
        for (const [k] of rows) names.push(decoder.decode(k.subarray(prefix.length)));
      }
    } finally {
      await it.close();
    }
    return names.sort();
  }

  /** One shard's atomic write, through the database's group-commit writer. */
  submit(tag: Uint8Array, ops: readonly KvWriteOp[], sync: boolean): Promise<void> {
    try {
      this.use();
    } catch (err) {
      return Promise.reject(err);
    }
    const writes: RocksWriteOp[] = ops.map((op) =>
      op.type === "put"
        ? { column: op.keyspace, type: "put", key: concat(tag, op.key), value: op.value }
        : { column: op.keyspace, type: "del", key: concat(tag, op.key) },
    );
    return this.written(this.writer.write(writes, { sync }));
  }

  /** A range deletion of full keys, through the writer (in order with the writes). */
  submitClear(keyspace: Keyspace, gte: Uint8Array, lt: Uint8Array): Promise<void> {
    try {
      this.use();
    } catch (err) {
      return Promise.reject(err);
    }
    return this.written(this.writer.clear(keyspace, gte, lt));
  }

  private written(write: Promise<void>): Promise<void> {
    return write.catch((err: unknown) => {
      if (!this.open || isRocksError(err, "closed")) throw this.ioError(err);
      // RocksDB keeps refusing writes after a failed one (a background error) until the
      // database is reopened: say so, so the host can report that it needs a restart.
      const detail = err instanceof Error ? err.message : String(err);
      throw new StoreError(
        "write_failed",
        `${detail}; RocksDB refuses writes until the database is reopened (restart the node)`,
        { cause: err },
      );
    });
  }

  async close(): Promise<void> {
    if (!this.open) return;
    // Refuse new writes; the writer lets queued ones land before the database closes.
    this.open = false;
    try {
      await this.database.close();
    } catch (err) {
      throw StoreError.from(err, "io");
    }
  }
}

/**
 * Opens (creating if needed) a RocksDB database as a storage engine. One database holds
 * many shards: column families `objects`, `blobs` and `system`, each key prefixed by the
 * shard's 4-byte tag (allocated on first open and recorded in `system`). Opening a
 * database another process (or another engine in this process) holds fails with a
 * `locked` {@link StoreError}; a missing binding fails with `unavailable`.
 *
 * @example
 * ```ts
 * import { openRocksEngine } from "@oprc/entry-store/rocksdb";
 * const engine = await openRocksEngine({ location: "./data/db" });
 * const store = await createEntryStore({ engine, shard: "orders/0" });
 * ```
 */
export async function openRocksEngine(options: RocksEngineOptions): Promise<RocksEngine> {
  try {
    const database = await openRocksDatabase({
      location: options.location,
      columns: COLUMNS,
      createIfMissing: options.createIfMissing !== false,
      ...(options.openOptions === undefined ? {} : { openOptions: options.openOptions }),
      ...(options.binding === undefined
        ? {}
        : { binding: options.binding.RocksLevel as unknown as RocksLevelConstructor }),
      writeThread: options.writeThread ?? "worker",
    });
    return new RocksEngineImpl(database, options.readThread !== "pool");
  } catch (err) {
    throw toStoreError(err);
  }
}

/** The adapter's errors as the store's: a held lock is `locked`, a missing binding `unavailable`. */
function toStoreError(err: unknown): StoreError {
  if (isRocksError(err)) {
    const code =
      err.code === "locked" ? "locked" : err.code === "unavailable" ? "unavailable" : "io";
    return new StoreError(code, err.message.replace(/^\[[a-z_]+\] /, ""), { cause: err });
  }
  return StoreError.from(err, "io");
}
