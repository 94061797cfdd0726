// The entry store of one shard: the facade over the write path (pure planner + ordered
// applier with pipelined group commit) and the read side. See the package README.

import { toBinary } from "@bufbuild/protobuf";
import {
  afterObject,
  decodeLegacyKey,
  encodeMetadataKey,
  isKeyError,
  objectsRange,
} from "@oprc/granular-key";
import {
  type ChangeRecord,
  type ObjData,
  type ObjectEvent,
  ObjectEventSchema,
  type ValData,
} from "@oprc/grpc-api/messages";
import { readU64, writeU64 } from "./bytes.js";
import {
  type ChangeRetention,
  compactChanges,
  cursorWrites,
  oldestChange,
  RecentChanges,
  readChangeHead,
  readChanges,
  readCursors,
} from "./change-log.js";
import { checkId, decodeStoredKey } from "./entry-keys.js";
import type { KvEngine, KvShard, KvWriteOp } from "./kv.js";
import type { OpValue } from "./mutation-op.js";
import type { StoreOp } from "./mutation-planner.js";
import { COUNTERS_KEY, OrderedApplier, readLiveCounter } from "./ordered-applier.js";
import { decodeMeta, encodeCounters } from "./records.js";
import {
  EMPTY_SHARD_STATE,
  openShardState,
  readAllBytes,
  replaceShard,
  type ShardStateBytes,
} from "./shard-state.js";
import { StoreError } from "./store-error.js";
import { checkPositive, StoreReader } from "./store-reads.js";
import type {
  BatchInput,
  ConvertResult,
  EntryInput,
  GetEntryResult,
  GetObjectOptions,
  ListEntriesOptions,
  ListEntriesResult,
  ListObjectsOptions,
  ListObjectsResult,
  MutationOptions,
  MutationResult,
  ObjectInput,
  ObjectMetadata,
  StoredObject,
  StoreStats,
} from "./types.js";

/** Options of {@link createEntryStore}. */
export interface EntryStoreOptions {
  /** The storage engine (memory or RocksDB) holding the shard. */
  engine: KvEngine;
  /** The shard's name in the engine (e.g. `"<collection>/<partition>"`). One store per shard. */
  shard: string;
  /** Default durability of mutations: sync the WAL before acknowledging. Default true (`ODGM_SYNC_WRITES`). */
  sync?: boolean;
  /**
   * Default true. False writes objects with canonical numeric ids that have no granular
   * metadata as legacy blobs only: the pre-granular format (no versions, no events), for
   * producing data as ODGM wrote it before per-entry records. String ids are always
   * granular. A node never uses this; see {@link EntryStoreOptions.dualWrite}.
   */
  granular?: boolean;
  /**
   * Dual-write (`ODGM_ENABLE_GRANULAR_STORAGE=false` on a node; seed 003 phases A–C):
   * every write of a numeric id also keeps the whole object as a legacy blob, in the same
   * atomic write as its per-entry records and metadata, for a node of the pre-granular
   * format to read. Versions, CAS and events work as always; reads use the per-entry
   * records. Each such write reads every entry of its object. Default false.
   */
  dualWrite?: boolean;
  /**
   * Read legacy blobs of numeric ids that have no granular metadata, and convert them on
   * their first write. Default true; turn off once a backfill has converted every blob to
   * save the extra lookup on misses.
   */
  legacyFallback?: boolean;
  /** Entries per storage page when reconstructing an object. Default 256 (`ODGM_GRANULAR_PREFETCH_LIMIT`). */
  prefetchLimit?: number;
  /** Ceiling on the entries of a reconstructed object; more → `too_large`. Default 65536 (`ODGM_MAX_GET_ENTRIES`). */
  maxGetEntries?: number;
  /** Longest entry key in UTF-8 bytes, bounding prefix scans. Default 160 (`ODGM_MAX_STRING_ID_LEN`). */
  maxKeyLength?: number;
  /** Clock for record timestamps, ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /** Called for every read served from a legacy blob (`odgm_blob_fallback_reads_total`). Default none. */
  onBlobFallbackRead?: (id: string) => void;
  /**
   * Objects whose latest planned state (metadata, event config, not-yet-durable entry
   * changes) the write path keeps in memory, so a mutation of a recently written object
   * needs no metadata read. Default 10000. Objects with writes in flight are always kept.
   */
  objectCacheSize?: number;
  /**
   * Told of every mutation that wrote, once it is durable, in commit order (the order the
   * writes reached storage) and before the mutation's caller is answered. The event
   * pipeline hangs here, so events of one object follow its versions. Default none.
   */
  onApplied?: (id: string, result: MutationResult) => void;
  /**
   * Keep a durable change log (see {@link EntryStore.changes}): one record per mutation that
   * writes, in the same atomic write. `values` records new entry values too; `triggers`
   * records the object's trigger configuration (for at-least-once trigger delivery);
   * `triggerFanoutCap` records how many changed keys of a mutation lay beyond the trigger
   * fan-out cap (`trigger_keys_skipped`). Default: off.
   */
  changeLog?: { values?: boolean; triggers?: boolean; triggerFanoutCap?: number };
}

