import type { EntryKey, ObjectIdentity } from "@oprc/oprc-id";
import type { ObjectEvent, ValType } from "./gen/oprc-data_pb.js";
import type { ResponseStatus } from "./gen/oprc-invoke_pb.js";

/** The collection partition a request addresses. */
export interface PartitionRef {
  /** Collection (class) id, non-empty, as sent by the client. */
  readonly cls: string;
  /** Partition id (u32). */
  readonly partition: number;
}

/** One object of one collection partition. */
export interface ObjectRef extends PartitionRef {
  /**
   * The normalized object identity (`@oprc/oprc-id`): `id` is the storage string (numeric 42
   * → `"42"`), `kind` the wire form the client used.
   */
  readonly id: ObjectIdentity;
}

/** An entry value: opaque bytes and how to interpret them (`VAL_TYPE_CRDT_MAP` merges). */
export interface EntryValue {
  readonly data: Uint8Array;
  readonly type: ValType;
}

/** An entry to write. */
export interface EntryWrite {
  readonly key: EntryKey;
  readonly value: EntryValue;
}

/** An entry as stored. */
export interface StoredEntry {
  readonly key: EntryKey;
  readonly value: EntryValue;
  /** The object version at the entry's last mutation. */
  readonly version: bigint;
}

/** A whole object as read by Get or returned by Merge. */
export interface StoredObject {
  /** The object's current version. */
  readonly version: bigint;
  /** Every live entry (numeric and string); the handler splits them into the two maps. */
  readonly entries: Iterable<StoredEntry>;
  /** The object's event config, when it has one. */
  readonly event?: ObjectEvent | undefined;
}

/** The result of reading one entry. */
export interface EntryRead {
  /** The object's version; `undefined` when the object does not exist. */
  readonly objectVersion?: bigint | undefined;
  /** The entry, `undefined` when it does not exist. */
  readonly entry?: StoredEntry | undefined;
}

/** What Set and Merge write. */
export interface ObjectWrite {
  /** Entries to write, keys unique. For Set, entries not listed are removed. */
  readonly entries: readonly EntryWrite[];
  /** When present, replaces the object's event config; when absent it is left unchanged. */
  readonly event?: ObjectEvent | undefined;
}

/** One atomic batch (BatchSetValues). Keys are unique across `set` and `delete`. */
export interface EntryBatch {
  readonly set: readonly EntryWrite[];
  readonly delete: readonly EntryKey[];
  /** Compare-and-swap: apply only when the object's version equals this (missing object = 0). */
  readonly expectedVersion?: bigint | undefined;
}

/** A page request for ListValues. */
export interface ListEntriesQuery {
  /** Normalized prefix filtering *string* keys; `undefined` means no filter. */
  readonly keyPrefix?: string | undefined;
  /** Maximum entries to yield, already defaulted and capped by the handler (1…max). */
  readonly limit: number;
  /** Opaque cursor from a previous page's `nextCursor`; `undefined` starts from the beginning. */
  readonly cursor?: Uint8Array | undefined;
}

/** One ListValues item. */
export interface ListedEntry extends StoredEntry {
  /** Set on the last item of a page when more entries remain. */
  readonly nextCursor?: Uint8Array | undefined;
}

/** A page request for ListObjects. */
export interface ListObjectsQuery {
  /** Normalized object id prefix; `undefined` means no filter. */
  readonly idPrefix?: string | undefined;
  /** Maximum objects to yield, already defaulted and capped by the handler (1…max). */
  readonly limit: number;
  /** Opaque cursor from a previous page's `nextCursor`. */
  readonly cursor?: Uint8Array | undefined;
}

/** One ListObjects item (live objects only). */
export interface ListedObject {
  /** The normalized object id. */
  readonly id: string;
  readonly version: bigint;
  readonly entryCount: bigint;
  /** Set on the last item of a page when more objects remain. */
  readonly nextCursor?: Uint8Array | undefined;
}

/** Live object count of one local shard. */
export interface ShardStat {
  readonly collection: string;
  readonly partition: number;
  readonly shardId: bigint;
  readonly count: bigint;
}

/** What the plane itself has enabled (the handler adds the id/key feature flags). */
export interface DataPlaneCapabilities {
  /** Entries are stored per entry (granular), not as legacy whole-object blobs. */
  readonly granularEntryStorage: boolean;
  /** The Events V2 pipeline is running (mutations emit events and fire triggers). */
  readonly eventPipelineV2: boolean;
}

/**
 * Request metadata asking a read of a raft shard for its consistency: `linearizable`,
 * `lease` or `follower` (odgm's `ODGM_READ_CONSISTENCY` values).
 */
