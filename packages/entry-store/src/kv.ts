/**
 * The backend port: the small ordered key-value interface both storage engines (memory
 * and RocksDB) implement. The entry-store semantics are written once, on top of it.
 *
 * An engine holds many shards; a shard has three keyspaces, each an ordered map of byte
 * strings (memcmp order):
 * - `objects`: the granular object records of spec §3 (metadata, event config, entries);
 * - `blobs`: legacy whole-object blobs under 8-byte big-endian ids;
 * - `system`: per-shard system records (counters).
 */
export type Keyspace = "objects" | "blobs" | "system";

/** Bounds of a key range; unset bounds are open. */
export interface KvRange {
  /** Inclusive lower bound. */
  gte?: Uint8Array;
  /** Exclusive lower bound. */
  gt?: Uint8Array;
  /** Exclusive upper bound. */
  lt?: Uint8Array;
  /** Inclusive upper bound. */
  lte?: Uint8Array;
}

/** Options of {@link KvShard.iterator}. */
export interface KvIteratorOptions extends KvRange {
  /** Iterate from the upper bound down. Default false. */
  reverse?: boolean;
  /** Stop after this many records. Default: unbounded (the range bounds the scan). */
  limit?: number;
  /** Skip reading values (yielded values are empty). Default false. */
  keysOnly?: boolean;
}

/** One key-value pair. Engines never mutate arrays they hand out; callers must not either. */
export type KvEntry = readonly [key: Uint8Array, value: Uint8Array];

/**
 * A bounded iterator over one keyspace of one shard. It observes a consistent
 * point-in-time view of the keyspace as of its creation (later writes are not seen).
 */
export interface KvIterator {
  /** Up to `max` next records; an empty array means the iterator is exhausted. */
  next(max: number): Promise<KvEntry[]>;
  /**
   * Repositions a forward iterator at the first key ≥ `key` within its bounds (a key below
   * the lower bound positions at the lower bound). Reverse iterators throw `invalid_argument`.
   */
  seek(key: Uint8Array): void;
  /** Releases the iterator. Idempotent. */
  close(): Promise<void>;
}

/** One operation of an atomic write batch. */
export type KvWriteOp =
  | {
      readonly type: "put";
      readonly keyspace: Keyspace;
      readonly key: Uint8Array;
      readonly value: Uint8Array;
    }
  | { readonly type: "del"; readonly keyspace: Keyspace; readonly key: Uint8Array };

/** Options of {@link KvShard.write}. */
export interface KvWriteOptions {
  /** Sync the write-ahead log before resolving. Default true. */
  sync?: boolean;
}

/**
 * One shard's view of an engine. All reads and writes are confined to the shard.
 * Writes are atomic: either every op of a `write` call is applied or none is, and
 * writes of one shard are applied in the order `write` was called.
 */
export interface KvShard {
  /** The shard's name, as passed to {@link KvEngine.openShard}. */
  readonly name: string;
  /** Point read; `undefined` when absent. */
  get(keyspace: Keyspace, key: Uint8Array): Promise<Uint8Array | undefined>;
  /** Multi-get from one consistent view; results are in the order of `keys`. */
  getMany(keyspace: Keyspace, keys: readonly Uint8Array[]): Promise<(Uint8Array | undefined)[]>;
  /** A bounded iterator; see {@link KvIterator}. */
  iterator(keyspace: Keyspace, options?: KvIteratorOptions): KvIterator;
  /**
   * Applies `ops` atomically (one write batch). The engine may keep references to the
   * given arrays until the returned promise settles (group commit); do not mutate them
   * before that.
   */
  write(ops: readonly KvWriteOp[], options?: KvWriteOptions): Promise<void>;
  /**
   * Removes every key in [`range.gte`, `range.lt`) of `keyspace` (RocksDB: one range
   * deletion, whatever the number of keys), in order with this shard's writes: after every
   * `write` called before it, before every one called after. Not atomic with any write and
   * not synced: for records nothing needs back, such as a log's records below a compaction
   * point (a crash may bring them back; remove them again).
   */
  clear(
    keyspace: Keyspace,
    range: { readonly gte: Uint8Array; readonly lt: Uint8Array },
  ): Promise<void>;
}

/** A storage engine: one database holding many shards. */
export interface KvEngine {
  /** `"memory"` or `"rocksdb"`. */
  readonly kind: string;
  /** Opens (creating if needed) the shard `name`; the same name returns the same shard object. */
  openShard(name: string): Promise<KvShard>;
  /** Names of every shard the engine holds, sorted. */
  listShards(): Promise<string[]>;
  /** Closes the engine; later operations fail with `closed`. Idempotent. */
  close(): Promise<void>;
}