/** The durable change log of a shard (see `change-log.ts`). */
export interface ChangeLog {
  /** The last durable revision (0 before the first change). */
  head(): bigint;
  /** Whether records carry new values. */
  readonly values: boolean;
  /** Up to `limit` records from revision `from` on. */
  read(from: bigint, limit: number): Promise<ChangeRecord[]>;
  /** The oldest revision still kept, or `undefined` when none is. */
  oldest(): Promise<bigint | undefined>;
  /** Removes records outside `retention`; returns how many. */
  compact(retention: ChangeRetention, now?: number): Promise<number>;
  /** Calls `listener` with the new head after every durable write that logged changes. */
  subscribe(listener: (head: bigint) => void): () => void;
  /** The stored cursors of the log's readers, by name (see {@link ChangeLog.saveCursors}). */
  cursors(): Promise<Map<string, bigint>>;
  /**
   * Stores readers' cursors (the last revision each has finished; `undefined` removes one).
   * Not synced: a cursor lost in a crash only makes its reader repeat records.
   */
  saveCursors(cursors: ReadonlyMap<string, bigint | undefined>): Promise<void>;
}

/**
 * Per-entry object storage for one shard: the operations behind every object call of the
 * service. Mutations of one object are serialized; each is one atomic write of entries,
 * metadata, event config and counters. See the package README for the rules.
 */
