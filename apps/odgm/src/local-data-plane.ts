import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  isStoreError,
  type MutationResult,
  type StoredEntry as StoreEntry,
  type StoreOp,
} from "@oprc/entry-store";
import { triggerDepthOf } from "@oprc/event-v2";
import {
  type DataPlane,
  type DataPlaneCall,
  DataPlaneError,
  type EntryRead,
  type EntryValue,
  type EntryWrite,
  InvocationRequestSchema,
  type InvocationResult,
  isDataPlaneError,
  type ListedEntry,
  type ListedObject,
  type ObjectEvent,
  ObjectEventSchema,
  ObjectInvocationRequestSchema,
  type ObjectRef,
  type PartitionRef,
  READ_CONSISTENCY_HEADER,
  ResponseStatus,
  type ShardStat,
  type StoredObject,
  type ValData,
} from "@oprc/grpc-api";
import { type EntryKey, isCanonicalU64 } from "@oprc/oprc-id";
import { replicasOf } from "./cluster/placement.js";
import type { CollectionRegistry } from "./collections/collection-registry.js";
import type { NumericIdCreates, ReadConsistency } from "./config.js";
import type { FunctionClientPool } from "./invoke/function-client-pool.js";
import type { OdgmMetrics } from "./observability/metrics.js";
import type { Shard, ShardManager } from "./shards/shard-manager.js";

/** An operation without the fields the plane fills in (object id, time). */
type OpBody = StoreOp extends infer T
  ? T extends unknown
    ? Omit<T, "objectId" | "timestampMs">
    : never
  : never;

/** Options of {@link createLocalDataPlane}. */
export interface LocalDataPlaneOptions {
  readonly shards: ShardManager;
  readonly registry: CollectionRegistry;
  readonly functions: FunctionClientPool;
  readonly metrics: OdgmMetrics;
  /** The Events V2 pipeline runs (`ODGM_EVENT_PIPELINE_V2`). */
  readonly eventPipeline: boolean;
  /** Hide string-id objects from listings (`ODGM_STRING_IDS_WRITE_ONLY`). */
  readonly stringIdsWriteOnly: boolean;
  /** Writes to string-id objects (`ODGM_STRING_ID_WRITES`). Default true. */
  readonly stringIdWrites?: boolean;
  /** Creating objects by numeric `object_id` (`ODGM_NUMERIC_ID_CREATES`). Default `allow`. */
  readonly numericIdCreates?: NumericIdCreates;
  /** Told of every numeric-id create while `numericIdCreates` is `warn` (to log it). */
  readonly onNumericCreate?: (ref: ObjectRef) => void;
  /** Bound on one function invocation (`ODGM_INVOKE_TIMEOUT_MS`). */
  readonly invokeTimeoutMs: number;
  /** Default read consistency of raft shards (`ODGM_READ_CONSISTENCY`). Default linearizable. */
  readonly readConsistency?: ReadConsistency;
  /** The address of a cluster member, for hints in errors. */
  readonly addressOf?: (nodeId: number) => string | undefined;
  /** True when a raft partition is placed on this node but its replica is not open yet. */
  readonly opening?: (cls: string, partition: number) => boolean;
  /**
   * Why the cluster refuses this node (its data directory was wiped or replaced), or
   * `undefined`: a request for a partition it does not hold is then UNAVAILABLE, not
   * NOT_FOUND (it may not know the collections).
   */
  readonly refused?: () => string | undefined;
  /** Told when storage refused a write and refuses all writes until the node restarts. */
  readonly onWriteFailed?: (err: Error) => void;
}

