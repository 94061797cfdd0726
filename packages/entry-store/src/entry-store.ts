import { create } from "@bufbuild/protobuf";
import {
  afterObject,
  decodeCursor,
  decodeKey,
  decodeListCursor,
  type EntryKeyRef,
  encodeCursor,
  encodeEntryKey,
  encodeEventConfigKey,
  encodeLegacyKey,
  encodeListCursor,
  encodeMetadataKey,
  entryRange,
  findRange,
  isKeyError,
  type KeyRange,
  objectRange,
  objectsRange,
  rangesAfter,
} from "@oprc/granular-key";
import {
  type ObjData,
  ObjDataSchema,
  type ObjectEvent,
  type ObjectMetaRecord,
  type ValData,
  ValDataSchema,
  ValType,
} from "@oprc/grpc-api";
import { isCanonicalU32 } from "@oprc/oprc-id";
import { compareBytes, toHex } from "./bytes.js";
import { mergeCrdt } from "./crdt-merge.js";
import { KeyedLock } from "./keyed-lock.js";
import type { KvEngine, KvShard, KvWriteOp } from "./kv.js";
import {
  decodeBlob,
  decodeCounters,
  decodeEntry,
  decodeEvent,
  decodeMeta,
  encodeBlob,
  encodeCounters,
  encodeEntry,
  encodeEvent,
  encodeMeta,
} from "./records.js";
import { StoreError } from "./store-error.js";
import type {
  BatchInput,
  ChangedEntry,
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
  ObjectSummary,
  StoredEntry,
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
   * Granular storage (`ODGM_ENABLE_GRANULAR_STORAGE`). Default true. When false, objects
   * with canonical numeric ids that have no granular metadata are written as legacy
   * blobs; string ids are always granular.
   */
  granular?: boolean;
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
  /** Live-object counter and fallback-read count. */
  stats(): StoreStats;
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

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1024;
const MAX_U64 = 0xffff_ffff_ffff_ffffn;
const COUNTERS_KEY = Uint8Array.of(0x00, 0x01);
const EMPTY: readonly ChangedEntry[] = Object.freeze([]);

/** Shards with a store attached, so a second store on the same shard is refused. */
const claimed = new WeakSet<KvShard>();

/** An entry key resolved to its layout form. */
interface KeyInfo {
  readonly key: string;
  readonly numeric: boolean;
  readonly ref: EntryKeyRef;
  readonly storageKey: Uint8Array;
}

/** The state of an object as a mutation found it. */
interface Loaded {
  readonly meta: ObjectMetaRecord | undefined;
  readonly blob: ObjData | undefined;
  readonly event: ObjectEvent | undefined;
  readonly live: boolean;
  readonly version: bigint;
  /** Values before the call of the requested keys (absent keys not present). */
  readonly before: Map<string, ValData>;
  /** Every existing entry key (only when requested). */
  readonly all: KeyInfo[] | undefined;
}

/** What a mutation wants to change, computed from {@link Loaded}. */
interface Plan {
  readonly sets: Map<string, { info: KeyInfo; value: ValData }>;
  readonly dels: Map<string, KeyInfo>;
  /** Replace the event config (`value: undefined` removes it). */
  readonly event?: { value: ObjectEvent | undefined };
  /** Write the object even when no entry changes (creation by setObject/setEventConfig). */
  readonly touch?: boolean;
  /** Delete the object (tombstone). */
  readonly remove?: boolean;
}

function isCanonicalU64(id: string): boolean {
  if (!/^(0|[1-9][0-9]{0,19})$/.test(id)) return false;
  return id.length < 20 || BigInt(id) <= MAX_U64;
}

function checkId(id: unknown): asserts id is string {
  if (typeof id !== "string" || id.length === 0) {
    throw new StoreError("invalid_argument", "object id must be a non-empty normalized string");
  }
}

/** Runs `fn`, turning key-layout errors into `invalid_argument` store errors. */
function keyArg<T>(fn: () => T, what: string): T {
  try {
    return fn();
  } catch (err) {
    if (isKeyError(err))
      throw new StoreError("invalid_argument", `${what}: ${err.message}`, { cause: err });
    throw err;
  }
}

function keyInfo(id: string, key: string): KeyInfo {
  if (typeof key !== "string" || key.length === 0) {
    throw new StoreError("invalid_argument", "entry key must be a non-empty canonical string");
  }
  const numeric = isCanonicalU32(key);
  const ref: EntryKeyRef = numeric ? { numeric: Number(key) } : { str: key };
  return { key, numeric, ref, storageKey: keyArg(() => encodeEntryKey(id, ref), "entry key") };
}

/** Decodes a stored key that must be an entry key of `id`. */
function decodeEntryKey(id: string, storageKey: Uint8Array): KeyInfo {
  let decoded: ReturnType<typeof decodeKey>;
  try {
    decoded = decodeKey(storageKey);
  } catch (err) {
    throw new StoreError("corrupt_record", `key ${toHex(storageKey)} does not decode`, {
      cause: err,
      key: storageKey.slice(),
    });
  }
  if (decoded.id !== id) {
    throw new StoreError("corrupt_record", `key ${toHex(storageKey)} is outside object ${id}`, {
      key: storageKey.slice(),
    });
  }
  if (decoded.record === "numeric_entry") {
    return { key: String(decoded.key.numeric), numeric: true, ref: decoded.key, storageKey };
  }
  if (decoded.record === "string_entry") {
    return { key: decoded.key.str, numeric: false, ref: decoded.key, storageKey };
  }
  throw new StoreError("corrupt_record", `key ${toHex(storageKey)} is not an entry key`, {
    key: storageKey.slice(),
  });
}

function toEntries(
  input: EntryInput | undefined,
  id: string,
): Map<string, { info: KeyInfo; value: ValData }> {
  const out = new Map<string, { info: KeyInfo; value: ValData }>();
  if (input === undefined) return out;
  for (const pair of input as Iterable<readonly [string, ValData]>) {
    const [key, value] = pair;
    if (out.has(key))
      throw new StoreError("invalid_argument", `entry key ${JSON.stringify(key)} is given twice`);
    if (typeof value !== "object" || value === null || !(value.data instanceof Uint8Array)) {
      throw new StoreError(
        "invalid_argument",
        `value of entry ${JSON.stringify(key)} must be a ValData`,
      );
    }
    out.set(key, { info: keyInfo(id, key), value });
  }
  return out;
}

function checkLimit(limit: number | undefined): number {
  if (limit === undefined || limit === 0) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 0) {
    throw new StoreError("invalid_argument", `limit must be a non-negative integer, got ${limit}`);
  }
  return Math.min(limit, MAX_LIMIT);
}