export interface EntryStore {
  /** The shard name. */
  readonly shard: string;
  /** Metadata of an object (tombstoned objects included, `deleted: true`), or `undefined`. */
  getMetadata(id: string): Promise<ObjectMetadata | undefined>;
  /** One entry plus the object's version, read from one consistent view. */
  getEntry(id: string, key: string): Promise<GetEntryResult>;
  /** The event config of a live object, or `undefined`. */
  getEventConfig(id: string): Promise<ObjectEvent | undefined>;
  /** The whole object, read in pages from one snapshot; `undefined` when missing or deleted. */
  getObject(id: string, options?: GetObjectOptions): Promise<StoredObject | undefined>;
  /** A page of an object's entries in storage order. */
  listEntries(id: string, options?: ListEntriesOptions): Promise<ListEntriesResult>;
  /** A page of live objects ordered by id bytes. */
  listObjects(options?: ListObjectsOptions): Promise<ListObjectsResult>;
  /**
   * Applies one logical operation (the form a Raft log carries; see `StoreOp`). The
   * convenience methods below build these; `options.expectedVersion` overrides the
   * operation's own.
   */
  apply(op: StoreOp, options?: MutationOptions): Promise<MutationResult>;
  /**
   * Index of the last replication-log entry applied to this shard (0 when none). It is
   * stored in the same atomic write as the data it covers, so after a restart the log is
   * re-applied from exactly the next entry.
   */
  appliedIndex(): number;
  /**
   * Applies committed log entries (index order, `op: undefined` for entries without an
   * operation) as ONE write that also records the last index; entries at or below
   * {@link appliedIndex} are skipped (a restart delivers them again). A refusal that every
   * replica makes alike — a failed CAS, a malformed operation — is that entry's result, not
   * an error. Must not be mixed with other mutations of the store.
   */
  applyCommitted(
    entries: readonly { readonly index: number; readonly op: StoreOp | undefined }[],
    options?: { sync?: boolean },
  ): Promise<(MutationResult | StoreError | undefined)[]>;
  /**
   * Makes every entry applied so far durable, with one synced write (applies with
   * `sync: false` may otherwise be lost in a machine crash): call before the log that holds
   * them is compacted.
   */
  syncApplied(): Promise<void>;
  /** Every record of the shard as bytes (a Raft snapshot); call between applies. */
  exportState(): Promise<Uint8Array>;
  /**
   * {@link exportState} in two steps, a page at a time: resolves once every mutation in
   * flight is written, with the applied index and a reader of the shard as of that moment
   * (its pages concatenated are {@link exportState}'s bytes; read it once). Mutations after
   * it (the next applies) may run while the reader reads; they are not in what it yields.
   */
  openStateExport(): Promise<{ appliedIndex: number; read(): AsyncIterable<Uint8Array> }>;
  /**
   * Replaces every record of the shard with `state` (from {@link exportState}; empty bytes
   * are the empty shard), then forgets all planned state. With `appliedIndex` the applied
   * index becomes that value instead of the state's own. Malformed bytes are
   * `invalid_argument` and change nothing.
   *
   * `state` is read about 1 MiB at a time (it may be a file read on demand) and written in
   * several writes, so a shard larger than memory can be installed. That is not atomic: if
   * it fails or the process dies part-way, the shard holds a mix of old and new records
   * (its old applied index is gone with the first write) until the same state is imported
   * again, which the caller must do before the shard is used.
   */
  importState(
    state: ShardStateBytes,
    options?: { sync?: boolean; appliedIndex?: number },
  ): Promise<void>;
  /** Live-object counter and fallback-read count. */
  stats(): StoreStats;
  /** The change log, when {@link EntryStoreOptions.changeLog} turned it on. */
  readonly changes: ChangeLog | undefined;
  /** Sets one entry (creating or reviving the object). */
  setEntry(
    id: string,
    key: string,
    value: ValData,
    options?: MutationOptions,
  ): Promise<MutationResult>;
  /** Deletes one entry; a missing key (or object) is a no-op. */
  deleteEntry(id: string, key: string, options?: MutationOptions): Promise<MutationResult>;
  /** Sets and deletes entries atomically under one version bump. */
  batch(id: string, input: BatchInput, options?: MutationOptions): Promise<MutationResult>;
  /** Replaces the object: listed entries written, others removed, `event` (if given) replaced. */
  setObject(id: string, input: ObjectInput, options?: MutationOptions): Promise<MutationResult>;
  /** Upserts the listed entries (CRDT_MAP values merged with Automerge), keeps the rest. */
  mergeObject(id: string, input: ObjectInput, options?: MutationOptions): Promise<MutationResult>;
  /** Deletes the object: entries and event config removed, tombstone kept. Idempotent. */
  deleteObject(id: string, options?: MutationOptions): Promise<MutationResult>;
  /** Replaces (or with `undefined` removes) the event config; creates/revives the object. */
  setEventConfig(
    id: string,
    event: ObjectEvent | undefined,
    options?: MutationOptions,
  ): Promise<MutationResult>;
  /** Legacy blob ids remaining in the shard, ascending, after `after` if given. */
  legacyBlobIds(options?: { after?: bigint; batchSize?: number }): AsyncIterable<bigint>;
  /** The raw legacy blob of a numeric id, or `undefined`. */
  getLegacyBlob(id: bigint): Promise<ObjData | undefined>;
  /** Converts one legacy blob to entries atomically; skips (false) when none or already converted. */
  convertLegacyObject(id: bigint, options?: { sync?: boolean }): Promise<ConvertResult>;
  /** Waits for running operations, then refuses new ones (`closed`). Does not close the engine. */
  close(): Promise<void>;
}