/** Maps entry-store errors to the API's data-plane errors; other errors pass through. */
function toPlaneError(err: unknown): unknown {
  if (!isStoreError(err)) return err;
  switch (err.code) {
    case "not_found":
      return new DataPlaneError("not_found", err.message, { cause: err });
    case "version_mismatch":
      return new DataPlaneError("version_mismatch", err.message, {
        cause: err,
        ...(err.expected === undefined ? {} : { expected: err.expected }),
        ...(err.actual === undefined ? {} : { actual: err.actual }),
      });
    case "too_large":
      return new DataPlaneError("too_large", err.message, { cause: err });
    case "invalid_cursor":
      return new DataPlaneError("invalid_cursor", err.message, { cause: err });
    case "invalid_argument":
      return new DataPlaneError("invalid_argument", err.message, { cause: err });
    case "closed":
    case "locked":
      return new DataPlaneError("unavailable", "the shard is not available", { cause: err });
    case "write_failed":
      return new DataPlaneError("unavailable", err.message, { cause: err });
    default:
      return err;
  }
}

const keyOf = (key: string, numeric: boolean): EntryKey =>
  numeric ? { kind: "numeric", key, numeric: Number(key) } : { kind: "string", key };

const entryValueOf = (v: ValData): EntryValue => ({ data: v.data, type: v.type });

function storedEntry(e: StoreEntry): ListedEntry {
  return { key: keyOf(e.key, e.numeric), value: entryValueOf(e.value), version: e.version };
}

/**
 * The data plane of a single node: requests resolve to the local shard of their
 * collection partition, every mutation is one atomic write of that shard's entry store,
 * and once it is durable its changes go to the shard's event dispatcher.
 */
