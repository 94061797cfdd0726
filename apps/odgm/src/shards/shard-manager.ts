import {
  createEntryStore,
  type EntryStore,
  type KvEngine,
  type MutationResult,
  type StoreOp,
} from "@oprc/entry-store";
import {
  createEventDispatcher,
  type DurableDelivery,
  type EventDispatcher,
  type EventMetricsHooks,
  type EventV2Config,
  mutationContextFromResult,
  type RetryPolicy,
  type ShutdownReport,
  startDurableDelivery,
  type TriggerSink,
} from "@oprc/event-v2";
import type { CreateCollectionRequest } from "@oprc/grpc-api";
import { hashId } from "@oprc/oprc-id";
import type { Logger } from "pino";
import type { ReadConsistency } from "../config.js";
import type { OdgmMetrics } from "../observability/metrics.js";

/** How a raft shard's mutations and reads go through its Raft group. */
export interface ShardReplica {
  /** True while this node leads the shard's group (events leave from the leader only). */
  readonly isLeader: boolean;
  /** Proposes `op` (through the leader) and resolves once applied here or on the leader. */
  mutate(op: StoreOp): Promise<MutationResult>;
  /**
   * Runs `run` (a read of the shard) once a read here is as fresh as `consistency` asks,
   * and never while a snapshot is being written into the shard.
   */
  read<T>(consistency: ReadConsistency, run: () => Promise<T>): Promise<T>;
}

/** Hosts the Raft groups of raft-collection partitions (the cluster node). */
export interface ShardReplication {
  /** Whether this node hosts a replica of the partition. */
  hosts(spec: CreateCollectionRequest, partition: number): Promise<boolean>;
  /** Starts replicating `store` as the partition's replica. */
  replicate(
    spec: CreateCollectionRequest,
    partition: number,
    store: EntryStore,
  ): Promise<ShardReplica>;
}

/** One collection partition served by this node: `basic` (one replica) or a raft replica. */
export interface Shard {
  readonly cls: string;
  readonly partition: number;
  /** `basic`, or `raft` with `replica` set. */
  readonly kind: "basic" | "raft";
  /** The shard's Raft replica (raft shards only). */
  readonly replica: ShardReplica | undefined;
  /** Stable id: the assignment's shard id when given, else derived from `<cls>/<partition>`. */
  readonly shardId: bigint;
  readonly store: EntryStore;
  /**
   * The shard's event dispatcher; `undefined` when `ODGM_EVENT_PIPELINE_V2=false`. Every
   * durable mutation that changed entries is enqueued here in commit order.
   */
  readonly events: EventDispatcher | undefined;
  /**
   * At-least-once delivery of the shard's data triggers from its change log
   * (`ODGM_TRIGGER_DELIVERY=at-least-once`, basic shards); `undefined` otherwise.
   */
  readonly delivery: DurableDelivery | undefined;
}

/** Options of {@link createShardManager}. */
export interface ShardManagerOptions {
  readonly engine: KvEngine;
  readonly sync: boolean;
  /** Dual-write numeric-id objects as legacy blobs too (`ODGM_ENABLE_GRANULAR_STORAGE=false`). */
  readonly dualWrite: boolean;
  /** Read legacy blobs (`ODGM_BLOB_FALLBACK`). */
  readonly legacyFallback: boolean;
  readonly prefetchLimit: number;
  readonly maxGetEntries: number;
  readonly maxKeyLength: number;
  readonly events: EventV2Config;
  readonly sink: TriggerSink;
  readonly metrics: OdgmMetrics;
  /** Told when a durable mutation's event could not be built or enqueued. Default: ignored. */
  readonly onEventError?: (err: unknown) => void;
  /** Hosts raft shards; without it raft collections have no local shards. */
  readonly replication?: ShardReplication;
  /** Keep a durable change log per shard (`ODGM_CHANGEFEED`); `values` records new values. */
  readonly changeLog?: { readonly values: boolean };
  /**
   * Deliver the data triggers of basic shards at least once from the change log (needs
   * `changeLog`); raft shards keep at-most-once firing from their leader.
   */
  readonly atLeastOnce?: { readonly retry: RetryPolicy; readonly logger: Logger };
}

/** The shards of every collection this node serves. */
export interface ShardManager {
  /** The shard of `(cls, partition)`, or `undefined` when this node holds no replica of it. */
  get(cls: string, partition: number): Shard | undefined;
  /** Whether the node serves collection `cls`. */
  hasCollection(cls: string): boolean;
  /** Every shard, in the order they opened (a raft collection's by partition). */
  all(): readonly Shard[];
  /** Opens the shards of a collection this node holds and has not opened yet (idempotent). */
  addCollection(spec: CreateCollectionRequest): Promise<void>;
  /**
   * Removes the shard of `(cls, partition)` (a raft replica this node was removed from): its
   * event queues are closed, its records deleted, its store closed and forgotten. A later
   * {@link ShardManager.addCollection} opens it again, empty.
   */
  removeShard(cls: string, partition: number): Promise<void>;
  /** Drains (or, once `signal` aborts, discards) event queues and closes the stores. */
  close(signal?: AbortSignal): Promise<ShutdownReport[]>;
}