/** Shards with a store attached, so a second store on the same shard is refused. */
const claimed = new WeakSet<KvShard>();

/**
 * Opens the entry store of one shard of `engine`. Loads (or, for a shard that has none,
 * computes by a full scan and persists) the live-object counter. A second store on the
 * same shard of the same engine is refused with `locked`.
 *
 * @example
 * ```ts
 * import { createEntryStore, createMemoryEngine } from "@oprc/entry-store";
 * const store = await createEntryStore({ engine: createMemoryEngine(), shard: "users/0" });
 * const r = await store.setEntry("user-1", "name", create(ValDataSchema, { data: bytes }));
 * r.versionAfter; // 1n
 * ```
 */
export async function createEntryStore(options: EntryStoreOptions): Promise<EntryStore> {
  const shard = await options.engine.openShard(options.shard);
  if (claimed.has(shard)) {
    throw new StoreError("locked", `shard ${options.shard} already has an open entry store`);
  }
  claimed.add(shard);
  try {
    const sync = options.sync !== false;
    const liveObjects = (await readLiveCounter(shard)) ?? (await countLiveObjects(shard, sync));
    return new EntryStoreImpl(
      shard,
      options,
      liveObjects,
      await readAppliedIndex(shard),
      await readChangeHead(shard),
    );
  } catch (err) {
    claimed.delete(shard);
    throw StoreError.from(err);
  }
}

/**
 * Counts the live objects of a shard that has no counter yet (a new shard, or data written
 * by an older format) and persists the count.
 */
async function countLiveObjects(kv: KvShard, sync: boolean): Promise<bigint> {
  let live = 0n;
  const it = kv.iterator("objects", objectsRange());
  try {
    for (;;) {
      const [row] = await it.next(1);
      if (row === undefined) break;
      const [key, value] = row;
      if (decodeStoredKey(key).record === "metadata" && !decodeMeta(value, key).tombstone) live++;
      it.seek(afterObject(key));
    }
  } finally {
    await it.close();
  }
  // A blob beside granular metadata (a dual-write copy, or stale) is not an object of its own.
  const blobs = kv.iterator("blobs", { keysOnly: true });
  try {
    for (;;) {
      const rows = await blobs.next(1024);
      if (rows.length === 0) break;
      const metas = await kv.getMany(
        "objects",
        rows.map(([key]) => encodeMetadataKey(decodeLegacyKey(key).toString())),
      );
      for (const m of metas) if (m === undefined) live++;
    }
  } finally {
    await blobs.close();
  }
  await kv.write(
    [{ type: "put", keyspace: "system", key: COUNTERS_KEY, value: encodeCounters(live) }],
    {
      sync,
    },
  );
  return live;
}

/** Key of the applied log index (u64 BE) in the `system` keyspace. */
const APPLIED_KEY = Uint8Array.of(0x00, 0x02);

async function readAppliedIndex(kv: KvShard): Promise<number> {
  const raw = await kv.get("system", APPLIED_KEY);
  if (raw === undefined) return 0;
  if (raw.length !== 8) {
    throw new StoreError("corrupt_record", "applied index record is not 8 bytes", {
      key: APPLIED_KEY,
    });
  }
  return Number(readU64(raw, 0));
}

/** The write that records `index` as the applied log index. */
function appliedIndexWrite(index: number): KvWriteOp {
  const value = new Uint8Array(8);
  writeU64(value, 0, index);
  return { type: "put", keyspace: "system", key: APPLIED_KEY, value };
}

