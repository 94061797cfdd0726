import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { create, fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { getRequestListener } from "@hono/node-server";
import { createMemoryEngine, isStoreError, type KvEngine } from "@oprc/entry-store";
import {
  CreateCollectionRequestSchema,
  CreateCollectionResponseSchema,
  createDataServiceImpl,
  createHealthService,
  createOdgmConnectRoutes,
  createOprcFunctionImpl,
  DataService,
  ListCollectionsResponseSchema,
  MaintenanceService,
  OprcFunction,
} from "@oprc/grpc-api";
import { createRestGateway } from "@oprc/rest-gateway";
import { type Logger, pino } from "pino";
import {
  type CollectionRegistry,
  openCollectionRegistry,
} from "./collections/collection-registry.js";
import type { OdgmConfig } from "./config.js";
import { createFunctionClientPool } from "./invoke/function-client-pool.js";
import { createRouteTriggerSink } from "./invoke/route-trigger-sink.js";
import { createLocalDataPlane } from "./local-data-plane.js";
import { createMaintenanceService, sampleLegacyBlobs } from "./maintenance/maintenance-service.js";
import { createOdgmMetrics, type OdgmMetrics } from "./observability/metrics.js";
import { createRpcInstrument, createRpcInterceptor } from "./observability/rpc-interceptor.js";
import { isOdgmError, OdgmError } from "./odgm-error.js";
import {
  createDualProtocolServer,
  type DualRequestHandler,
} from "./server/dual-protocol-server.js";
import { createGrpcUnaryFastPath } from "./server/grpc-unary-fast-path.js";
import { createShardManager, type ShardManager } from "./shards/shard-manager.js";

/** Name of the shard holding the node's own records (collection registry). */
const NODE_SHARD = "__odgm__";
/** Collection created on first start when none is configured, so a new node is usable. */
export const DEFAULT_COLLECTION = "default";

/** Options of {@link startOdgm}. */
export interface StartOdgmOptions {
  /** Logger; default: pino JSON logs on stdout at `config.logLevel`. */
  readonly logger?: Logger;
  /** Storage engine to use instead of opening one from the config (tests, embedding). */
  readonly engine?: KvEngine;
}

/** A running node. */
export interface OdgmNode {
  /** `http://host:port`, serving gRPC (h2c), gRPC-Web, Connect and REST (HTTP/1.1 and h2c). */
  readonly url: string;
  /** The bound port (resolved when `ODGM_HTTP_PORT=0` asked for any free one). */
  readonly port: number;
  /** The Prometheus registry and metrics served at `/metrics`. */
  readonly metrics: OdgmMetrics;
  /** The persistent collection registry (what CollectionService lists and creates). */
  readonly registry: CollectionRegistry;
  /** The node's shards: one entry store and event dispatcher per collection partition. */
  readonly shards: ShardManager;
  /** The node's logger (pino). */
  readonly logger: Logger;
  /**
   * Graceful stop: readiness goes false, no new connections, in-flight requests finish
   * (up to `ODGM_SHUTDOWN_TIMEOUT_MS`), queued events drain or are reported, storage
   * closes cleanly. Idempotent.
   */
  close(): Promise<void>;
}

/** gRPC code and REST status/code of a refused collection spec. */
function collectionStatus(err: OdgmError): { code: Code; http: 400 | 409 | 501; rest: string } {
  if (err.code === "collection_exists") {
    return { code: Code.AlreadyExists, http: 409, rest: "conflict" };
  }
  if (err.code === "unsupported")
    return { code: Code.Unimplemented, http: 501, rest: "unimplemented" };
  return { code: Code.InvalidArgument, http: 400, rest: "invalid_argument" };
}

function collectionError(err: unknown): unknown {
  if (!isOdgmError(err)) return err;
  return new ConnectError(err.message, collectionStatus(err).code, undefined, undefined, err);
}

async function openEngine(config: OdgmConfig): Promise<KvEngine> {
  if (config.storage === "memory") return createMemoryEngine();
  const { openRocksEngine } = await import("@oprc/entry-store/rocksdb");
  try {
    return await openRocksEngine({ location: config.dataDir });
  } catch (err) {
    if (isStoreError(err) && err.code === "locked") {
      throw new OdgmError(
        "data_dir_locked",
        `the data directory ${config.dataDir} is in use by another process (is another odgm running?)`,
        { cause: err },
      );
    }
    throw err;
  }
}

/**
 * Starts a single-node ODGM service: opens storage, the collection registry and one
 * shard (entry store + event dispatcher) per collection partition, and serves gRPC and
 * REST on one port.
 *
 * @example
 * const node = await startOdgm(loadConfig(process.env));
 * console.log(node.url);
 * await node.close();
 */
export async function startOdgm(
  config: OdgmConfig,
  options: StartOdgmOptions = {},
): Promise<OdgmNode> {
  const logger = options.logger ?? pino({ level: config.logLevel, base: { service: "odgm" } });
  const metrics = createOdgmMetrics();
  const engine = options.engine ?? (await openEngine(config));
  const functions = createFunctionClientPool({ maxMessageBytes: config.limits.maxMessageBytes });
  let shards: ShardManager | undefined;
  try {
    const registry = await openCollectionRegistry(await engine.openShard(NODE_SHARD));
    for (const spec of config.collections) {
      try {
        await registry.create(spec);
      } catch (err) {
        throw new OdgmError("invalid_config", (err as Error).message, {
          cause: err,
          variable: "ODGM_COLLECTION",
        });
      }
    }
    if (registry.list().length === 0) {
      await registry.create(
        create(CreateCollectionRequestSchema, { name: DEFAULT_COLLECTION, partitionCount: 1 }),
      );
      logger.info({ collection: DEFAULT_COLLECTION }, "created the default collection");
    }
    const sink = createRouteTriggerSink(registry, functions);
    const manager = createShardManager({
      engine,
      sync: config.syncWrites,
      granular: config.features.granularStorage,
      prefetchLimit: config.limits.prefetchLimit,
      maxGetEntries: config.limits.maxGetEntries,
      maxKeyLength: config.features.maxStringIdLen,
      events: config.events,
      sink,
      metrics,
      onEventError: (err) => logger.error({ err }, "could not enqueue a mutation's event"),
    });
    shards = manager;
    for (const spec of registry.list()) await manager.addCollection(spec);

    const plane = createLocalDataPlane({
      shards: manager,
      registry,
      functions,
      metrics,
      granular: config.features.granularStorage,
      eventPipeline: config.events.pipelineEnabled,
      stringIdsWriteOnly: config.features.stringIdsWriteOnly,
      invokeTimeoutMs: config.limits.invokeTimeoutMs,
    });
    const health = createHealthService();
    let ready = true;
    const apiOptions = {
      stringIds: config.features.stringIds,
      stringKeys: config.features.stringKeys,
      maxIdLength: config.features.maxStringIdLen,
      unicode: config.features.unicodeIds,
      onInternalError: (cause: unknown, info: { procedure: string }) =>
        logger.error({ err: cause, procedure: info.procedure }, "internal error"),
    };
    const createCollection = async (input: Parameters<CollectionRegistry["create"]>[0]) => {
      const { spec } = await registry.create(input);
      await manager.addCollection(spec);
      return spec;
    };
    const routes = createOdgmConnectRoutes({
      plane,
      health,
      readMaxBytes: config.limits.maxMessageBytes,
      writeMaxBytes: config.limits.maxMessageBytes,
      ...apiOptions,
      collections: {
        async createCollection(req) {
          try {
            const spec = await createCollection(req);
            return create(CreateCollectionResponseSchema, { name: spec.name });
          } catch (err) {
            throw collectionError(err);
          }
        },
        listCollections: () =>
          create(ListCollectionsResponseSchema, { collections: registry.list() }),
      },
    });

    const maintenance = createMaintenanceService(manager, metrics);
    const allRoutes = (router: Parameters<typeof routes>[0]): void => {
      routes(router);
      router.service(MaintenanceService, maintenance);
    };
    // REST runs over the same handlers through an in-process Connect transport.
    const instrument = createRpcInstrument(metrics);
    const interceptors = [createRpcInterceptor(instrument)];
    const local = createRouterTransport(routes, { router: { interceptors } });
    const gateway = createRestGateway({
      data: createClient(DataService, local),
      functions: createClient(OprcFunction, local),
      ids: { maxLength: config.features.maxStringIdLen, unicode: config.features.unicodeIds },
      bodyLimit: config.limits.maxMessageBytes,
      ready: () => ready,
      metrics: async () => {
        for (const s of manager.all()) {
          metrics.eventQueueLength.set(
            { collection: s.cls, partition: String(s.partition) },
            s.events?.queueLength ?? 0,
          );
        }
        return metrics.registry.metrics();
      },
      onServerError: (err) => logger.error({ err }, "REST request failed"),
    });
    // Collection administration lives on the gateway app itself, so unknown routes keep the
    // gateway's JSON 404 and its error format.
    const app = gateway;
    app.get("/api/collections", (c) =>
      c.json(
        toJson(
          ListCollectionsResponseSchema,
          create(ListCollectionsResponseSchema, { collections: registry.list() }),
        ),
      ),
    );
    app.post("/api/collections", async (c) => {
      let spec: ReturnType<typeof fromJson<typeof CreateCollectionRequestSchema>>;
      try {
        spec = fromJson(CreateCollectionRequestSchema, (await c.req.json()) as JsonValue);
      } catch (err) {
        return c.json(
          { error: { code: "invalid_argument", message: (err as Error).message } },
          400,
        );
      }
      try {
        const created = await createCollection(spec);
        return c.json(toJson(CreateCollectionRequestSchema, created), 201);
      } catch (err) {
        if (isOdgmError(err)) {
          const status = collectionStatus(err);
          return c.json({ error: { code: status.rest, message: err.message } }, status.http);
        }
        throw err;
      }
    });

    const connectHandler = connectNodeAdapter({
      routes: allRoutes,
      interceptors,
      readMaxBytes: config.limits.maxMessageBytes,
      writeMaxBytes: config.limits.maxMessageBytes,
      fallback: getRequestListener(app.fetch) as never,
    });
    // Plain gRPC unary calls of DataService and OprcFunction skip connect's per-call
    // pipeline (see grpc-unary-fast-path.ts and BENCHMARKS.md); everything else is Connect's.
    const fast = config.grpcFastPath
      ? createGrpcUnaryFastPath({
          services: [
            { service: DataService, impl: createDataServiceImpl(plane, apiOptions) },
            { service: OprcFunction, impl: createOprcFunctionImpl(plane, apiOptions) },
          ],
          readMaxBytes: config.limits.maxMessageBytes,
          writeMaxBytes: config.limits.maxMessageBytes,
          instrument,
        })
      : undefined;
    const handler: DualRequestHandler =
      fast === undefined
        ? (connectHandler as DualRequestHandler)
        : (req, res) => {
            if (
              req.httpVersionMajor === 2 &&
              fast(req as Http2ServerRequest, res as Http2ServerResponse)
            ) {
              return;
            }
            connectHandler(req as never, res as never);
          };
    const server = await createDualProtocolServer({
      host: config.http.host,
      port: config.http.port,
      handler,
      onError: (err) => logger.debug({ err }, "connection error"),
    });
    const host = config.http.host === "0.0.0.0" ? "127.0.0.1" : config.http.host;
    const url = `http://${host.includes(":") ? `[${host}]` : host}:${server.address.port}`;
    logger.info(
      {
        url,
        storage: config.storage,
        dataDir: config.storage === "rocksdb" ? config.dataDir : undefined,
        collections: registry.list().map((c) => c.name),
      },
      "odgm listening (gRPC over h2c, gRPC-Web, Connect and REST over HTTP/1.1 and h2c)",
    );

    // odgm_objects_pending_conversion_total: counted in the background, so a large legacy
    // keyspace never delays the start; MaintenanceService conversions count it down.
    const stopSampling = new AbortController();
    const sampling = sampleLegacyBlobs(manager, metrics, stopSampling.signal).catch(
      (err: unknown) => logger.warn({ err }, "could not count legacy blobs"),
    );

    let closing: Promise<void> | undefined;
    return {
      url,
      port: server.address.port,
      metrics,
      registry,
      shards: manager,
      logger,
      close() {
        closing ??= (async () => {
          ready = false;
          health.shutdown();
          const grace = config.limits.shutdownTimeoutMs;
          await server.close(grace);
          stopSampling.abort();
          await sampling;
          const reports = await manager.close(AbortSignal.timeout(Math.max(grace, 1)));
          const discarded = reports.reduce((n, r) => n + r.discarded, 0);
          const drained = reports.reduce((n, r) => n + r.drained, 0);
          functions.close();
          await engine.close();
          logger.info({ drainedEvents: drained, discardedEvents: discarded }, "odgm stopped");
        })();
        return closing;
      },
    };
  } catch (err) {
    await shards?.close(AbortSignal.timeout(1)).catch(() => {});
    functions.close();
    await engine.close().catch(() => {});
    throw err;
  }
}
