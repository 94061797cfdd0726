// ODGM on Zenoh: one kept-open session to a router's remote-api plugin, declaring on each
// (re)connect the key-space queryable and subscriber, the capabilities queryable and the
// liveliness tokens, and publishing change events while it is up.
import { toBinary } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { Encoding, Locality, type Query, type Sample, type Session } from "@eclipse-zenoh/zenoh-ts";
import type { TriggerInvocation } from "@oprc/event-v2";
import {
  CapabilitiesResponseSchema,
  type DataService,
  InvocationRequestSchema,
  ObjectInvocationRequestSchema,
  type OprcFunction,
} from "@oprc/grpc-api";
import { createTidClock } from "@oprc/oprc-id";
import type { Logger } from "pino";
import type { OdgmMetrics } from "../observability/metrics.js";
import type { Shard } from "../shards/shard-manager.js";
import { createZenohChangePublisher } from "./zenoh-change-publisher.js";
import { createZenohConnection } from "./zenoh-connection.js";
import { createZenohDataHandlers, errorBody, TRIGGER_ATTACHMENT } from "./zenoh-data-handlers.js";
import { encodeKeyChunk, invokeKey, KEY_ROOT, type ObjectAddress } from "./zenoh-keys.js";

/** Options of {@link createZenohService}. */
export interface ZenohServiceOptions {
  /** `ODGM_ZENOH_ENDPOINT`. */
  readonly endpoint: string;
  /** `ODGM_ZENOH_RETRY_MS`. */
  readonly retryMs: number;
  readonly nodeId: number;
  readonly data: Client<typeof DataService>;
  readonly functions: Client<typeof OprcFunction>;
  /** The node's shards, now (new collections appear over time). */
  readonly shards: () => readonly Shard[];
  /** See `ZenohDataHandlersOptions.appliesSample`. */
  readonly appliesSample?: (partition: { cls: string; partition: number }) => boolean;
  readonly metrics: OdgmMetrics;
  readonly logger: Logger;
  /** Deadline of one data call, ms. */
  readonly timeoutMs: number;
}

/** The running Zenoh side of a node. */
export interface ZenohService {
  /** Whether the session is open and declared. */
  isUp(): boolean;
  /**
   * Publishes a fired trigger on its target's async invocation key
   * (`…/invokes/<fn>/async/<id>`, a new TID as id), for functions hosted on Zenoh.
   * Resolves false while Zenoh is down.
   */
  publishTrigger(invocation: TriggerInvocation): Promise<boolean>;
  close(): Promise<void>;
}

/** Liveliness token of a node. */
export const nodeToken = (nodeId: number): string => `odgm/nodes/${nodeId}`;
/** Liveliness token of one shard replica on a node. */
export const shardToken = (cls: string, partition: number, nodeId: number): string =>
  `${KEY_ROOT}/${encodeKeyChunk(cls)}/${partition}/shards/${nodeId}`;
/** The capabilities queryable of a node. */
export const capabilitiesKey = (nodeId: number): string => `odgm/nodes/${nodeId}/capabilities`;

/** Starts the Zenoh side of a node; never throws for a router that is down. */
export function createZenohService(o: ZenohServiceOptions): ZenohService {
  const log = o.logger.child({ component: "zenoh" });
  const handlers = createZenohDataHandlers({
    data: o.data,
    functions: o.functions,
    metrics: o.metrics,
    logger: log,
    timeoutMs: o.timeoutMs,
    ...(o.appliesSample === undefined ? {} : { appliesSample: o.appliesSample }),
  });
  o.metrics.zenohUp.set(0);
  let publisher: ReturnType<typeof createZenohChangePublisher> | undefined;

  const connection = createZenohConnection({
    endpoint: o.endpoint,
    retryMs: o.retryMs,
    logger: log,
    onState: (up) => o.metrics.zenohUp.set(up ? 1 : 0),
    onSession: async (session: Session) => {
      await session.declareQueryable(`${KEY_ROOT}/**`, {
        complete: true,
        handler: (query: Query) => void handlers.onQuery(query),
      });
      await session.declareSubscriber(`${KEY_ROOT}/**`, {
        allowedOrigin: Locality.REMOTE,
        handler: (sample: Sample) => void handlers.onSample(sample),
      });
      await session.declareQueryable(capabilitiesKey(o.nodeId), {
        handler: async (query: Query) => {
          try {
            const auth = query.attachment()?.toString();
            const caps = await o.data.capabilities(
              {},
              auth === undefined || auth === ""
                ? { timeoutMs: o.timeoutMs }
                : { timeoutMs: o.timeoutMs, headers: { authorization: auth } },
            );
            await query.reply(query.keyExpr(), toBinary(CapabilitiesResponseSchema, caps), {
              encoding: Encoding.APPLICATION_PROTOBUF,
            });
          } catch (err) {
            await query
              .replyErr(JSON.stringify(errorBody(err)), { encoding: Encoding.APPLICATION_JSON })
              .catch(() => {});
          } finally {
            await query.finalize().catch(() => {});
          }
        },
      });
      await session.liveliness().declareToken(nodeToken(o.nodeId));
      // Shard tokens: now, and for shards that open later (new collections).
      const tokened = new Set<Shard>();
      let stopped = false;
      const syncShards = async () => {
        for (const shard of o.shards()) {
          publisher?.watch(shard);
          if (tokened.has(shard)) continue;
          tokened.add(shard);
          await session.liveliness().declareToken(shardToken(shard.cls, shard.partition, o.nodeId));
        }
      };
      await syncShards();
      const timer = setInterval(() => {
        if (!stopped) syncShards().catch((err: unknown) => log.debug({ err }, "shard tokens"));
      }, o.retryMs);
      timer.unref();
      o.metrics.zenohSessions.inc();
      // Dropped with the session (the router undeclares everything of a closed connection).
      return () => {
        stopped = true;
        clearInterval(timer);
      };
    },
  });
  publisher = createZenohChangePublisher({
    session: () => connection.session(),
    metrics: o.metrics,
    logger: log,
  });
  for (const shard of o.shards()) publisher.watch(shard);

  const tids = createTidClock();
  return {
    isUp: () => connection.isUp(),
    async publishTrigger(invocation) {
      const session = connection.session();
      if (session === undefined) return false;
      const r = invocation.request;
      let key: string;
      let payload: Uint8Array;
      if (invocation.kind === "object") {
        const req = invocation.request;
        const object: ObjectAddress = {
          cls: req.clsId,
          partition: req.partitionId,
          id:
            req.objectIdStr !== undefined && req.objectIdStr !== ""
              ? { str: req.objectIdStr }
              : { numeric: req.objectId },
        };
        key = invokeKey(r.clsId, r.partitionId, r.fnId, object);
        payload = toBinary(ObjectInvocationRequestSchema, req);
      } else {
        key = invokeKey(r.clsId, r.partitionId, r.fnId);
        payload = toBinary(InvocationRequestSchema, invocation.request);
      }
      await session.put(`${key}/async/${tids.next()}`, payload, {
        encoding: Encoding.APPLICATION_PROTOBUF,
        attachment: TRIGGER_ATTACHMENT,
      });
      return true;
    },
    async close() {
      publisher?.close();
      await connection.close();
    },
  };
}