/** The entries of a call as the operation carries them (values checked by the planner). */
function entryMap(input: EntryInput | undefined): Map<string, OpValue> {
  const out = new Map<string, OpValue>();
  if (input === undefined) return out;
  for (const [key, value] of input as Iterable<readonly [string, ValData]>) {
    if (out.has(key)) {
      throw new StoreError("invalid_argument", `entry key ${JSON.stringify(key)} is given twice`);
    }
    out.set(key, value);
  }
  return out;
}

function eventBytes(event: ObjectEvent | undefined): { event?: Uint8Array } {
  return event === undefined ? {} : { event: toBinary(ObjectEventSchema, event) };
}

/** Any failure as a {@link StoreError}; key-layout errors are the caller's bad arguments. */
function storeError(err: unknown): StoreError {
  if (isKeyError(err)) return new StoreError("invalid_argument", err.message, { cause: err });
  return StoreError.from(err);
}

class EntryStoreImpl implements EntryStore {
  readonly shard: string;
  private readonly applier: OrderedApplier;
  private readonly reader: StoreReader;
  private readonly now: () => number;
  private readonly sync: boolean;
  private applied: number;
  private closed = false;
  readonly changes: ChangeLog | undefined;
  /** The newest change records, for live watchers (4,096 per shard, while any subscribes). */
  private readonly recent = new RecentChanges(4096);

  constructor(
    private readonly kv: KvShard,
    options: EntryStoreOptions,
    liveObjects: bigint,
    applied: number,
    changeHead: bigint,
  ) {
    this.applied = applied;
    this.sync = options.sync !== false;
    this.shard = options.shard;
    this.now = options.now ?? Date.now;
    const legacyFallback = options.legacyFallback !== false;
    const prefetchLimit = checkPositive(options.prefetchLimit ?? 256, "prefetchLimit");
    this.reader = new StoreReader(kv, {
      prefetchLimit,
      maxGetEntries: options.maxGetEntries ?? 65536,
      maxKeyLength: options.maxKeyLength ?? 160,
      legacyFallback,
      onBlobFallbackRead: options.onBlobFallbackRead,
    });
    this.applier = new OrderedApplier({
      kv,
      shard: options.shard,
      env: {
        granular: options.granular !== false,
        legacyFallback,
        dualWrite: options.dualWrite === true,
      },
      sync: options.sync !== false,
      cacheSize: checkPositive(options.objectCacheSize ?? 10_000, "objectCacheSize"),
      pageSize: prefetchLimit,
      liveObjects,
      onApplied: options.onApplied,
      changeLog:
        options.changeLog === undefined
          ? undefined
          : {
              head: changeHead,
              values: options.changeLog.values === true,
              triggers: options.changeLog.triggers === true,
              triggerFanoutCap: options.changeLog.triggerFanoutCap,
              onDurable: (head, records) => {
                // Kept for readers only while the log has subscribers (watchers, trigger
                // delivery): each record would otherwise outlive V8's young generation, to
                // be copied there and promoted, for nobody.
                if (listeners.size > 0) recent.add(records);
                else recent.clear();
                for (const l of listeners) l(head);
              },
            },
    });
    const listeners = new Set<(head: bigint) => void>();
    const recent = this.recent;
    const applier = this.applier;
    this.changes =
      options.changeLog === undefined
        ? undefined
        : {
            head: () => applier.changeHead,
            values: options.changeLog.values === true,
            read: (from, limit) =>
              this.read(
                undefined,
                async () => recent.read(from, limit) ?? readChanges(kv, from, limit),
              ),
            oldest: () => this.read(undefined, () => oldestChange(kv)),
            compact: (retention, now = Date.now()) =>
              this.read(undefined, async () => {
                const { removed, keptFrom } = await compactChanges(
                  kv,
                  applier.changeHead,
                  retention,
                  now,
                );
                if (removed > 0) recent.dropBefore(keptFrom);
                return removed;
              }),
            subscribe(listener) {
              listeners.add(listener);
              return () => listeners.delete(listener);
            },
            cursors: () => this.read(undefined, () => readCursors(kv)),
            saveCursors: (cursors) =>
              this.read(undefined, () => kv.write(cursorWrites(cursors), { sync: false })),
          };
  }