function checkPositive(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 1)
    throw new StoreError("invalid_argument", `${what} must be a positive integer`);
  return n;
}

/** Storage order of entries: numeric ascending, then strings by (UTF-8 length, bytes). */
function compareEntryKeys(a: KeyInfo, b: KeyInfo): number {
  return compareBytes(a.storageKey, b.storageKey);
}

function blobEntries(id: string, blob: ObjData): Map<string, { info: KeyInfo; value: ValData }> {
  const out = new Map<string, { info: KeyInfo; value: ValData }>();
  for (const [k, v] of Object.entries(blob.entriesStr))
    out.set(k, { info: keyInfo(id, k), value: v });
  // Numeric entries win over a string key in canonical u32 form: they are the same entry.
  for (const [k, v] of Object.entries(blob.entries)) out.set(k, { info: keyInfo(id, k), value: v });
  return out;
}

function metadataOf(id: string, meta: ObjectMetaRecord): ObjectMetadata {
  return {
    id,
    version: meta.objectVersion,
    deleted: meta.tombstone,
    entryCount: meta.entryCount,
    createdAtMs: meta.createdAtMs,
    updatedAtMs: meta.updatedAtMs,
    attributes: { ...meta.attributes },
    legacy: false,
  };
}

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
    const store = new EntryStoreImpl(shard, options);
    await store.init();
    return store;
  } catch (err) {
    claimed.delete(shard);
    throw StoreError.from(err);
  }
}

class EntryStoreImpl implements EntryStore {
  readonly shard: string;
  private readonly lock = new KeyedLock();
  private readonly sync: boolean;
  private readonly granular: boolean;
  private readonly legacyFallback: boolean;
  private readonly prefetchLimit: number;
  private readonly maxGetEntries: number;
  private readonly maxKeyLength: number;
  private readonly now: () => number;
  private readonly onFallback: ((id: string) => void) | undefined;
  private liveObjects = 0n;
  /** Set after a failed write that carried a counter delta: the next write persists the counter. */
  private counterDirty = false;
  private fallbackReads = 0;
  private closed = false;

  constructor(
    private readonly kv: KvShard,
    options: EntryStoreOptions,
  ) {
    this.shard = options.shard;
    this.sync = options.sync !== false;
    this.granular = options.granular !== false;
    this.legacyFallback = options.legacyFallback !== false;
    this.prefetchLimit = checkPositive(options.prefetchLimit ?? 256, "prefetchLimit");
    this.maxGetEntries = checkPositive(options.maxGetEntries ?? 65536, "maxGetEntries");
    this.maxKeyLength = checkPositive(options.maxKeyLength ?? 160, "maxKeyLength");
    this.now = options.now ?? Date.now;
    this.onFallback = options.onBlobFallbackRead;
  }

  async init(): Promise<void> {
    const raw = await this.kv.get("system", COUNTERS_KEY);
    if (raw !== undefined) {
      this.liveObjects = decodeCounters(raw, COUNTERS_KEY).liveObjects;
      return;
    }
    // No counter yet (new shard, or data written by an older format): count once.
    let live = 0n;
    const it = this.kv.iterator("objects", objectsRange());
    try {
      for (;;) {
        const rows = await it.next(1);
        const row = rows[0];
        if (row === undefined) break;
        const [key, value] = row;
        const decoded = this.decodeAnyKey(key);
        if (decoded.record === "metadata" && !decodeMeta(value, key).tombstone) live++;
        it.seek(afterObject(key));
      }
    } finally {
      await it.close();
    }
    const blobs = this.kv.iterator("blobs", { keysOnly: true });
    try {
      for (;;) {
        const rows = await blobs.next(1024);
        if (rows.length === 0) break;
        live += BigInt(rows.length);
      }
    } finally {
      await blobs.close();
    }
    this.liveObjects = live;
    await this.kv.write(
      [{ type: "put", keyspace: "system", key: COUNTERS_KEY, value: encodeCounters(live) }],
      {
        sync: this.sync,
      },
    );
  }

  // ---------------------------------------------------------------- helpers

  private checkOpen(): void {
    if (this.closed) throw new StoreError("closed", `entry store of shard ${this.shard} is closed`);
  }