/** Basic partitions opened at once when a collection is added. */
const OPEN_CONCURRENCY = 32;

/** A trigger target as metrics label it: `<collection>/<function>`. */
function targetOf(t: { readonly clsId: string; readonly fnId: string }): string {
  return `${t.clsId}/${t.fnId}`;
}

/** Opens and tracks one entry store and one event dispatcher per shard. */
export function createShardManager(options: ShardManagerOptions): ShardManager {
  /**
   * Hands a durable mutation to the event pipeline. The write is durable already: a
   * failure to build or enqueue its event is reported, never the caller's.
   */
  const emit = (
    events: EventDispatcher,
    clsId: string,
    partitionId: number,
    objectId: string,
    result: MutationResult,
  ): void => {
    if (result.changed.length === 0 || result.versionAfter <= result.versionBefore) return;
    try {
      const ctx = mutationContextFromResult(result, {
        objectId,
        clsId,
        partitionId,
        eventConfig: result.eventConfig,
      });
      if (ctx !== undefined) events.tryEnqueue(ctx);
    } catch (err) {
      options.onEventError?.(err);
    }
  };
  /** At-least-once delivery of a basic shard; `hooks` are the shard's trigger metrics. */
  const startAtLeastOnce = (
    source: NonNullable<EntryStore["changes"]>,
    cls: string,
    partition: number,
    hooks: EventMetricsHooks,
  ): Promise<DurableDelivery> => {
    const { retry, logger } = options.atLeastOnce as NonNullable<
      ShardManagerOptions["atLeastOnce"]
    >;
    const at = { collection: cls, partition };
    return startDurableDelivery({
      source,
      sink: options.sink,
      clsId: cls,
      partitionId: partition,
      config: options.events,
      retry,
      hooks: {
        // The shard's trigger metrics (started, settled, dispatched, depth), as for firing.
        ...hooks,
        onTriggerRetry: (inv) => metrics.triggerRetries.inc({ target: targetOf(inv.request) }),
        onTriggerDeadLetter: (inv, revision, err) => {
          metrics.triggerFailures.inc({ collection: cls });
          metrics.triggerDeadLetters.inc({ target: targetOf(inv.request) });
          logger.warn(
            { ...at, target: targetOf(inv.request), revision: String(revision), err },
            "trigger delivery gave up after its last attempt (dead-lettered)",
          );
        },
        onRecordsMissing: (from, to) =>
          logger.warn(
            { ...at, from: String(from), to: String(to) },
            "change-log records were compacted before their triggers were delivered",
          ),
      },
      onError: (err) =>
        logger.warn({ ...at, err }, "at-least-once trigger delivery: retrying after an error"),
    });
  };
  const collections = new Map<string, (Shard | undefined)[]>();
  const order: Shard[] = [];
  const { metrics } = options;
  /** One opening at a time per collection: a raft replica may be adopted while the metadata group opens the same collection. */
  const opening = new Map<string, Promise<unknown>>();
  const serialized = (name: string, fn: () => Promise<void>): Promise<void> => {
    const next = (opening.get(name) ?? Promise.resolve()).then(fn);
    opening.set(
      name,
      next.catch(() => undefined),
    );
    return next;
  };
  return {
    get: (cls, partition) => collections.get(cls)?.[partition],
    hasCollection: (cls) => collections.has(cls),
    all: () => order,
    addCollection: (spec) =>
      serialized(spec.name, async () => {
        const raft = spec.shardType === "raft";
        let list = collections.get(spec.name);
        if (list === undefined) {
          list = [];
          collections.set(spec.name, list);
        }
        // Idempotent: opens only the partitions not open yet (a raft replica added later).
        const todo: number[] = [];
        for (let partition = 0; partition < spec.partitionCount; partition++) {
          if (list[partition] === undefined) todo.push(partition);
        }
        const open = async (partition: number): Promise<Shard | undefined> => {
          if (raft && !(await options.replication?.hosts(spec, partition))) return undefined;
          const name = `${spec.name}/${partition}`;
          const assigned = spec.shardAssignments[partition]?.shardIds[0];
          const shardId = assigned ?? hashId(name);
          const cls = spec.name;
          const hooks: EventMetricsHooks = {
            onEmitted: (action, count) =>
              metrics.eventsEmitted.inc({ collection: cls, action }, count),
            onTruncated: () => metrics.eventTruncatedBatches.inc({ collection: cls }),
            onQueueDrop: () => metrics.eventQueueDrops.inc({ collection: cls }),
            onTriggerDispatched: (inv) =>
              metrics.triggersFired.inc({ collection: cls, kind: inv.kind }),
            onTriggerFailure: () => metrics.triggerFailures.inc({ collection: cls }),
            onTriggerStarted: (inv) =>
              metrics.triggerInflight.inc({ target: targetOf(inv.request) }),
            onTriggerSettled: (inv, outcome) => {
              const target = targetOf(inv.request);
              metrics.triggerInflight.dec({ target });
              metrics.triggerDeliveries.inc({ target, outcome });
            },
            onTriggerDropped: (match) =>
              metrics.triggerDeliveries.inc({
                target: targetOf(match.target),
                outcome: "dropped",
              }),
            onDepthExceeded: () => metrics.triggerDepthExceeded.inc({ collection: cls }),
          };
          const atLeastOnce = options.atLeastOnce !== undefined && !raft;
          const events = options.events.pipelineEnabled
            ? createEventDispatcher({
                ...options.events,
                sink: options.sink,
                dataTriggers: !atLeastOnce,
                hooks,
              })
            : undefined;
          let replica: ShardReplica | undefined;
          const store = await createEntryStore({
            engine: options.engine,
            shard: name,
            sync: options.sync,
            dualWrite: options.dualWrite,
            legacyFallback: options.legacyFallback,
            prefetchLimit: options.prefetchLimit,
            maxGetEntries: options.maxGetEntries,
            maxKeyLength: options.maxKeyLength,
            onBlobFallbackRead: () => metrics.blobFallbackReads.inc({ collection: cls }),
            ...(options.changeLog === undefined
              ? {}
              : {
                  changeLog: {
                    ...options.changeLog,
                    triggers: atLeastOnce,
                    triggerFanoutCap: options.events.maxBatchTriggerFanout,
                  },
                }),
            // Events leave in commit order, so an object's events follow its versions; on a
            // raft shard every replica applies, and only the leader's events leave.
            ...(events === undefined
              ? {}
              : {
                  onApplied: (id: string, result: MutationResult) => {
                    if (replica === undefined ? !raft : replica.isLeader)
                      emit(events, cls, partition, id, result);
                  },
                }),
          });
          if (raft)
            replica = await (options.replication as ShardReplication).replicate(
              spec,
              partition,
              store,
            );
          const delivery =
            atLeastOnce && events !== undefined && store.changes !== undefined
              ? await startAtLeastOnce(store.changes, cls, partition, hooks)
              : undefined;
          const shard: Shard = {
            cls,
            partition,
            kind: raft ? "raft" : "basic",
            replica,
            shardId,
            store,
            events,
            delivery,
          };
          return shard;
        };
        // Opening a store is a few reads on RocksDB's thread pool: basic partitions open
        // OPEN_CONCURRENCY at a time (4,095 one after the other took 10 s); Raft groups
        // open one at a time. Each partition is served as soon as it is open, not once
        // the whole collection is (at a node's restart, 1,024 raft partitions take seconds).
        // Whatever opened is registered (and closed on shutdown) even when another
        // partition failed.
        let failure: { err: unknown } | undefined;
        let next = 0;
        const worker = async (): Promise<void> => {
          while (next < todo.length && failure === undefined) {
            const partition = todo[next++] as number;
            try {
              const shard = await open(partition);
              list[partition] = shard;
              if (shard !== undefined) order.push(shard);
            } catch (err) {
              failure ??= { err };
            }
          }
        };
        const width = raft ? 1 : Math.min(OPEN_CONCURRENCY, todo.length);
        await Promise.all(Array.from({ length: width }, worker));
        if (failure !== undefined) throw failure.err;
      }),
    removeShard: (cls, partition) =>
      serialized(cls, async () => {
        const list = collections.get(cls);
        const shard = list?.[partition];
        if (list === undefined || shard === undefined) return;
        list[partition] = undefined;
        order.splice(order.indexOf(shard), 1);
        await shard.delivery?.close();
        await shard.events?.close({});
        // Every record of the shard (objects, event configuration, counters, change log) in
        // windows of about 1 MiB, and an applied index of 0.
        await shard.store.importState(new Uint8Array(0), { appliedIndex: 0, sync: true });
        await shard.store.close();
      }),
    async close(signal) {
      const reports: ShutdownReport[] = [];
      // Deliveries still running stop here and are repeated after a restart.
      for (const shard of order) await shard.delivery?.close();
      for (const shard of order) {
        if (shard.events !== undefined) {
          reports.push(await shard.events.close(signal === undefined ? {} : { signal }));
        }
      }
      for (const shard of order) await shard.store.close();
      return reports;
    },
  };
}
