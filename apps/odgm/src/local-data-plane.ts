import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  isStoreError,
  type MutationResult,
  type StoredEntry as StoreEntry,
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
  ObjectInvocationRequestSchema,
  type ObjectRef,
  type PartitionRef,
  ResponseStatus,
  type ShardStat,
  type StoredObject,
  type ValData,
  ValDataSchema,
} from "@oprc/grpc-api";
import type { EntryKey } from "@oprc/oprc-id";
import type { CollectionRegistry } from "./collections/collection-registry.js";
import type { FunctionClientPool } from "./invoke/function-client-pool.js";
import type { OdgmMetrics } from "./observability/metrics.js";
import type { Shard, ShardManager } from "./shards/shard-manager.js";

/** Options of {@link createLocalDataPlane}. */
export interface LocalDataPlaneOptions {
  readonly shards: ShardManager;
  readonly registry: CollectionRegistry;
  readonly functions: FunctionClientPool;
  readonly metrics: OdgmMetrics;
  /** Storage is granular (`ODGM_ENABLE_GRANULAR_STORAGE`). */
  readonly granular: boolean;
  /** The Events V2 pipeline runs (`ODGM_EVENT_PIPELINE_V2`). */
  readonly eventPipeline: boolean;
  /** Hide string-id objects from listings (`ODGM_STRING_IDS_WRITE_ONLY`). */
  readonly stringIdsWriteOnly: boolean;
  /** Bound on one function invocation (`ODGM_INVOKE_TIMEOUT_MS`). */
  readonly invokeTimeoutMs: number;
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
    default:
      return err;
  }
}

const keyOf = (key: string, numeric: boolean): EntryKey =>
  numeric ? { kind: "numeric", key, numeric: Number(key) } : { kind: "string", key };

const entryValueOf = (v: ValData): EntryValue => ({ data: v.data, type: v.type });
const valData = (v: EntryValue): ValData => create(ValDataSchema, { data: v.data, type: v.type });

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
    if (!shards.hasCollection(ref.cls)) {
      throw new DataPlaneError("not_found", `collection ${JSON.stringify(ref.cls)} does not exist`);
    }
    const count = options.registry.get(ref.cls)?.partitionCount ?? 0;
    throw new DataPlaneError(
      "not_found",
      `collection ${JSON.stringify(ref.cls)} has no partition ${ref.partition} (partitions 0..${count - 1})`,
    );
  };

  /** Runs a mutation and counts its entry writes (events leave from the shard, in commit order). */
  const mutate = async (
    ref: ObjectRef,
    run: (shard: Shard) => Promise<MutationResult>,
  ): Promise<MutationResult> => {
    const shard = shardOf(ref);
    let result: MutationResult;
    try {
      result = await run(shard);
    } catch (err) {
      throw toPlaneError(err);
    }
    let writes = 0;
    let deletes = 0;
    for (const c of result.changed) {
      if (c.action === "delete") deletes++;
      else writes++;
    }
    if (writes > 0) metrics.entryWrites.inc({ collection: ref.cls }, writes);
    if (deletes > 0) metrics.entryDeletes.inc({ collection: ref.cls }, deletes);
    return result;
  };

  const read = async <T>(ref: PartitionRef, run: (shard: Shard) => Promise<T>): Promise<T> => {
    const shard = shardOf(ref);
    try {
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

  const entryMap = (entries: readonly EntryWrite[]): Map<string, ValData> =>
    new Map(entries.map((e) => [e.key.key, valData(e.value)]));

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
      granularEntryStorage: options.granular,
      eventPipelineV2: options.eventPipeline,
    }),

    getObject: (ref) => read(ref, (shard) => toObject(shard, ref.id.id)),

    async deleteObject(ref) {
      await mutate(ref, (shard) => shard.store.deleteObject(ref.id.id));
    },

    async setObject(ref, write) {
      await mutate(ref, (shard) =>
        shard.store.setObject(ref.id.id, {
          entries: entryMap(write.entries),
          ...(write.event === undefined ? {} : { event: write.event }),
        }),
      );
    },

    async mergeObject(ref, write) {
      await mutate(ref, (shard) =>
        shard.store.mergeObject(ref.id.id, {
          entries: entryMap(write.entries),
          ...(write.event === undefined ? {} : { event: write.event }),
        }),
      );
      const merged = await read(ref, (shard) => toObject(shard, ref.id.id));
      if (merged === undefined)
        throw new DataPlaneError("not_found", "object vanished after merge");
      return merged;
    },

    async getEntry(ref, key): Promise<EntryRead> {
      const started = performance.now();
      const got = await read(ref, (shard) => shard.store.getEntry(ref.id.id, key.key));
      metrics.entryReads.inc({ collection: ref.cls });
      metrics.entryGetLatencyMs.observe({ collection: ref.cls }, performance.now() - started);
      return {
        objectVersion: got.objectVersion,
        entry: got.entry === undefined ? undefined : storedEntry(got.entry),
      };
    },

    async setEntry(ref, entry) {
      await mutate(ref, (shard) =>
        shard.store.setEntry(ref.id.id, entry.key.key, valData(entry.value)),
      );
    },

    async deleteEntry(ref, key) {
      await mutate(ref, (shard) => shard.store.deleteEntry(ref.id.id, key.key));
    },

    async batchEntries(ref, batch) {
      metrics.batchSetSize.observe({ collection: ref.cls }, batch.set.length + batch.delete.length);
      await mutate(ref, (shard) =>
        shard.store.batch(
          ref.id.id,
          { set: entryMap(batch.set), delete: batch.delete.map((k) => k.key) },
          batch.expectedVersion === undefined ? {} : { expectedVersion: batch.expectedVersion },
        ),
      );
    },

    async *listEntries(ref, query): AsyncIterable<ListedEntry> {
      const page = await read(ref, (shard) =>
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

    async *listObjects(partition, query): AsyncIterable<ListedObject> {
      const page = await read(partition, (shard) =>
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