  private checkOpen(): void {
    if (this.closed) throw new StoreError("closed", `entry store of shard ${this.shard} is closed`);
  }

  /** Runs a read after the open check, with argument errors as `invalid_argument`. */
  private async read<T>(id: string | undefined, fn: () => Promise<T>): Promise<T> {
    this.checkOpen();
    if (id !== undefined) checkId(id);
    try {
      return await fn();
    } catch (err) {
      throw storeError(err);
    }
  }

  async apply(op: StoreOp, options: MutationOptions = {}): Promise<MutationResult> {
    this.checkOpen();
    checkId(op.objectId);
    const op2: StoreOp =
      options.expectedVersion === undefined
        ? op
        : { ...op, expectedVersion: options.expectedVersion };
    try {
      return (await this.applier.apply(op2, options.sync)).result;
    } catch (err) {
      throw storeError(err);
    }
  }

  appliedIndex(): number {
    return this.applied;
  }

  async applyCommitted(
    entries: readonly { readonly index: number; readonly op: StoreOp | undefined }[],
    options: { sync?: boolean } = {},
  ): Promise<(MutationResult | StoreError | undefined)[]> {
    this.checkOpen();
    let last = this.applied;
    const ops: (StoreOp | undefined)[] = [];
    for (const e of entries) {
      if (!Number.isSafeInteger(e.index) || e.index < 1) {
        throw new StoreError(
          "invalid_argument",
          `log index must be a positive integer, got ${e.index}`,
        );
      }
      if (e.index <= last) {
        if (e.index <= this.applied) continue;
        throw new StoreError(
          "invalid_argument",
          `log indexes must increase: ${e.index} after ${last}`,
        );
      }
      last = e.index;
      ops.push(e.op);
    }
    if (last === this.applied) return entries.map(() => undefined);
    const extra = [appliedIndexWrite(last)];
    let applied: Awaited<ReturnType<OrderedApplier["applyInOrder"]>>;
    try {
      applied = await this.applier.applyInOrder(ops, extra, options.sync ?? this.sync);
    } catch (err) {
      throw storeError(err);
    }
    this.applied = last;
    const results = applied.map((a) => (a instanceof StoreError || a === undefined ? a : a.result));
    // Entries skipped as already applied answer undefined, keeping positions.
    return [...entries.slice(0, entries.length - results.length).map(() => undefined), ...results];
  }

  async syncApplied(): Promise<void> {
    this.checkOpen();
    await this.applier.drain();
    // Any synced write syncs the write-ahead log before it: rewrite the applied index.
    try {
      await this.kv.write([appliedIndexWrite(this.applied)], { sync: true });
    } catch (err) {
      throw storeError(err);
    }
  }

  async exportState(): Promise<Uint8Array> {
    return readAllBytes((await this.openStateExport()).read());
  }

  async openStateExport(): Promise<{ appliedIndex: number; read(): AsyncIterable<Uint8Array> }> {
    this.checkOpen();
    await this.applier.drain();
    return { appliedIndex: this.applied, read: openShardState(this.kv) };
  }

  async importState(
    state: ShardStateBytes,
    options: { sync?: boolean; appliedIndex?: number } = {},
  ): Promise<void> {
    this.checkOpen();
    const source = state.byteLength === 0 ? EMPTY_SHARD_STATE : state;
    await this.applier.drain();
    try {
      const last =
        options.appliedIndex === undefined ? [] : [appliedIndexWrite(options.appliedIndex)];
      await replaceShard(this.kv, source, last, { sync: options.sync ?? this.sync });
    } catch (err) {
      throw storeError(err);
    }
    this.recent.clear();
    this.applier.reset((await readLiveCounter(this.kv)) ?? 0n, await readChangeHead(this.kv));
    this.applied = await readAppliedIndex(this.kv);
  }

  /** The common fields of an operation built by the convenience methods. */
  private base(id: string): { objectId: string; timestampMs: number } {
    return { objectId: id, timestampMs: this.now() };
  }

