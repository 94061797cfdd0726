import type { ObjectEvent, ValData } from "@oprc/grpc-api/messages";

/** What a mutation did to one entry: created (absent before), updated, or deleted. */
export type EntryAction = "create" | "update" | "delete";

/** One entry a mutation changed, in the form the event pipeline needs. */
export interface ChangedEntry {
  /** Canonical key string; numeric keys in decimal (`"42"`). */
  readonly key: string;
  /** True when the key is a canonical u32 (`data_trigger`), false for `data_trigger_str`. */
  readonly numeric: boolean;
  /** Create = absent before; update = present before; delete = present before and removed. */
  readonly action: EntryAction;
}

/**
 * The outcome of every mutation, built from the reads the write itself used. A call that
 * changed nothing has `versionBefore === versionAfter` and an empty `changed`.
 */
export interface MutationResult {
  /** Object version before the call (0 for a missing object). */
  readonly versionBefore: bigint;
  /** Object version after the call (`versionBefore + 1` when anything changed). */
  readonly versionAfter: bigint;
  /** Changed entries, in storage order (numeric keys, then string keys). */
  readonly changed: readonly ChangedEntry[];
  /** True when the call wrote anything. */
  readonly wrote: boolean;
  /** Whether the object existed (live) before the call. */
  readonly existedBefore: boolean;
  /** Whether the object exists (live) after the call. */
  readonly exists: boolean;
  /**
   * The event config in effect for this mutation's events: the config after the call, or,
   * for `deleteObject` (which removes it), the config the object had before.
   */
  readonly eventConfig: ObjectEvent | undefined;
}

/** Options of every mutation. */
export interface MutationOptions {
  /**
   * Compare-and-swap: the call fails with `version_mismatch` (and writes nothing) unless
   * the object's current version equals this. A missing object is version 0. Default: no check.
   */
  expectedVersion?: bigint;
  /** Sync the write-ahead log before resolving. Default: the store's `sync` option (true). */
  sync?: boolean;
}

/** An object's metadata as stored (granular) or synthesized (legacy blob). */
export interface ObjectMetadata {
  /** The object id. */
  readonly id: string;
  /** Current object version (legacy blobs have none: 0). */
  readonly version: bigint;
  /** True for a deleted object (tombstone kept so versions stay monotonic). */
  readonly deleted: boolean;
  /** Number of live entries. */
  readonly entryCount: bigint;
  /** Creation time (ms since the epoch; 0 for legacy blobs). */
  readonly createdAtMs: bigint;
  /** Last mutation time (ms since the epoch; 0 for legacy blobs). */
  readonly updatedAtMs: bigint;
  /** Free-form attributes of the metadata record. */
  readonly attributes: Readonly<Record<string, string>>;
  /** True when the object is still a legacy blob (not yet converted to entries). */
  readonly legacy: boolean;
}

/** One stored entry. */
export interface StoredEntry {
  /** Canonical key string; numeric keys in decimal. */
  readonly key: string;
  /** True for a canonical u32 key. */
  readonly numeric: boolean;
  /** The value. */
  readonly value: ValData;
  /** The object version of the entry's last mutation (0 for legacy data). */
  readonly version: bigint;
  /** Time of the entry's last mutation (ms; 0 for legacy data). */
  readonly updatedAtMs: bigint;
}

/** Result of {@link EntryStore.getEntry}. */
export interface GetEntryResult {
  /** The object's version when it exists, else `undefined`. */
  readonly objectVersion: bigint | undefined;
  /** The entry, or `undefined` when absent (or the object does not exist). */
  readonly entry: StoredEntry | undefined;
}

/** A whole object, reconstructed from its entries. */
export interface StoredObject {
  /** The object id. */
  readonly id: string;
  /** Object version. */
  readonly version: bigint;
  /** Numeric-keyed entries (`ObjData.entries`). */
  readonly entries: Map<number, ValData>;
  /** String-keyed entries (`ObjData.entries_str`). */
  readonly entriesStr: Map<string, ValData>;
  /** Event config, if any. */
  readonly event: ObjectEvent | undefined;
  /** Creation time (ms). */
  readonly createdAtMs: bigint;
  /** Last mutation time (ms). */
  readonly updatedAtMs: bigint;
  /** Metadata attributes. */
  readonly attributes: Readonly<Record<string, string>>;
  /** True when served from a legacy blob. */
  readonly legacy: boolean;
}