  private decodeAnyKey(key: Uint8Array): ReturnType<typeof decodeKey> {
    try {
      return decodeKey(key);
    } catch (err) {
      throw new StoreError("corrupt_record", `key ${toHex(key)} does not decode`, {
        cause: err,
        key: key.slice(),
      });
    }
  }

  private legacyKey(id: string): Uint8Array | undefined {
    if (!this.legacyFallback || !isCanonicalU64(id)) return undefined;
    return encodeLegacyKey(BigInt(id));
  }

  private async readBlob(id: string): Promise<ObjData | undefined> {
    const key = this.legacyKey(id);
    if (key === undefined) return undefined;
    const raw = await this.kv.get("blobs", key);
    return raw === undefined ? undefined : decodeBlob(raw, key);
  }

  /**
   * After a read found no granular metadata: the legacy blob (counted as a fallback read),
   * `undefined` when the object does not exist, or {@link RETRY} when the blob is gone but
   * metadata now exists — the object was converted between the two reads (conversion
   * writes metadata and deletes the blob atomically), so the caller reads again, once.
   */
  private async blobAfterMiss(
    id: string,
    retried: boolean,
  ): Promise<ObjData | undefined | typeof RETRY> {
    const key = this.legacyKey(id);
    if (key === undefined) return undefined;
    const raw = await this.kv.get("blobs", key);
    if (raw !== undefined) {
      this.countFallback(id);
      return decodeBlob(raw, key);
    }
    if (retried) return undefined;
    return (await this.kv.get("objects", encodeMetadataKey(id))) === undefined ? undefined : RETRY;
  }

  private countFallback(id: string): void {
    this.fallbackReads++;
    this.onFallback?.(id);
  }

  /** Reads what a mutation needs, under the object's lock. */
  private async load(id: string, keys: readonly KeyInfo[], all: boolean): Promise<Loaded> {
    const metaKey = encodeMetadataKey(id);
    const eventKey = encodeEventConfigKey(id);
    const raw = await this.kv.getMany("objects", [
      metaKey,
      eventKey,
      ...keys.map((k) => k.storageKey),
    ]);
    const metaRaw = raw[0];
    const meta = metaRaw === undefined ? undefined : decodeMeta(metaRaw, metaKey);
    if (meta === undefined) {
      const blob = await this.readBlob(id);
      if (blob !== undefined) {
        const entries = blobEntries(id, blob);
        const before = new Map<string, ValData>();
        for (const k of keys) {
          const e = entries.get(k.key);
          if (e !== undefined) before.set(k.key, e.value);
        }
        let list: KeyInfo[] | undefined;
        if (all) {
          list = [...entries.values()].map((e) => e.info).sort(compareEntryKeys);
          for (const [k, e] of entries) before.set(k, e.value);
        }
        return { meta, blob, event: blob.event, live: true, version: 0n, before, all: list };
      }
    }
    const live = meta !== undefined && !meta.tombstone;
    const eventRaw = raw[1];
    const event = live && eventRaw !== undefined ? decodeEvent(eventRaw, eventKey) : undefined;
    const before = new Map<string, ValData>();
    for (let i = 0; i < keys.length; i++) {
      const v = raw[i + 2];
      const k = keys[i] as KeyInfo;
      if (v !== undefined && live) {
        const value = decodeEntry(v, k.storageKey).value;
        if (value === undefined) {
          throw new StoreError("corrupt_record", `entry ${toHex(k.storageKey)} has no value`, {
            key: k.storageKey.slice(),
          });
        }
        before.set(k.key, value);
      }
    }
    let list: KeyInfo[] | undefined;
    if (all) {
      list = [];
      if (live) {
        const [range] = entryRange(id) as [KeyRange];
        const it = this.kv.iterator("objects", { gte: range.gte, lt: range.lt, keysOnly: true });
        try {
          for (;;) {
            const rows = await it.next(this.prefetchLimit);
            if (rows.length === 0) break;
            for (const [k] of rows) {
              const info = decodeEntryKey(id, k);
              list.push(info);
              if (!before.has(info.key)) before.set(info.key, PRESENT);
            }
          }
        } finally {
          await it.close();
        }
      }
    }
    return {
      meta,
      blob: undefined,
      event,
      live,
      version: meta?.objectVersion ?? 0n,
      before,
      all: list,
    };
  }

  private checkCas(loaded: Loaded, options: MutationOptions | undefined): void {
    const expected = options?.expectedVersion;
    if (expected === undefined) return;
    if (typeof expected !== "bigint" || expected < 0n) {
      throw new StoreError("invalid_argument", "expectedVersion must be a non-negative bigint");
    }
    if (expected !== loaded.version) {
      throw new StoreError(
        "version_mismatch",
        `expected object version ${expected}, found ${loaded.version}`,
        { expected, actual: loaded.version },
      );
    }
  }