  async setEntry(
    id: string,
    key: string,
    value: ValData,
    options?: MutationOptions,
  ): Promise<MutationResult> {
    return this.apply({ kind: "set_entry", ...this.base(id), key, value }, options);
  }

  async deleteEntry(id: string, key: string, options?: MutationOptions): Promise<MutationResult> {
    return this.apply({ kind: "delete_entry", ...this.base(id), key }, options);
  }

  async batch(id: string, input: BatchInput, options?: MutationOptions): Promise<MutationResult> {
    this.checkOpen();
    const sets = entryMap(input.set);
    const deletes = [...(input.delete ?? [])];
    return this.apply({ kind: "batch", ...this.base(id), sets, deletes }, options);
  }

  async setObject(
    id: string,
    input: ObjectInput,
    options?: MutationOptions,
  ): Promise<MutationResult> {
    this.checkOpen();
    const entries = entryMap(input.entries);
    return this.apply(
      { kind: "set_object", ...this.base(id), entries, ...eventBytes(input.event) },
      options,
    );
  }

  async mergeObject(
    id: string,
    input: ObjectInput,
    options?: MutationOptions,
  ): Promise<MutationResult> {
    this.checkOpen();
    const entries = entryMap(input.entries);
    return this.apply(
      { kind: "merge_object", ...this.base(id), entries, ...eventBytes(input.event) },
      options,
    );
  }

  async deleteObject(id: string, options?: MutationOptions): Promise<MutationResult> {
    return this.apply({ kind: "delete_object", ...this.base(id) }, options);
  }

  async setEventConfig(
    id: string,
    event: ObjectEvent | undefined,
    options?: MutationOptions,
  ): Promise<MutationResult> {
    return this.apply(
      { kind: "set_event_config", ...this.base(id), ...eventBytes(event) },
      options,
    );
  }

  async convertLegacyObject(id: bigint, options: { sync?: boolean } = {}): Promise<ConvertResult> {
    this.checkOpen();
    if (typeof id !== "bigint" || id < 0n || id > 0xffff_ffff_ffff_ffffn) {
      throw new StoreError("invalid_argument", `legacy id must be a u64, got ${String(id)}`);
    }
    try {
      const applied = await this.applier.apply(
        { kind: "convert_legacy", ...this.base(id.toString()) },
        options.sync,
      );
      return applied.plan.conversion ?? { converted: false, entries: 0, blobRemoved: false };
    } catch (err) {
      throw storeError(err);
    }
  }

  getMetadata(id: string): Promise<ObjectMetadata | undefined> {
    return this.read(id, () => this.reader.getMetadata(id));
  }

  getEntry(id: string, key: string): Promise<GetEntryResult> {
    return this.read(id, () => this.reader.getEntry(id, key));
  }

  getEventConfig(id: string): Promise<ObjectEvent | undefined> {
    return this.read(id, () => this.reader.getEventConfig(id));
  }

  getObject(id: string, options?: GetObjectOptions): Promise<StoredObject | undefined> {
    return this.read(id, () => this.reader.getObject(id, options));
  }

  listEntries(id: string, options?: ListEntriesOptions): Promise<ListEntriesResult> {
    return this.read(id, () => this.reader.listEntries(id, options));
  }

  listObjects(options?: ListObjectsOptions): Promise<ListObjectsResult> {
    return this.read(undefined, () => this.reader.listObjects(options));
  }

  stats(): StoreStats {
    return {
      liveObjects: this.applier.liveObjects,
      blobFallbackReads: this.reader.blobFallbackReads,
    };
  }

  legacyBlobIds(options?: { after?: bigint; batchSize?: number }): AsyncIterable<bigint> {
    this.checkOpen();
    return this.reader.legacyBlobIds(options);
  }

  getLegacyBlob(id: bigint): Promise<ObjData | undefined> {
    return this.read(undefined, () => this.reader.getLegacyBlob(id));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.applier.drain();
    claimed.delete(this.kv);
  }
}
