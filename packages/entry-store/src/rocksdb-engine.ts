import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
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
import { WRITE_WORKER_SOURCE } from "./rocksdb-write-worker.js";
import { StoreError } from "./store-error.js";

// Minimal structural types of the parts of `@nxtedition/rocksdb` (abstract-level 1.x) we use.
type ColumnHandle = object;
interface RocksBatch {
  put(key: Uint8Array, value: Uint8Array, options: { column: ColumnHandle }): unknown;
  del(key: Uint8Array, options: { column: ColumnHandle }): unknown;
  write(options: { sync: boolean }): Promise<void>;
  close(): Promise<void>;
}
interface RocksIterator {
  nextv(size: number): Promise<[Uint8Array, Uint8Array][]>;
  seek(target: Uint8Array): void;
  close(): Promise<void>;
}
interface RocksLevelInstance {
  readonly columns: Record<string, ColumnHandle>;
  open(options: Record<string, unknown>): Promise<void>;
  close(): Promise<void>;
  batch(): RocksBatch;
  getMany(
    keys: Uint8Array[],
    options: { column: ColumnHandle },
  ): Promise<(Uint8Array | undefined)[]>;
  iterator(options: Record<string, unknown>): RocksIterator;
}

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
   * Group commit: writes issued in the same event-loop turn (by any shard of this
   * engine) are merged into one RocksDB write batch and one WAL sync. Each caller's ops
   * stay atomic (a superset of atomic batches is atomic). Default true.
   */
  groupCommit?: boolean;
  /**
   * Where write batches are written. `"main"` (default): on the JS thread, as the binding
   * does (a synced write blocks the event loop for one WAL sync). `"worker"`: on a worker
   * thread sharing the database handle, so the event loop keeps serving while the WAL
   * syncs; one batch is in flight at a time and writes arriving meanwhile form the next
   * group. Needs the binding to be loaded by this package (not injected); otherwise the
   * engine falls back to `"main"`.
   */
  writeThread?: "main" | "worker";
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
  /** RocksDB write batches issued (≤ `writes` with group commit). */
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

/** Resolved path of the binding module, for the write worker; `undefined` when unresolvable. */
function bindingPath(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve("@nxtedition/rocksdb");
  } catch {
    return undefined;
  }
}

/** The write worker: posts packed batches and resolves when the worker has written them. */
class WriteWorker {
  private readonly worker: Worker;
  private readonly pending = new Map<
    number,
    { resolve: () => void; reject: (e: unknown) => void }
  >();
  private nextId = 0;
  private failure: unknown;
  readonly ready: Promise<void>;

  constructor(handle: bigint, modulePath: string) {
    this.worker = new Worker(WRITE_WORKER_SOURCE, {
      eval: true,
      workerData: { handle, modulePath, columns: COLUMNS },
    });
    this.worker.unref();
    this.ready = new Promise<void>((resolve, reject) => {
      this.worker.once("message", (m: { ready?: boolean; fatal?: string }) => {
        if (m.ready === true) resolve();
        else reject(new StoreError("io", `RocksDB write worker failed to start: ${m.fatal}`));
      });
    });
    this.ready.catch(() => undefined);
    this.worker.on("message", (m: { id?: number; error?: string }) => {
      if (m.id === undefined) return;
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (this.pending.size === 0) this.worker.unref();
      if (m.error === undefined) p?.resolve();
      else p?.reject(new StoreError("io", `RocksDB write failed: ${m.error}`));
    });
    this.worker.on("error", (e) => this.failAll(StoreError.from(e, "io")));
    this.worker.on("exit", () =>
      this.failAll(new StoreError("closed", "RocksDB write worker exited")),
    );
  }

  private failAll(e: unknown): void {
    this.failure ??= e;
    for (const p of this.pending.values()) p.reject(e);
    this.pending.clear();
  }

  async write(buf: Uint8Array, sync: boolean): Promise<void> {
    await this.ready;
    if (this.failure !== undefined) throw this.failure;
    return new Promise<void>((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject });
      this.worker.ref(); // a write in flight keeps the process alive
      this.worker.postMessage({ id, sync, buf: buf.buffer }, [buf.buffer as ArrayBuffer]);
    });
  }

  async stop(): Promise<void> {
    await this.worker.terminate();
  }
}