  /** Serializes `fn` with every other mutation of `id`. */
  private mutate(id: string, fn: (id: string) => Promise<MutationResult>): Promise<MutationResult> {
    try {
      this.checkOpen();
      checkId(id);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.lock.run(id, async () => {
      this.checkOpen();
      try {
        return await fn(id);
      } catch (err) {
        if (isKeyError(err)) throw new StoreError("invalid_argument", err.message, { cause: err });
        throw StoreError.from(err);
      }
    });
  }

  /** Applies `plan` to `loaded` in one atomic write and describes what changed. */
  private async commit(
    id: string,
    loaded: Loaded,
    plan: Plan,
    options: MutationOptions | undefined,
  ): Promise<MutationResult> {
    const changed: { info: KeyInfo; action: ChangedEntry["action"] }[] = [];
    for (const { info } of plan.sets.values()) {
      changed.push({ info, action: loaded.before.has(info.key) ? "update" : "create" });
    }
    for (const info of plan.dels.values()) {
      if (loaded.before.has(info.key)) changed.push({ info, action: "delete" });
    }
    const eventChanges =
      plan.event !== undefined && !(plan.event.value === undefined && loaded.event === undefined);
    const anything =
      plan.remove === true
        ? loaded.live
        : changed.length > 0 || eventChanges || plan.touch === true;
    if (!anything) {
      return {
        versionBefore: loaded.version,
        versionAfter: loaded.version,
        changed: EMPTY,
        wrote: false,
        existedBefore: loaded.live,
        exists: loaded.live,
        eventConfig: loaded.event,
      };
    }
    changed.sort((a, b) => compareEntryKeys(a.info, b.info));
    const liveAfter = plan.remove !== true;
    const nowMs = BigInt(Math.max(0, Math.floor(this.now())));
    const ops: KvWriteOp[] = [];
    let creates = 0n;
    let deletes = 0n;
    for (const c of changed) {
      if (c.action === "create") creates++;
      else if (c.action === "delete") deletes++;
    }
    const eventAfter =
      plan.remove === true ? undefined : plan.event !== undefined ? plan.event.value : loaded.event;
    const legacyWrite =
      !this.granular && loaded.meta === undefined && isCanonicalU64(id) && this.legacyFallback;
    let versionAfter: bigint;
    if (legacyWrite) {
      // Legacy mode: the object stays (or becomes) a whole blob; blobs carry no version.
      versionAfter = 0n;
      const blobKey = encodeLegacyKey(BigInt(id));
      if (!liveAfter) {
        ops.push({ type: "del", keyspace: "blobs", key: blobKey });
      } else {
        const blob = create(ObjDataSchema, {});
        const entries = loaded.blob === undefined ? new Map() : blobEntries(id, loaded.blob);
        for (const k of plan.dels.keys()) entries.delete(k);
        for (const [k, v] of plan.sets) entries.set(k, v);
        for (const { info, value } of entries.values()) {
          if (info.numeric) blob.entries[Number(info.key)] = value;
          else
            Object.defineProperty(blob.entriesStr, info.key, {
              value,
              enumerable: true,
              writable: true,
              configurable: true,
            });
        }
        if (eventAfter !== undefined) blob.event = eventAfter;
        ops.push({ type: "put", keyspace: "blobs", key: blobKey, value: encodeBlob(blob) });
      }
    } else {
      versionAfter = loaded.version + 1n;
      const metaKey = encodeMetadataKey(id);
      const eventKey = encodeEventConfigKey(id);
      let entryCount: bigint;
      if (loaded.blob !== undefined) {
        // Convert the legacy blob in this same write; the mutation applies on top.
        const entries = blobEntries(id, loaded.blob);
        entryCount = BigInt(entries.size);
        if (liveAfter) {
          for (const [k, { info, value }] of entries) {
            if (plan.sets.has(k) || plan.dels.has(k)) continue;
            ops.push({
              type: "put",
              keyspace: "objects",
              key: info.storageKey,
              value: encodeEntry(value, 0n, nowMs),
            });
          }
        }
        ops.push({ type: "del", keyspace: "blobs", key: encodeLegacyKey(BigInt(id)) });
      } else {
        entryCount = loaded.live ? (loaded.meta?.entryCount ?? 0n) : 0n;
      }
      entryCount = liveAfter ? entryCount + creates - deletes : 0n;
      for (const { info, value } of plan.sets.values()) {
        ops.push({
          type: "put",
          keyspace: "objects",
          key: info.storageKey,
          value: encodeEntry(value, versionAfter, nowMs),
        });
      }
      for (const info of plan.dels.values()) {
        if (loaded.before.has(info.key) && loaded.blob === undefined) {
          ops.push({ type: "del", keyspace: "objects", key: info.storageKey });
        }
      }
      const meta = encodeMeta({
        objectVersion: versionAfter,
        tombstone: !liveAfter,
        entryCount,
        createdAtMs: loaded.live && loaded.meta !== undefined ? loaded.meta.createdAtMs : nowMs,
        updatedAtMs: nowMs,
        attributes: loaded.meta?.attributes ?? {},
      });
      ops.push({ type: "put", keyspace: "objects", key: metaKey, value: meta });
      if (eventAfter !== undefined) {
        if (plan.event !== undefined || loaded.blob !== undefined) {
          ops.push({
            type: "put",
            keyspace: "objects",
            key: eventKey,
            value: encodeEvent(eventAfter),
          });
        }
      } else if (loaded.event !== undefined && loaded.blob === undefined) {
        ops.push({ type: "del", keyspace: "objects", key: eventKey });
      }
    }
    const delta = (liveAfter ? 1n : 0n) - (loaded.live ? 1n : 0n);
    const counterWritten = delta !== 0n || this.counterDirty;
    if (counterWritten) {
      this.liveObjects += delta;
      ops.push({
        type: "put",
        keyspace: "system",
        key: COUNTERS_KEY,
        value: encodeCounters(this.liveObjects),
      });
    }
    try {
      await this.kv.write(ops, { sync: options?.sync ?? this.sync });
    } catch (err) {
      if (delta !== 0n) {
        this.liveObjects -= delta;
        this.counterDirty = true;
      }
      throw err;
    }
    if (counterWritten && delta === 0n) this.counterDirty = false;
    return {
      versionBefore: loaded.version,
      versionAfter,
      changed: changed.map((c) => ({ key: c.info.key, numeric: c.info.numeric, action: c.action })),
      wrote: true,
      existedBefore: loaded.live,
      exists: liveAfter,
      eventConfig: plan.remove === true ? loaded.event : eventAfter,
    };
  }

  // ---------------------------------------------------------------- mutations

  setEntry(
    id: string,
    key: string,
    value: ValData,
    options?: MutationOptions,
  ): Promise<MutationResult> {
    return this.batch(id, { set: [[key, value]] }, options);
  }

  deleteEntry(id: string, key: string, options?: MutationOptions): Promise<MutationResult> {
    return this.batch(id, { delete: [key] }, options);
  }

  batch(id: string, input: BatchInput, options?: MutationOptions): Promise<MutationResult> {
    return this.mutate(id, async () => {
      const sets = toEntries(input.set, id);
      const dels = new Map<string, KeyInfo>();
      for (const key of input.delete ?? []) {
        if (sets.has(key)) {
          throw new StoreError(
            "invalid_argument",
            `entry key ${JSON.stringify(key)} is both set and deleted`,
          );
        }
        if (!dels.has(key)) dels.set(key, keyInfo(id, key));
      }
      const keys = [...[...sets.values()].map((s) => s.info), ...dels.values()];
      const loaded = await this.load(id, keys, false);
      this.checkCas(loaded, options);
      return this.commit(id, loaded, { sets, dels }, options);
    });
  }

  setObject(id: string, input: ObjectInput, options?: MutationOptions): Promise<MutationResult> {
    return this.mutate(id, async () => {
      const sets = toEntries(input.entries, id);
      const loaded = await this.load(
        id,
        [...sets.values()].map((s) => s.info),
        true,
      );
      this.checkCas(loaded, options);
      const dels = new Map<string, KeyInfo>();
      for (const info of loaded.all ?? []) {
        if (!sets.has(info.key)) dels.set(info.key, info);
      }
      // A replace always writes (even identical content): it is a set.
      const plan: Plan =
        input.event === undefined
          ? { sets, dels, touch: true }
          : { sets, dels, touch: true, event: { value: input.event } };
      return this.commit(id, loaded, plan, options);
    });
  }

  mergeObject(id: string, input: ObjectInput, options?: MutationOptions): Promise<MutationResult> {
    return this.mutate(id, async () => {
      const sets = toEntries(input.entries, id);
      const loaded = await this.load(
        id,
        [...sets.values()].map((s) => s.info),
        false,
      );
      this.checkCas(loaded, options);
      for (const [key, s] of sets) {
        const old = loaded.before.get(key);
        if (
          old !== undefined &&
          old.type === ValType.CRDT_MAP &&
          s.value.type === ValType.CRDT_MAP
        ) {
          const data = await mergeCrdt(old.data, s.value.data, s.info.storageKey);
          sets.set(key, { info: s.info, value: { ...s.value, data } });
        }
      }
      // An empty merge creates a missing object and changes nothing on an existing one.
      const touch = !loaded.live;
      const plan: Plan =
        input.event === undefined
          ? { sets, dels: new Map(), touch }
          : { sets, dels: new Map(), touch, event: { value: input.event } };
      return this.commit(id, loaded, plan, options);
    });
  }

  deleteObject(id: string, options?: MutationOptions): Promise<MutationResult> {
    return this.mutate(id, async () => {
      const loaded = await this.load(id, [], true);
      this.checkCas(loaded, options);
      const dels = new Map<string, KeyInfo>();
      for (const info of loaded.all ?? []) dels.set(info.key, info);
      return this.commit(id, loaded, { sets: new Map(), dels, remove: true }, options);
    });
  }

  setEventConfig(
    id: string,
    event: ObjectEvent | undefined,
    options?: MutationOptions,
  ): Promise<MutationResult> {
    return this.mutate(id, async () => {
      const loaded = await this.load(id, [], false);
      this.checkCas(loaded, options);
      // Creates (or revives) a missing object; on a live one, removing no config is a no-op.
      const plan: Plan = {
        sets: new Map(),
        dels: new Map(),
        touch: !loaded.live,
        event: { value: event },
      };
      return this.commit(id, loaded, plan, options);
    });
  }

  // ---------------------------------------------------------------- reads

  async getMetadata(id: string): Promise<ObjectMetadata | undefined> {
    this.checkOpen();
    checkId(id);
    const metaKey = keyArg(() => encodeMetadataKey(id), "object id");
    let blob: ObjData | undefined | typeof RETRY;
    for (let retried = false; ; retried = true) {
      const raw = await this.kv.get("objects", metaKey);
      if (raw !== undefined) return metadataOf(id, decodeMeta(raw, metaKey));
      blob = await this.blobAfterMiss(id, retried);
      if (blob !== RETRY) break;
    }
    if (blob === undefined) return undefined;
    return {
      id,
      version: 0n,
      deleted: false,
      entryCount: BigInt(blobEntries(id, blob).size),
      createdAtMs: 0n,
      updatedAtMs: 0n,
      attributes: {},
      legacy: true,
    };
  }

  async getEntry(id: string, key: string): Promise<GetEntryResult> {
    this.checkOpen();
    checkId(id);
    const metaKey = keyArg(() => encodeMetadataKey(id), "object id");
    const info = keyInfo(id, key);
    let blob: ObjData | undefined | typeof RETRY;
    for (let retried = false; ; retried = true) {
      const [metaRaw, entryRaw] = await this.kv.getMany("objects", [metaKey, info.storageKey]);
      if (metaRaw !== undefined) {
        const meta = decodeMeta(metaRaw, metaKey);
        if (meta.tombstone) return { objectVersion: undefined, entry: undefined };
        if (entryRaw === undefined) return { objectVersion: meta.objectVersion, entry: undefined };
        const rec = decodeEntry(entryRaw, info.storageKey);
        return {
          objectVersion: meta.objectVersion,
          entry: this.storedEntry(info, rec.value, rec.version, rec.updatedAtMs),
        };
      }
      blob = await this.blobAfterMiss(id, retried);
      if (blob !== RETRY) break;
    }
    if (blob === undefined) return { objectVersion: undefined, entry: undefined };
    const value = info.numeric
      ? blob.entries[Number(info.key)]
      : Object.hasOwn(blob.entriesStr, info.key)
        ? blob.entriesStr[info.key]
        : undefined;
    return {
      objectVersion: 0n,
      entry:
        value === undefined
          ? undefined
          : { key: info.key, numeric: info.numeric, value, version: 0n, updatedAtMs: 0n },
    };
  }

  private storedEntry(
    info: KeyInfo,
    value: ValData | undefined,
    version: bigint,
    updatedAtMs: bigint,
  ): StoredEntry {
    if (value === undefined) {
      throw new StoreError("corrupt_record", `entry ${toHex(info.storageKey)} has no value`, {
        key: info.storageKey.slice(),
      });
    }
    return { key: info.key, numeric: info.numeric, value, version, updatedAtMs };
  }

  async getEventConfig(id: string): Promise<ObjectEvent | undefined> {
    this.checkOpen();
    checkId(id);
    const metaKey = keyArg(() => encodeMetadataKey(id), "object id");
    const eventKey = encodeEventConfigKey(id);
    for (let retried = false; ; retried = true) {
      const [metaRaw, eventRaw] = await this.kv.getMany("objects", [metaKey, eventKey]);
      if (metaRaw !== undefined) {
        const meta = decodeMeta(metaRaw, metaKey);
        if (meta.tombstone || eventRaw === undefined) return undefined;
        return decodeEvent(eventRaw, eventKey);
      }
      const blob = await this.blobAfterMiss(id, retried);
      if (blob !== RETRY) return blob?.event;
    }
  }

  async getObject(id: string, options: GetObjectOptions = {}): Promise<StoredObject | undefined> {
    this.checkOpen();
    checkId(id);
    const page = checkPositive(options.prefetchLimit ?? this.prefetchLimit, "prefetchLimit");
    const max = checkPositive(options.maxEntries ?? this.maxGetEntries, "maxEntries");
    const range = keyArg(() => objectRange(id), "object id");
    for (let retried = false; ; retried = true) {
      const found = await this.readObject(id, range, page, max);
      if (found !== MISSING) return found;
      const blob = await this.blobAfterMiss(id, retried);
      if (blob === RETRY) continue;
      if (blob === undefined) return undefined;
      const entries = new Map<number, ValData>();
      const entriesStr = new Map<string, ValData>();
      const all = blobEntries(id, blob);
      if (all.size > max) throw tooLarge(id, BigInt(all.size), max);
      for (const { info, value } of all.values()) {
        if (info.numeric) entries.set(Number(info.key), value);
        else entriesStr.set(info.key, value);
      }
      return {
        id,
        version: 0n,
        entries,
        entriesStr,
        event: blob.event,
        createdAtMs: 0n,
        updatedAtMs: 0n,
        attributes: {},
        legacy: true,
      };
    }
  }

  /** The granular part of {@link getObject}: one snapshot iterator over the object's range. */
  private async readObject(
    id: string,
    range: KeyRange,
    page: number,
    max: number,
  ): Promise<StoredObject | undefined | typeof MISSING> {
    const it = this.kv.iterator("objects", { gte: range.gte, lt: range.lt });
    let meta: ObjectMetaRecord | undefined;
    let event: ObjectEvent | undefined;
    const entries = new Map<number, ValData>();
    const entriesStr = new Map<string, ValData>();
    let count = 0;
    try {
      let first = true;
      for (;;) {
        // The first page also carries the metadata and event config records.
        const rows = await it.next(first ? page + 2 : page);
        if (rows.length === 0) break;
        for (const [key, value] of rows) {
          const decoded = this.decodeAnyKey(key);
          if (first) {
            first = false;
            if (decoded.record !== "metadata") break;
            meta = decodeMeta(value, key);
            if (meta.tombstone) return undefined;
            if (meta.entryCount > BigInt(max)) throw tooLarge(id, meta.entryCount, max);
            continue;
          }
          switch (decoded.record) {
            case "event_config":
              event = decodeEvent(value, key);
              break;
            case "numeric_entry": {
              if (++count > max) throw tooLarge(id, BigInt(count), max);
              const rec = decodeEntry(value, key);
              entries.set(decoded.key.numeric, this.entryValue(rec.value, key));
              break;
            }
            case "string_entry": {
              if (++count > max) throw tooLarge(id, BigInt(count), max);
              const rec = decodeEntry(value, key);
              entriesStr.set(decoded.key.str, this.entryValue(rec.value, key));
              break;
            }
            default:
              // view blobs and extension records are not part of the object's data.
              break;
          }
        }
        if (meta === undefined) break;
      }
    } finally {
      await it.close();
    }
    if (meta !== undefined) {
      return {
        id,
        version: meta.objectVersion,
        entries,
        entriesStr,
        event,
        createdAtMs: meta.createdAtMs,
        updatedAtMs: meta.updatedAtMs,
        attributes: { ...meta.attributes },
        legacy: false,
      };
    }
    return MISSING;
  }

  private entryValue(value: ValData | undefined, key: Uint8Array): ValData {
    if (value === undefined) {
      throw new StoreError("corrupt_record", `entry ${toHex(key)} has no value`, {
        key: key.slice(),
      });
    }
    return value;
  }

  async listEntries(id: string, options: ListEntriesOptions = {}): Promise<ListEntriesResult> {
    this.checkOpen();
    checkId(id);
    const limit = checkLimit(options.limit);
    const prefix = options.prefix;
    if (prefix !== undefined && typeof prefix !== "string") {
      throw new StoreError("invalid_argument", "prefix must be a string");
    }
    let ranges = keyArg(
      () =>
        entryRange(
          id,
          prefix === undefined || prefix === ""
            ? {}
            : { stringPrefix: prefix, maxKeyLength: this.maxKeyLength },
        ),
      "list entries",
    );
    if (options.cursor !== undefined) {
      const cursor = options.cursor;
      let lastKey: Uint8Array;
      try {
        lastKey = decodeCursor(id, cursor);
      } catch (err) {
        throw new StoreError("invalid_cursor", err instanceof Error ? err.message : String(err), {
          cause: err,
        });
      }
      ranges = rangesAfter(ranges, lastKey);
    }
    const metaKey = encodeMetadataKey(id);
    let metaRaw: Uint8Array | undefined;
    for (let retried = false; ; retried = true) {
      metaRaw = await this.kv.get("objects", metaKey);
      if (metaRaw !== undefined) break;
      const blob = await this.blobAfterMiss(id, retried);
      if (blob === RETRY) continue;
      if (blob === undefined) return { entries: [], nextCursor: undefined };
      return this.listBlobEntries(id, blob, ranges, limit);
    }
    if (decodeMeta(metaRaw, metaKey).tombstone || ranges.length === 0) {
      return { entries: [], nextCursor: undefined };
    }
    const out: StoredEntry[] = [];
    const first = ranges[0] as KeyRange;
    const last = ranges[ranges.length - 1] as KeyRange;
    const it = this.kv.iterator("objects", { gte: first.gte, lt: last.lt });
    let more = false;
    try {
      scan: for (;;) {
        const rows = await it.next(limit + 1 - out.length);
        if (rows.length === 0) break;
        for (const [key, value] of rows) {
          // One range (no prefix): the iterator's bounds already are the range.
          if (ranges.length > 1) {
            const i = findRange(ranges, key);
            if (i >= ranges.length) break scan;
            const r = ranges[i] as KeyRange;
            if (compareBytes(key, r.gte) < 0) {
              // Between two prefix ranges: skip the gap in one seek and read again.
              it.seek(r.gte);
              continue scan;
            }
          }
          if (out.length === limit) {
            more = true;
            break scan;
          }
          // Engines hand out keys they never mutate, so no copy is needed.
          const info = decodeEntryKey(id, key);
          const rec = decodeEntry(value, key);
          out.push(this.storedEntry(info, rec.value, rec.version, rec.updatedAtMs));
        }
      }
    } finally {
      await it.close();
    }
    const tail = out[out.length - 1];
    return {
      entries: out,
      nextCursor:
        more && tail !== undefined ? encodeCursor(id, keyInfo(id, tail.key).storageKey) : undefined,
    };
  }

  private listBlobEntries(
    id: string,
    blob: ObjData,
    ranges: readonly KeyRange[],
    limit: number,
  ): ListEntriesResult {
    const all = [...blobEntries(id, blob).values()]
      .filter(({ info }) => {
        const i = findRange(ranges, info.storageKey);
        return i < ranges.length && compareBytes(info.storageKey, (ranges[i] as KeyRange).gte) >= 0;
      })
      .sort((a, b) => compareEntryKeys(a.info, b.info));
    const page = all.slice(0, limit);
    const tail = page[page.length - 1];
    return {
      entries: page.map(({ info, value }) => ({
        key: info.key,
        numeric: info.numeric,
        value,
        version: 0n,
        updatedAtMs: 0n,
      })),
      nextCursor:
        all.length > limit && tail !== undefined
          ? encodeCursor(id, tail.info.storageKey)
          : undefined,
    };
  }

  async listObjects(options: ListObjectsOptions = {}): Promise<ListObjectsResult> {
    this.checkOpen();
    const limit = checkLimit(options.limit);
    const prefix = options.prefix === "" ? undefined : options.prefix;
    const range = keyArg(
      () => objectsRange(prefix === undefined ? undefined : { idPrefix: prefix }),
      "object id prefix",
    );
    let gte = range.gte;
    if (options.cursor !== undefined) {
      let lastKey: Uint8Array;
      try {
        lastKey = decodeListCursor(prefix, options.cursor);
      } catch (err) {
        throw new StoreError("invalid_cursor", err instanceof Error ? err.message : String(err), {
          cause: err,
        });
      }
      gte = afterObject(lastKey);
    }
    const objects: ObjectSummary[] = [];
    let lastKey: Uint8Array | undefined;
    let more = false;
    const it = this.kv.iterator("objects", { gte, lt: range.lt });
    try {
      for (;;) {
        const [row] = await it.next(1);
        if (row === undefined) break;
        const [key, value] = row;
        const decoded = this.decodeAnyKey(key);
        if (
          decoded.record === "metadata" &&
          !(options.numericIdsOnly === true && !isCanonicalU64(decoded.id))
        ) {
          const meta = decodeMeta(value, key);
          if (!meta.tombstone) {
            if (objects.length === limit) {
              more = true;
              break;
            }
            objects.push({
              id: decoded.id,
              version: meta.objectVersion,
              entryCount: meta.entryCount,
              createdAtMs: meta.createdAtMs,
              updatedAtMs: meta.updatedAtMs,
            });
            lastKey = key.slice();
          }
        }
        it.seek(afterObject(key));
      }
    } finally {
      await it.close();
    }
    return {
      objects,
      nextCursor: more && lastKey !== undefined ? encodeListCursor(prefix, lastKey) : undefined,
    };
  }

  stats(): StoreStats {
    return { liveObjects: this.liveObjects, blobFallbackReads: this.fallbackReads };
  }

  // ---------------------------------------------------------------- legacy blobs

  async *legacyBlobIds(
    options: { after?: bigint; batchSize?: number } = {},
  ): AsyncIterable<bigint> {
    this.checkOpen();
    const size = checkPositive(options.batchSize ?? 256, "batchSize");
    const it = this.kv.iterator(
      "blobs",
      options.after === undefined
        ? { keysOnly: true }
        : { gt: keyArg(() => encodeLegacyKey(options.after as bigint), "after"), keysOnly: true },
    );
    try {
      for (;;) {
        const rows = await it.next(size);
        if (rows.length === 0) return;
        for (const [key] of rows) {
          if (key.length !== 8) {
            throw new StoreError("corrupt_record", `legacy blob key ${toHex(key)} is not 8 bytes`, {
              key: key.slice(),
            });
          }
          yield new DataView(key.buffer, key.byteOffset, 8).getBigUint64(0, false);
        }
      }
    } finally {
      await it.close();
    }
  }

  async getLegacyBlob(id: bigint): Promise<ObjData | undefined> {
    this.checkOpen();
    const key = keyArg(() => encodeLegacyKey(id), "legacy id");
    const raw = await this.kv.get("blobs", key);
    return raw === undefined ? undefined : decodeBlob(raw, key);
  }

  async convertLegacyObject(id: bigint, options: { sync?: boolean } = {}): Promise<ConvertResult> {
    this.checkOpen();
    const blobKey = keyArg(() => encodeLegacyKey(id), "legacy id");
    const sid = id.toString();
    return this.lock.run(sid, async () => {
      this.checkOpen();
      const metaKey = encodeMetadataKey(sid);
      const [metaRaw] = await this.kv.getMany("objects", [metaKey]);
      const raw = await this.kv.get("blobs", blobKey);
      if (raw === undefined) return { converted: false, entries: 0 };
      const ops: KvWriteOp[] = [{ type: "del", keyspace: "blobs", key: blobKey }];
      if (metaRaw !== undefined) {
        // Already granular; the blob is stale (written by something else after conversion).
        // The granular record wins: drop the blob, which the counter scan counted as an object.
        this.liveObjects -= 1n;
        ops.push({
          type: "put",
          keyspace: "system",
          key: COUNTERS_KEY,
          value: encodeCounters(this.liveObjects),
        });
        try {
          await this.kv.write(ops, { sync: options.sync ?? this.sync });
        } catch (err) {
          this.liveObjects += 1n;
          throw err;
        }
        return { converted: false, entries: 0 };
      }
      const blob = decodeBlob(raw, blobKey);
      const entries = blobEntries(sid, blob);
      const nowMs = BigInt(Math.max(0, Math.floor(this.now())));
      for (const { info, value } of entries.values()) {
        ops.push({
          type: "put",
          keyspace: "objects",
          key: info.storageKey,
          value: encodeEntry(value, 0n, nowMs),
        });
      }
      ops.push({
        type: "put",
        keyspace: "objects",
        key: metaKey,
        value: encodeMeta({
          objectVersion: 0n,
          tombstone: false,
          entryCount: BigInt(entries.size),
          createdAtMs: nowMs,
          updatedAtMs: nowMs,
          attributes: {},
        }),
      });
      if (blob.event !== undefined) {
        ops.push({
          type: "put",
          keyspace: "objects",
          key: encodeEventConfigKey(sid),
          value: encodeEvent(blob.event),
        });
      }
      await this.kv.write(ops, { sync: options.sync ?? this.sync });
      return { converted: true, entries: entries.size };
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.lock.drain();
    claimed.delete(this.kv);
  }
}

/** Returned by a granular read that found no metadata. */
const MISSING: unique symbol = Symbol("missing");
/** Returned by `blobAfterMiss` when the object was converted between two reads. */
const RETRY: unique symbol = Symbol("retry");

/** Placeholder value marking "present before" for keys whose value a delete does not need. */
const PRESENT: ValData = create(ValDataSchema, {});

function tooLarge(id: string, count: bigint, max: number): StoreError {
  return new StoreError(
    "too_large",
    `object ${id} has ${count} entries, more than the ${max} a whole-object read returns; use ListValues to page through its entries`,
  );
}
