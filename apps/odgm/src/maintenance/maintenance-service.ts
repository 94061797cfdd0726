import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { ConvertResult } from "@oprc/entry-store";
import {
  ConvertLegacyObjectsResponseSchema,
  LegacyObjectPageSchema,
  type MaintenanceService,
  type ObjData,
} from "@oprc/grpc-api";
import type { OdgmMetrics } from "../observability/metrics.js";
import type { Shard, ShardManager, ShardReplica } from "../shards/shard-manager.js";

/** Largest number of ids one ConvertLegacyObjects call may list. */
const MAX_CONVERT_BATCH = 10_000;

/**
 * `oprc.MaintenanceService`: lists and converts a shard's legacy blobs through the
 * node's own entry store, so conversions take the same per-object locks as client
 * writes and a concurrent write is never overwritten by stale blob content.
 */
export function createMaintenanceService(
  shards: ShardManager,
  metrics: OdgmMetrics,
): ServiceImpl<typeof MaintenanceService> {
  const shardOf = (cls: string, partition: number): Shard => {
    const shard = shards.get(cls, partition);
    if (shard === undefined) {
      throw new ConnectError(`no shard ${cls}/${partition} on this node`, Code.NotFound);
    }
    return shard;
  };
  return {
    async *listLegacyObjects(req) {
      const shard = shardOf(req.clsId, req.partitionId);
      const pageSize = req.pageSize === 0 ? 1000 : Math.min(req.pageSize, 100_000);
      let page: bigint[] = [];
      let sent = 0n;
      const options = req.afterObjectId === undefined ? {} : { after: req.afterObjectId };
      for await (const id of shard.store.legacyBlobIds({ ...options, batchSize: pageSize })) {
        if (req.limit !== 0n && sent >= req.limit) break;
        page.push(id);
        sent++;
        if (page.length >= pageSize) {
          yield create(LegacyObjectPageSchema, { objectIds: page });
          page = [];
        }
      }
      if (page.length > 0) yield create(LegacyObjectPageSchema, { objectIds: page });
    },
    async convertLegacyObjects(req) {
      if (req.objectIds.length > MAX_CONVERT_BATCH) {
        throw new ConnectError(
          `at most ${MAX_CONVERT_BATCH} object ids per call, got ${req.objectIds.length}`,
          Code.InvalidArgument,
        );
      }
      const shard = shardOf(req.clsId, req.partitionId);
      let converted = 0n;
      let skipped = 0n;
      let entries = 0n;
      let removed = 0;
      for (const id of req.objectIds) {
        const result =
          shard.replica === undefined
            ? await shard.store.convertLegacyObject(id)
            : await convertReplicated(shard, shard.replica, id);
        if (result.blobRemoved) removed++;
        if (result.converted) {
          converted++;
          entries += BigInt(result.entries);
        } else {
          skipped++;
        }
      }
      if (converted > 0n)
        metrics.objectsConverted.inc({ collection: req.clsId }, Number(converted));
      // Pending counts blobs: a stale blob dropped beside metadata is one fewer too.
      if (removed > 0) metrics.objectsPendingConversion.dec({ collection: req.clsId }, removed);
      return create(ConvertLegacyObjectsResponseSchema, { converted, skipped, entries });
    },
  };
}

/** Entries of a legacy blob (a string key spelling a numeric key is the same entry). */
function blobEntryCount(blob: ObjData): number {
  const keys = new Set(Object.keys(blob.entries));
  for (const k of Object.keys(blob.entriesStr)) keys.add(k);
  return keys.size;
}

/**
 * Converts one object of a raft shard through its Raft log, so every replica converts it
 * (a direct write to this replica's store would make the replicas differ). What the
 * conversion will do is read from this replica first, for the counts.
 */
async function convertReplicated(
  shard: Shard,
  replica: ShardReplica,
  id: bigint,
): Promise<ConvertResult> {
  const blob = await shard.store.getLegacyBlob(id);
  if (blob === undefined) return { converted: false, entries: 0, blobRemoved: false };
  const meta = await shard.store.getMetadata(id.toString());
  const result = await replica.mutate({
    kind: "convert_legacy",
    objectId: id.toString(),
    timestampMs: Date.now(),
  });
  const pure = meta === undefined || meta.legacy;
  return {
    converted: pure && result.wrote,
    entries: pure && result.wrote ? blobEntryCount(blob) : 0,
    blobRemoved: result.wrote,
  };
}

/**
 * Counts every shard's legacy blobs, per collection; `undefined` once `signal` aborts.
 */
export async function countLegacyBlobs(
  shards: ShardManager,
  signal?: AbortSignal,
): Promise<Map<string, number> | undefined> {
  const totals = new Map<string, number>();
  for (const shard of [...shards.all()]) {
    let n = totals.get(shard.cls) ?? 0;
    try {
      for await (const _ of shard.store.legacyBlobIds({ batchSize: 1024 })) {
        if (signal?.aborted) return undefined;
        n++;
      }
    } catch (err) {
      if (signal?.aborted) return undefined;
      throw err;
    }
    totals.set(shard.cls, n);
  }
  return totals;
}

/**
 * Counts every shard's legacy blobs into `odgm_objects_pending_conversion_total` (per
 * collection). Stops early, setting nothing, once `signal` aborts (shutdown).
 */
export async function sampleLegacyBlobs(
  shards: ShardManager,
  metrics: OdgmMetrics,
  signal?: AbortSignal,
): Promise<void> {
  const totals = await countLegacyBlobs(shards, signal);
  for (const [collection, n] of totals ?? []) {
    metrics.objectsPendingConversion.set({ collection }, n);
  }
}