/** Packs a group of shard writes into the worker's record format. */
function packGroup(group: readonly PendingWrite[]): Uint8Array {
  let size = 0;
  for (const w of group) {
    for (const op of w.ops)
      size += 6 + w.tag.length + op.key.length + (op.type === "put" ? 4 + op.value.length : 0);
  }
  const buf = new Uint8Array(size);
  const view = new DataView(buf.buffer);
  let at = 0;
  for (const w of group) {
    for (const op of w.ops) {
      buf[at] = op.type === "put" ? 1 : 2;
      buf[at + 1] = COLUMNS.indexOf(op.keyspace);
      view.setUint32(at + 2, w.tag.length + op.key.length, true);
      buf.set(w.tag, at + 6);
      buf.set(op.key, at + 6 + w.tag.length);
      at += 6 + w.tag.length + op.key.length;
      if (op.type === "put") {
        view.setUint32(at, op.value.length, true);
        buf.set(op.value, at + 4);
        at += 4 + op.value.length;
      }
    }
  }
  return buf;
}

async function loadBinding(): Promise<RocksBinding> {
  try {
    // A variable specifier: the binding ships no types, and we only need `RocksLevel`.
    const specifier = "@nxtedition/rocksdb";
    const mod = (await import(specifier)) as Partial<RocksBinding> & {
      default?: Partial<RocksBinding>;
    };
    const RocksLevel = mod.RocksLevel ?? mod.default?.RocksLevel;
    if (typeof RocksLevel !== "function") throw new Error("module has no RocksLevel export");
    return { RocksLevel };
  } catch (err) {
    throw new StoreError(
      "unavailable",
      `the RocksDB backend needs the optional dependency @nxtedition/rocksdb (12.x) and its prebuilt binary: ${
        err instanceof Error ? err.message : String(err)
      }`,
      { cause: err },
    );
  }
}

function mapOpenError(err: unknown, location: string): StoreError {
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  const text = `${err instanceof Error ? err.message : String(err)} ${cause instanceof Error ? cause.message : ""}`;
  if (/\block\b|LOCK/.test(text)) {
    return new StoreError(
      "locked",
      `database ${location} is in use by another process or engine (${text.trim()})`,
      {
        cause: err,
      },
    );
  }
  return new StoreError("io", `cannot open database ${location}: ${text.trim()}`, { cause: err });
}

interface PendingWrite {
  ops: readonly KvWriteOp[];
  tag: Uint8Array;
  sync: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
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