/** Entries given to `setObject`/`mergeObject`/`batch`: canonical key → value. */
export type EntryInput = ReadonlyMap<string, ValData> | Iterable<readonly [string, ValData]>;

/** The payload of `setObject` and `mergeObject`. */
export interface ObjectInput {
  /** Entries, keyed by canonical key string (numeric keys in decimal). */
  entries?: EntryInput;
  /** Event config: replaces the stored one when present; kept when absent. */
  event?: ObjectEvent;
}

/** The payload of {@link EntryStore.batch}. */
export interface BatchInput {
  /** Entries to set. A key may appear once. */
  set?: EntryInput;
  /** Keys to delete (missing keys are ignored). A key may not also be set. */
  delete?: Iterable<string>;
}

/** Options of {@link EntryStore.getObject}. */
export interface GetObjectOptions {
  /** Entries read per storage page. Default: the store's `prefetchLimit` (256). */
  prefetchLimit?: number;
  /** Ceiling on entries; more → `too_large`. Default: the store's `maxGetEntries`. */
  maxEntries?: number;
}

/** Options of {@link EntryStore.listEntries}. */
export interface ListEntriesOptions {
  /**
   * Only keys whose canonical string starts with this (numeric keys by their decimal
   * form: `"4"` matches 4, 42, 400…). Every matching key is returned. Default: all.
   */
  prefix?: string;
  /** Page size. Default 100; capped at 1024; 0 means the default. */
  limit?: number;
  /** `nextCursor` of the previous page. A cursor of another object is `invalid_cursor`. */
  cursor?: Uint8Array;
}

/** A page of entries. */
export interface ListEntriesResult {
  /** Entries in storage order (numeric keys ascending, then string keys by length, bytes). */
  readonly entries: StoredEntry[];
  /** Set when more entries remain: pass it as `cursor` for the next page. */
  readonly nextCursor: Uint8Array | undefined;
}

/** Options of {@link EntryStore.listObjects}. */
export interface ListObjectsOptions {
  /** Only ids starting with this. Default: all. */
  prefix?: string;
  /** Page size. Default 100; capped at 1024; 0 means the default. */
  limit?: number;
  /** `nextCursor` of the previous page of the same listing. */
  cursor?: Uint8Array;
  /** Only objects with canonical numeric ids (for `ODGM_STRING_IDS_WRITE_ONLY`). Default false. */
  numericIdsOnly?: boolean;
}

/** One object of a listing. */
export interface ObjectSummary {
  /** The object id. */
  readonly id: string;
  /** Object version. */
  readonly version: bigint;
  /** Number of live entries (from metadata, O(1)). */
  readonly entryCount: bigint;
  /** Creation time (ms). */
  readonly createdAtMs: bigint;
  /** Last mutation time (ms). */
  readonly updatedAtMs: bigint;
}

/** A page of objects. */
export interface ListObjectsResult {
  /** Live objects ordered by id bytes. */
  readonly objects: ObjectSummary[];
  /** Set when more objects remain. */
  readonly nextCursor: Uint8Array | undefined;
}

/** Store statistics. */
export interface StoreStats {
  /** Live objects of the shard (granular and legacy), from the persisted counter. */
  readonly liveObjects: bigint;
  /** Reads served from legacy blobs since the store opened (`odgm_blob_fallback_reads_total`). */
  readonly blobFallbackReads: number;
}

/** Result of {@link EntryStore.convertLegacyObject}. */
export interface ConvertResult {
  /** True when a blob was converted; false when there was none or it was already converted. */
  readonly converted: boolean;
  /** Entries written by the conversion. */
  readonly entries: number;
  /** The call removed the object's legacy blob: converted it, or dropped it as stale. */
  readonly blobRemoved: boolean;
}