export function createLocalDataPlane(options: LocalDataPlaneOptions): DataPlane {
  const { shards, metrics } = options;

  const shardOf = (ref: PartitionRef): Shard => {
    const shard = shards.get(ref.cls, ref.partition);
    if (shard !== undefined) return shard;
    const refused = options.refused?.();
    if (refused !== undefined) throw new DataPlaneError("unavailable", refused);
    if (!shards.hasCollection(ref.cls)) {
      throw new DataPlaneError("not_found", `collection ${JSON.stringify(ref.cls)} does not exist`);
    }
    const spec = options.registry.get(ref.cls);
    const count = spec?.partitionCount ?? 0;
    if (spec !== undefined && ref.partition < count && spec.shardType === "raft") {
      if (options.opening?.(ref.cls, ref.partition) === true) {
        throw new DataPlaneError(
          "unavailable",
          `partition ${ref.partition} of ${ref.cls} is still opening on this node; retry`,
        );
      }
      const replicas = replicasOf(spec, ref.partition);
      throw new DataPlaneError(
        "not_leader",
        `partition ${ref.partition} of ${ref.cls} is replicated on nodes ${replicas.join(", ")}, not on this node`,
        replicas[0] === undefined
          ? {}
          : { leaderHint: options.addressOf?.(replicas[0]) ?? String(replicas[0]) },
      );
    }
    throw new DataPlaneError(
      "not_found",
      `collection ${JSON.stringify(ref.cls)} has no partition ${ref.partition} (partitions 0..${count - 1})`,
    );
  };

  /**
   * Applies one operation to the object's shard — its entry store, or through its Raft
   * group — and counts its entry writes (events leave from the shard, in commit order).
   */
  const mutate = async (
    ref: ObjectRef,
    op: OpBody,
    call?: DataPlaneCall,
  ): Promise<MutationResult> => {
    const creates = op.kind !== "delete_object" && op.kind !== "delete_entry";
    if (
      ref.id.kind === "string" &&
      options.stringIdWrites === false &&
      !isCanonicalU64(ref.id.id)
    ) {
      throw new DataPlaneError(
        "failed_precondition",
        "writes to string object ids are off on this node (ODGM_STRING_ID_WRITES=false); reads of them are on",
      );
    }
    const numericPolicy =
      ref.id.kind === "numeric" && creates ? options.numericIdCreates : undefined;
    if (numericPolicy === "refuse" && !(await read(ref, call, (s) => objectExists(s, ref.id.id)))) {
      metrics.numericIdCreates.inc({ collection: ref.cls, outcome: "refused" });
      throw new DataPlaneError(
        "failed_precondition",
        `creating objects by numeric object_id is off on this node (ODGM_NUMERIC_ID_CREATES=refuse): use object_id_str; existing numeric objects stay readable and writable`,
      );
    }
    const shard = shardOf(ref);
    const full = { ...op, objectId: ref.id.id, timestampMs: Date.now() } as StoreOp;
    let result: MutationResult;
    try {
      result =
        shard.replica === undefined
          ? await shard.store.apply(full)
          : await shard.replica.mutate(full);
    } catch (err) {
      if (isStoreError(err, "write_failed")) options.onWriteFailed?.(err);
      throw toPlaneError(err);
    }
    let writes = 0;
    let deletes = 0;
    let stringWrites = 0;
    for (const c of result.changed) {
      if (c.action === "delete") deletes++;
      else {
        writes++;
        if (!c.numeric) stringWrites++;
      }
    }
    if (writes > 0) metrics.entryWrites.inc({ collection: ref.cls }, writes);
    if (stringWrites > 0) metrics.entriesStringSet.inc({ collection: ref.cls }, stringWrites);
    if (ref.id.kind === "string" && !result.existedBefore && result.exists) {
      metrics.objectsStringCreated.inc({ collection: ref.cls });
    }
    if (deletes > 0) metrics.entryDeletes.inc({ collection: ref.cls }, deletes);
    if (numericPolicy === "warn" && result.exists && !result.existedBefore) {
      metrics.numericIdCreates.inc({ collection: ref.cls, outcome: "created" });
      call?.warn?.(
        "creating objects by numeric object_id is deprecated on this node (ODGM_NUMERIC_ID_CREATES=warn): use object_id_str",
      );
      options.onNumericCreate?.(ref);
    }
    return result;
  };

  /** Runs a read once the shard's replica is as fresh as the call's consistency asks. */
  const read = async <T>(
    ref: PartitionRef,
    call: DataPlaneCall | undefined,
    run: (shard: Shard) => Promise<T>,
  ): Promise<T> => {
    const shard = shardOf(ref);
    try {
      if (shard.replica !== undefined) {
        return await shard.replica.read(consistencyOf(call), () => run(shard));
      }
      return await run(shard);
    } catch (err) {
      throw toPlaneError(err);
    }
  };

  const toObject = async (shard: Shard, id: string): Promise<StoredObject | undefined> => {
    const obj = await shard.store.getObject(id);
    if (obj === undefined) return undefined;
    const entries: StoredEntry[] = [];
    for (const [k, v] of obj.entries) {
      entries.push({ key: keyOf(String(k), true), value: entryValueOf(v), version: obj.version });
    }
    for (const [k, v] of obj.entriesStr) {
      entries.push({ key: keyOf(k, false), value: entryValueOf(v), version: obj.version });
    }
    return { version: obj.version, entries, event: obj.event };
  };

  /** A live object: metadata not tombstoned, or a legacy blob. */
  const objectExists = async (shard: Shard, id: string): Promise<boolean> => {
    const meta = await shard.store.getMetadata(id);
    if (meta !== undefined) return !meta.deleted;
    return (await shard.store.getObject(id)) !== undefined;
  };

  const entryMap = (entries: readonly EntryWrite[]): Map<string, EntryValue> =>
    new Map(entries.map((e) => [e.key.key, e.value]));

  const eventBytes = (event: ObjectEvent | undefined): { event?: Uint8Array } =>
    event === undefined ? {} : { event: toBinary(ObjectEventSchema, event) };

  const consistencyOf = (call: DataPlaneCall | undefined): ReadConsistency => {
    const asked = call?.headers.get(READ_CONSISTENCY_HEADER)?.trim().toLowerCase();
    if (asked === undefined || asked === "") return options.readConsistency ?? "linearizable";
    if (asked === "linearizable" || asked === "lease" || asked === "follower") return asked;
    throw new DataPlaneError(
      "invalid_argument",
      `${READ_CONSISTENCY_HEADER} must be linearizable, lease or follower, got ${JSON.stringify(asked)}`,
    );
  };

  const invoke = async (
    ref: PartitionRef,
    fn: string,
    call: DataPlaneCall,
    send: (url: string, timeoutMs: number) => Promise<InvocationResult>,
  ): Promise<InvocationResult> => {
    shardOf(ref);
    const collection = options.registry.get(ref.cls);
    const route = collection?.invocations?.fnRoutes[fn];
    if (route === undefined || collection?.invocations?.disabledFn.includes(fn)) {
      throw new DataPlaneError(
        "not_found",
        `function ${JSON.stringify(fn)} has no route in collection ${JSON.stringify(ref.cls)}`,
      );
    }
    try {
      return await send(route.url, options.invokeTimeoutMs);
    } catch (err) {
      if (isDataPlaneError(err)) throw err;
      if (call.signal.aborted) throw err;
      if (err instanceof ConnectError && err.code === Code.DeadlineExceeded) {
        // The function did not answer within ODGM_INVOKE_TIMEOUT_MS.
        throw new ConnectError(
          `function ${fn} at ${route.url} did not answer within ${options.invokeTimeoutMs} ms`,
          Code.DeadlineExceeded,
          undefined,
          undefined,
          err,
        );
      }
      const reason = err instanceof ConnectError ? err.rawMessage : String(err);
      throw new DataPlaneError("unavailable", `function ${fn} at ${route.url} failed: ${reason}`, {
        cause: err,
      });
    }
  };

  return {
    capabilities: () => ({
      // Every object is stored per entry (dual-write adds the blob beside them).
      granularEntryStorage: true,
      eventPipelineV2: options.eventPipeline,
    }),

    getObject: (ref, call) => read(ref, call, (shard) => toObject(shard, ref.id.id)),

    async deleteObject(ref, call) {
      await mutate(ref, { kind: "delete_object" }, call);
    },

    async setObject(ref, write, call) {
      await mutate(
        ref,
        { kind: "set_object", entries: entryMap(write.entries), ...eventBytes(write.event) },
        call,
      );
    },

    async mergeObject(ref, write, call) {
      await mutate(
        ref,
        { kind: "merge_object", entries: entryMap(write.entries), ...eventBytes(write.event) },
        call,
      );
      const merged = await read(ref, call, (shard) => toObject(shard, ref.id.id));
      if (merged === undefined)
        throw new DataPlaneError("not_found", "object vanished after merge");
      return merged;
    },

    async getEntry(ref, key, call): Promise<EntryRead> {
      const started = performance.now();
      const got = await read(ref, call, (shard) => shard.store.getEntry(ref.id.id, key.key));
      metrics.entryReads.inc({ collection: ref.cls });
      metrics.entryGetLatencyMs.observe({ collection: ref.cls }, performance.now() - started);
      return {
        objectVersion: got.objectVersion,
        entry: got.entry === undefined ? undefined : storedEntry(got.entry),
      };
    },

    async setEntry(ref, entry, call) {
      await mutate(ref, { kind: "set_entry", key: entry.key.key, value: entry.value }, call);
    },

    async deleteEntry(ref, key, call) {
      await mutate(ref, { kind: "delete_entry", key: key.key }, call);
    },

    async batchEntries(ref, batch, call) {
      metrics.batchSetSize.observe({ collection: ref.cls }, batch.set.length + batch.delete.length);
      await mutate(
        ref,
        {
          kind: "batch",
          sets: entryMap(batch.set),
          deletes: batch.delete.map((k) => k.key),
          ...(batch.expectedVersion === undefined
            ? {}
            : { expectedVersion: batch.expectedVersion }),
        },
        call,
      );
    },

    async *listEntries(ref, query, call): AsyncIterable<ListedEntry> {
      const page = await read(ref, call, (shard) =>
        shard.store.listEntries(ref.id.id, {
          limit: query.limit,
          ...(query.keyPrefix === undefined ? {} : { prefix: query.keyPrefix }),
          ...(query.cursor === undefined ? {} : { cursor: query.cursor }),
        }),
      );
      metrics.entryReads.inc({ collection: ref.cls }, page.entries.length);
      for (let i = 0; i < page.entries.length; i++) {
        const item = storedEntry(page.entries[i] as StoreEntry);
        yield i === page.entries.length - 1 && page.nextCursor !== undefined
          ? { ...item, nextCursor: page.nextCursor }
          : item;
      }
    },

    async *listObjects(partition, query, call): AsyncIterable<ListedObject> {
      const page = await read(partition, call, (shard) =>
        shard.store.listObjects({
          limit: query.limit,
          numericIdsOnly: options.stringIdsWriteOnly,
          ...(query.idPrefix === undefined ? {} : { prefix: query.idPrefix }),
          ...(query.cursor === undefined ? {} : { cursor: query.cursor }),
        }),
      );
      for (let i = 0; i < page.objects.length; i++) {
        const o = page.objects[i];
        if (o === undefined) continue;
        const item: ListedObject = { id: o.id, version: o.version, entryCount: o.entryCount };
        yield i === page.objects.length - 1 && page.nextCursor !== undefined
          ? { ...item, nextCursor: page.nextCursor }
          : item;
      }
    },

    async stats(): Promise<readonly ShardStat[]> {
      return shards.all().map((s) => ({
        collection: s.cls,
        partition: s.partition,
        shardId: s.shardId,
        count: s.store.stats().liveObjects,
      }));
    },

    invokeFn: (inv, call) =>
      invoke(inv, inv.fn, call, async (url, timeoutMs) => {
        const res = await options.functions.get(url).invokeFn(
          create(InvocationRequestSchema, {
            partitionId: inv.partition,
            clsId: inv.cls,
            fnId: inv.fn,
            options: { ...inv.options },
            payload: inv.payload,
          }),
          { signal: call.signal, timeoutMs },
        );
        metrics.invocations.inc({
          kind: "fn",
          status: ResponseStatus[res.status] ?? String(res.status),
        });
        return res;
      }),

    invokeObj: (inv, call) =>
      invoke(inv, inv.fn, call, async (url, timeoutMs) => {
        const numeric = inv.id.kind === "numeric";
        const request = create(ObjectInvocationRequestSchema, {
          partitionId: inv.partition,
          clsId: inv.cls,
          fnId: inv.fn,
          objectId: numeric ? BigInt(inv.id.id) : 0n,
          options: { ...inv.options },
          payload: inv.payload,
          ...(numeric ? {} : { objectIdStr: inv.id.id }),
        });
        let res: InvocationResult;
        try {
          res = await options.functions
            .get(url)
            .invokeObj(request, { signal: call.signal, timeoutMs });
        } catch (err) {
          await fireFunctionTriggers(inv, "error", inv.payload, String(err));
          throw err;
        }
        metrics.invocations.inc({
          kind: "obj",
          status: ResponseStatus[res.status] ?? String(res.status),
        });
        const ok = res.status === ResponseStatus.OKAY;
        await fireFunctionTriggers(
          inv,
          ok ? "complete" : "error",
          ok ? res.payload : inv.payload,
          ok ? undefined : `function returned ${ResponseStatus[res.status] ?? res.status}`,
        );
        return res;
      }),
  };

  /** Fires `func_trigger[fn].on_complete` / `on_error` of the object, if it has any. */
  async function fireFunctionTriggers(
    inv: ObjectRef & { fn: string; options: Readonly<Record<string, string>> },
    outcome: "complete" | "error",
    payload: Uint8Array | undefined,
    error: string | undefined,
  ): Promise<void> {
    const shard = shards.get(inv.cls, inv.partition);
    if (shard?.events === undefined) return;
    const eventConfig = await shard.store.getEventConfig(inv.id.id).catch(() => undefined);
    if (eventConfig?.funcTrigger[inv.fn] === undefined) return;
    shard.events.tryEnqueueFunctionOutcome({
      objectId: inv.id.id,
      clsId: inv.cls,
      partitionId: inv.partition,
      fnId: inv.fn,
      outcome,
      eventConfig,
      ...(payload === undefined ? {} : { payload }),
      ...(error === undefined ? {} : { error }),
      triggerDepth: triggerDepthOf(inv.options),
    });
  }
}

type StoredEntry = ListedEntry;