export const READ_CONSISTENCY_HEADER = "odgm-read-consistency";

/** Per-call context passed to every plane method. */
export interface DataPlaneCall {
  /** Aborted when the client cancels or the deadline passes. */
  readonly signal: AbortSignal;
  /** Request headers (gRPC metadata), for tracing and forwarding. */
  readonly headers: Headers;
  /**
   * Adds a warning for the client, sent as an `odgm-warning` response header (e.g. a
   * deprecated way of writing). Absent where the transport cannot carry one.
   */
  readonly warn?: ((message: string) => void) | undefined;
}

/** A stateless function invocation (InvokeFn). */
export interface FunctionInvocation extends PartitionRef {
  readonly fn: string;
  readonly options: Readonly<Record<string, string>>;
  readonly payload: Uint8Array;
}

/** An invocation on one object (InvokeObj). */
export interface ObjectInvocation extends ObjectRef {
  readonly fn: string;
  readonly options: Readonly<Record<string, string>>;
  readonly payload: Uint8Array;
}

/** The outcome of an invocation; application failures are a status, not a thrown error. */
export interface InvocationResult {
  readonly payload?: Uint8Array | undefined;
  readonly status: ResponseStatus;
  readonly headers?: Readonly<Record<string, string>> | undefined;
  readonly invocationId?: string | undefined;
}

/**
 * The object operations DataService needs, in resolved, transport-neutral terms: ids and
 * keys are already normalized, partitions range-checked, limits defaulted and capped.
 *
 * Methods report failures by throwing {@link DataPlaneError} (or `ConnectError`); anything
 * else becomes INTERNAL with no details sent to the client.
 */
export interface ObjectDataPlane {
  /** What the plane has enabled right now (reported by Capabilities). */
  capabilities(): DataPlaneCapabilities | Promise<DataPlaneCapabilities>;
  /** Reads a whole object; `undefined` when it does not exist (→ NOT_FOUND). */
  getObject(ref: ObjectRef, call: DataPlaneCall): Promise<StoredObject | undefined>;
  /** Deletes an object (tombstone). Idempotent. */
  deleteObject(ref: ObjectRef, call: DataPlaneCall): Promise<void>;
  /** Replaces an object atomically: listed entries written, the others removed. */
  setObject(ref: ObjectRef, write: ObjectWrite, call: DataPlaneCall): Promise<void>;
  /** Upserts the listed entries atomically and returns the merged object. */
  mergeObject(ref: ObjectRef, write: ObjectWrite, call: DataPlaneCall): Promise<StoredObject>;
  /** Reads one entry and the object's version. */
  getEntry(ref: ObjectRef, key: EntryKey, call: DataPlaneCall): Promise<EntryRead>;
  /** Writes one entry. */
  setEntry(ref: ObjectRef, entry: EntryWrite, call: DataPlaneCall): Promise<void>;
  /** Deletes one entry. Idempotent. */
  deleteEntry(ref: ObjectRef, key: EntryKey, call: DataPlaneCall): Promise<void>;
  /** Sets and deletes entries in one atomic write, optionally CAS on the object version. */
  batchEntries(ref: ObjectRef, batch: EntryBatch, call: DataPlaneCall): Promise<void>;
  /**
   * Yields at most `query.limit` entries in storage order, setting `nextCursor` on the last
   * one when more remain. An invalid cursor throws `DataPlaneError("invalid_cursor")`.
   */
  listEntries(
    ref: ObjectRef,
    query: ListEntriesQuery,
    call: DataPlaneCall,
  ): AsyncIterable<ListedEntry>;
  /** Yields at most `query.limit` live objects ordered by id bytes, `nextCursor` as above. */
  listObjects(
    partition: PartitionRef,
    query: ListObjectsQuery,
    call: DataPlaneCall,
  ): AsyncIterable<ListedObject>;
  /** Live object counts of the local shards. */
  stats(call: DataPlaneCall): Promise<readonly ShardStat[]>;
}

/** The invocation operations OprcFunction needs. */
export interface InvocationPlane {
  /** Invokes a stateless function of a collection partition. */
  invokeFn(invocation: FunctionInvocation, call: DataPlaneCall): Promise<InvocationResult>;
  /** Invokes a function on one object. */
  invokeObj(invocation: ObjectInvocation, call: DataPlaneCall): Promise<InvocationResult>;
}

/**
 * Everything the ODGM gRPC API serves, over whatever storage and routing the host has.
 * Implement it to host DataService and OprcFunction over your own data plane.
 */
export interface DataPlane extends ObjectDataPlane, InvocationPlane {}
