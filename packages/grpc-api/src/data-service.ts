import type { MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { type EntryKey, parseCanonicalU64 } from "@oprc/oprc-id";
import type { EntryWrite, ObjectDataPlane, ObjectRef, StoredObject } from "./data-plane.js";
import { DataPlaneError } from "./data-plane-error.js";
import type {
  DataService,
  ObjDataSchema,
  ObjectMetaEnvelopeSchema,
  ValDataSchema,
  ValueEnvelopeSchema,
  ValueResponseSchema,
} from "./gen/oprc-data_pb.js";
import { type GrpcApiOptions, resolveGrpcApiOptions } from "./grpc-api-options.js";
import { createErrorMapper, planeCall } from "./handler-support.js";
import { createRequestResolver } from "./request-resolver.js";

type ObjDataInit = MessageInitShape<typeof ObjDataSchema>;
type ValDataInit = MessageInitShape<typeof ValDataSchema>;

/**
 * Creates the `oprc.DataService` handlers over a {@link ObjectDataPlane}: each RPC resolves
 * and validates its request (ids and keys through `@oprc/oprc-id`, feature flags, limits),
 * calls the plane, and maps failures to gRPC status codes per spec §6.
 *
 * @param plane - the data plane to serve
 * @param options - feature flags, limits and the internal-error log hook
 *
 * @example
 * ```ts
 * import { connectNodeAdapter } from "@connectrpc/connect-node";
 * import { createDataServiceImpl, DataService } from "@oprc/grpc-api";
 *
 * const handler = connectNodeAdapter({
 *   routes: (router) => router.service(DataService, createDataServiceImpl(plane, { stringIds: true })),
 * });
 * ```
 */
export function createDataServiceImpl(
  plane: ObjectDataPlane,
  options: GrpcApiOptions = {},
): ServiceImpl<typeof DataService> {
  const opts = resolveGrpcApiOptions(options);
  const r = createRequestResolver(opts);
  const fail = createErrorMapper(opts);

  const objData = (ref: ObjectRef, obj: StoredObject): ObjDataInit => {
    const entries: Record<number, ValDataInit> = {};
    const entriesStr: Record<string, ValDataInit> = {};
    for (const e of obj.entries) {
      const v: ValDataInit = { data: e.value.data, type: e.value.type };
      if (e.key.kind === "numeric") entries[e.key.numeric] = v;
      else entriesStr[e.key.key] = v;
    }
    const numeric = ref.id.kind === "numeric" ? ref.id.numeric : parseCanonicalU64(ref.id.id);
    const out: ObjDataInit = {
      metadata: {
        clsId: ref.cls,
        partitionId: ref.partition,
        objectId: numeric ?? 0n,
        objectIdStr: ref.id.id,
      },
      entries,
      entriesStr,
    };
    if (obj.event !== undefined) out.event = obj.event;
    return out;
  };

  const notFound = (ref: ObjectRef): DataPlaneError =>
    new DataPlaneError(
      "not_found",
      `object ${JSON.stringify(ref.id.id)} not found in ${ref.cls}/${ref.partition}`,
    );

  const batchKeys = (
    values: Record<string, { data: Uint8Array; type: number }>,
    deleteKeys: readonly string[],
  ): { set: EntryWrite[]; del: EntryKey[] } => {
    const set: EntryWrite[] = [];
    const seen = new Set<string>();
    for (const [k, v] of Object.entries(values)) {
      const key = r.keyString(k);
      if (seen.has(key.key)) {
        throw new DataPlaneError(
          "invalid_argument",
          `entry key ${JSON.stringify(key.key)} is given more than once (after normalization)`,
        );
      }
      seen.add(key.key);
      set.push({ key, value: { data: v.data, type: v.type } });
    }
    const del: EntryKey[] = [];
    const seenDel = new Set<string>();
    for (const k of deleteKeys) {
      const key = r.keyString(k);
      if (seen.has(key.key)) {
        throw new DataPlaneError(
          "invalid_argument",
          `entry key ${JSON.stringify(key.key)} is both set and deleted`,
        );
      }
      if (seenDel.has(key.key)) continue;
      seenDel.add(key.key);
      del.push(key);
    }
    return { set, del };
  };

  const cursorOf = (c: Uint8Array | undefined): Uint8Array | undefined =>
    c !== undefined && c.length > 0 ? c : undefined;

  return {
    async get(req, ctx) {
      try {
        const ref = r.object(req.clsId, req.partitionId, req.objectId, req.objectIdStr);
        const obj = await plane.getObject(ref, planeCall(ctx));
        if (obj === undefined) throw notFound(ref);
        return { obj: objData(ref, obj) };
      } catch (err) {
        throw fail(err, ctx);
      }
    },

    async delete(req, ctx) {
      try {
        const ref = r.object(req.clsId, req.partitionId, req.objectId, req.objectIdStr);
        await plane.deleteObject(ref, planeCall(ctx));
        return {};
      } catch (err) {
        throw fail(err, ctx);
      }
    },

    async set(req, ctx) {
      try {
        const ref = r.object(req.clsId, req.partitionId, req.objectId, req.objectIdStr);
        if (req.object === undefined) {
          throw new DataPlaneError("invalid_argument", "object is required");
        }
        const entries = r.entries(req.object);
        await plane.setObject(ref, { entries, event: req.object.event }, planeCall(ctx));
        return {};
      } catch (err) {
        throw fail(err, ctx);
      }
    },

    async merge(req, ctx) {
      try {
        const ref = r.object(req.clsId, req.partitionId, req.objectId, req.objectIdStr);
        if (req.object === undefined) {
          throw new DataPlaneError("invalid_argument", "object is required");
        }
        const entries = r.entries(req.object);
        const merged = await plane.mergeObject(
          ref,
          { entries, event: req.object.event },
          planeCall(ctx),
        );
        return { obj: objData(ref, merged) };
      } catch (err) {
        throw fail(err, ctx);
      }
    },

    async getValue(req, ctx) {
      try {
        const ref = r.object(req.clsId, req.partitionId, req.objectId, req.objectIdStr);
        const key = r.key(req.key, req.keyStr);
        const read = await plane.getEntry(ref, key, planeCall(ctx));
        const out: MessageInitShape<typeof ValueResponseSchema> = {
          key: key.key,
        };
        if (read.objectVersion !== undefined) out.objectVersion = read.objectVersion;
        if (read.entry !== undefined) {
          out.value = { data: read.entry.value.data, type: read.entry.value.type };
        }
        return out;
      } catch (err) {
        throw fail(err, ctx);
      }
    },

    async setValue(req, ctx) {
      try {
        const ref = r.object(req.clsId, req.partitionId, req.objectId, req.objectIdStr);
        const key = r.key(req.key, req.keyStr);
        if (req.value === undefined) {
          throw new DataPlaneError("invalid_argument", "value is required");
        }
        await plane.setEntry(
          ref,
          { key, value: { data: req.value.data, type: req.value.type } },
          planeCall(ctx),
        );
        return {};
      } catch (err) {
        throw fail(err, ctx);
      }
    },

    async deleteValue(req, ctx) {
      try {
        const ref = r.object(req.clsId, req.partitionId, req.objectId, req.objectIdStr);
        const key = r.key(req.key, req.keyStr);
        await plane.deleteEntry(ref, key, planeCall(ctx));
        return {};
      } catch (err) {
        throw fail(err, ctx);
      }
    },

    async batchSetValues(req, ctx) {
      try {
        const ref = r.object(req.clsId, req.partitionId, req.objectId, req.objectIdStr);
        const { set, del } = batchKeys(req.values, req.deleteKeys);
        await plane.batchEntries(
          ref,
          { set, delete: del, expectedVersion: req.expectedObjectVersion },
          planeCall(ctx),
        );
        return {};
      } catch (err) {
        throw fail(err, ctx);
      }
    },

    async *listValues(req, ctx: HandlerContext) {
      try {
        const ref = r.object(req.clsId, req.partitionId, req.objectId, req.objectIdStr);
        const limit = r.limit(req.limit);
        const query = {
          keyPrefix: r.keyPrefix(req.keyPrefix),
          limit,
          cursor: cursorOf(req.cursor),
        };
        let n = 0;
        for await (const e of plane.listEntries(ref, query, planeCall(ctx))) {
          const env: MessageInitShape<typeof ValueEnvelopeSchema> = {
            key: e.key.key,
            value: { data: e.value.data, type: e.value.type },
            version: e.version,
          };
          if (e.nextCursor !== undefined) env.nextCursor = e.nextCursor;
          yield env;
          if (++n >= limit) break;
        }
      } catch (err) {
        throw fail(err, ctx);
      }
    },

    async *listObjects(req, ctx: HandlerContext) {
      try {
        const p = r.partition(req.clsId, req.partitionId);
        const limit = r.limit(req.limit);
        const query = {
          idPrefix: r.idPrefix(req.objectIdPrefix),
          limit,
          cursor: cursorOf(req.cursor),
        };
        let n = 0;
        for await (const o of plane.listObjects(p, query, planeCall(ctx))) {
          const env: MessageInitShape<typeof ObjectMetaEnvelopeSchema> = {
            objectId: o.id,
            version: o.version,
            entryCount: o.entryCount,
          };
          if (o.nextCursor !== undefined) env.nextCursor = o.nextCursor;
          yield env;
          if (++n >= limit) break;
        }
      } catch (err) {
        throw fail(err, ctx);
      }
    },

    async stats(_req, ctx) {
      try {
        const shards = await plane.stats(planeCall(ctx));
        return {
          shards: shards.map((s) => ({
            collection: s.collection,
            partitionId: s.partition,
            shardId: s.shardId,
            count: s.count,
          })),
        };
      } catch (err) {
        throw fail(err, ctx);
      }
    },

    async capabilities(_req, ctx) {
      try {
        const caps = await plane.capabilities();
        return {
          stringIds: opts.stringIds,
          stringEntryKeys: opts.stringKeys,
          granularEntryStorage: caps.granularEntryStorage,
          eventPipelineV2: caps.eventPipelineV2,
        };
      } catch (err) {
        throw fail(err, ctx);
      }
    },
  };
}