  async getMany(
    keyspace: Keyspace,
    keys: readonly Uint8Array[],
  ): Promise<(Uint8Array | undefined)[]> {
    const db = this.engine.use();
    try {
      return await db.getMany(
        keys.map((k) => this.key(k)),
        { column: this.engine.column(keyspace) },
      );
    } catch (err) {
      throw this.engine.ioError(err);
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
    let it: RocksIterator;
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
}

class RocksEngineImpl implements RocksEngine {
  readonly kind = "rocksdb" as const;
  private readonly shards = new Map<string, RocksShard>();
  private opening: Promise<unknown> = Promise.resolve();
  private pending: PendingWrite[] = [];
  private scheduled = false;
  private open = true;
  /** Worker mode: a batch is being written; new writes wait for the next group. */
  private inFlight = false;
  private idle: (() => void) | undefined;
  private readonly counters: RocksEngineStats;

  constructor(
    readonly location: string,
    private readonly db: RocksLevelInstance,
    private readonly groupCommit: boolean,
    private readonly worker: WriteWorker | undefined,
  ) {
    this.counters = {
      writes: 0,
      batches: 0,
      syncedBatches: 0,
      writeThread: worker === undefined ? "main" : "worker",
    };
  }

  use(): RocksLevelInstance {
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

  stats(): RocksEngineStats {
    return { ...this.counters };
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
        const batch = this.db.batch();
        batch.put(nameKey, tag, { column: system });
        batch.put(NEXT_TAG_KEY, u32be(n + 1), { column: system });
        await batch.write({ sync: true });
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

  submit(tag: Uint8Array, ops: readonly KvWriteOp[], sync: boolean): Promise<void> {
    try {
      this.use();
    } catch (err) {
      return Promise.reject(err);
    }
    this.counters.writes++;
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ ops, tag, sync, resolve, reject });
      if (this.worker !== undefined) {
        if (!this.inFlight && !this.scheduled) {
          this.scheduled = true;
          setImmediate(() => {
            this.scheduled = false;
            this.flushToWorker();
          });
        }
      } else if (!this.groupCommit) {
        this.flush();
      } else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /**
   * Worker mode: writes the pending group (every pending batch with group commit, else the
   * oldest one) as one RocksDB write batch on the worker; when it lands, the writes that
   * arrived meanwhile form the next group. One batch in flight keeps writes in order.
   */
  private flushToWorker(): void {
    const worker = this.worker as WriteWorker;
    if (this.inFlight || this.pending.length === 0) {
      if (!this.inFlight) this.idle?.();
      return;
    }
    const group = this.groupCommit ? this.pending.splice(0) : this.pending.splice(0, 1);
    let sync = false;
    for (const w of group) if (w.sync) sync = true;
    this.inFlight = true;
    this.counters.batches++;
    if (sync) this.counters.syncedBatches++;
    worker.write(packGroup(group), sync).then(
      () => {
        this.inFlight = false;
        for (const w of group) w.resolve();
        this.flushToWorker();
      },
      (err: unknown) => {
        this.inFlight = false;
        const e = this.ioError(err);
        for (const w of group) w.reject(e);
        this.flushToWorker();
      },
    );
  }

  /** Writes every pending batch as one RocksDB write batch (one WAL sync). */
  private flush(): void {
    this.scheduled = false;
    const group = this.pending;
    this.pending = [];
    if (group.length === 0) return;
    let sync = false;
    let batch: RocksBatch | undefined;
    try {
      const db = this.use();
      batch = db.batch();
      for (const w of group) {
        if (w.sync) sync = true;
        for (const op of w.ops) {
          const column = { column: this.column(op.keyspace) };
          if (op.type === "put") batch.put(concat(w.tag, op.key), op.value, column);
          else batch.del(concat(w.tag, op.key), column);
        }
      }
    } catch (err) {
      const e = this.ioError(err);
      for (const w of group) w.reject(e);
      return;
    }
    this.counters.batches++;
    if (sync) this.counters.syncedBatches++;
    batch.write({ sync }).then(
      () => {
        for (const w of group) w.resolve();
      },
      (err: unknown) => {
        const e = this.ioError(err);
        for (const w of group) w.reject(e);
      },
    );
  }

  async close(): Promise<void> {
    if (!this.open) return;
    // Let queued writes land first.
    if (this.worker !== undefined) {
      // Refuse new writes, then let the queued ones land.
      this.open = false;
      if (this.inFlight || this.pending.length > 0) {
        await new Promise<void>((resolve) => {
          this.idle = resolve;
          if (!this.inFlight && !this.scheduled) this.flushToWorker();
        });
      }
      await this.worker.stop();
    } else if (this.pending.length > 0) {
      this.flush();
    }
    this.open = false;
    try {
      await this.db.close();
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
  const binding = options.binding ?? (await loadBinding());
  let db: RocksLevelInstance;
  try {
    db = new binding.RocksLevel(options.location, {
      keyEncoding: "buffer",
      valueEncoding: "buffer",
    }) as RocksLevelInstance;
  } catch (err) {
    throw mapOpenError(err, options.location);
  }
  const columns: Record<string, object> = { default: {} };
  for (const c of COLUMNS) columns[c] = {};
  try {
    await db.open({
      ...options.openOptions,
      createIfMissing: options.createIfMissing !== false,
      columns,
    });
  } catch (err) {
    throw mapOpenError(err, options.location);
  }
  let worker: WriteWorker | undefined;
  if (options.writeThread === "worker" && options.binding === undefined) {
    const modulePath = bindingPath();
    const handle = (db as { handle?: unknown }).handle;
    if (modulePath !== undefined && typeof handle === "bigint") {
      worker = new WriteWorker(handle, modulePath);
      try {
        await worker.ready;
      } catch (err) {
        await worker.stop();
        await db.close();
        throw StoreError.from(err);
      }
    }
  }
  return new RocksEngineImpl(options.location, db, options.groupCommit !== false, worker);
}
