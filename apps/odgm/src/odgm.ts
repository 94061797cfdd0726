import { readFileSync } from "node:fs";
import { setTimeout as delay } from "node:timers/promises";
import { create, type DescService } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { getRequestListener } from "@hono/node-server";
import { createMemoryEngine, isStoreError, type KvEngine } from "@oprc/entry-store";
import type { RocksEngine } from "@oprc/entry-store/rocksdb";
import type { TriggerInvocation } from "@oprc/event-v2";
import {
  ClusterService,
  CollectionService,
  type CreateCollectionRequest,
  CreateCollectionRequestSchema,
  createHealthService,
  isDataPlaneError,
  MaintenanceService,
  type ObjectRef,
  quoteInput,
  RaftService,
  WatchService,
} from "@oprc/grpc-api";
import { createRestGateway } from "@oprc/rest-gateway";
import { type Logger, pino } from "pino";
import { type Authorizer, createAuthorizer } from "./auth/authorizer.js";
import { createTokenSet, parseTokenEntries, type TokenEntry } from "./auth/token-set.js";
import { startChangeLogCompaction } from "./changefeed/compaction.js";
import { createWatchServiceImpl } from "./changefeed/watch-service.js";
import { createClusterServiceImpl, registerClusterRoutes } from "./cluster/cluster-admin.js";
import { type ClusterHooks, ClusterNode } from "./cluster/cluster-node.js";
import { createPartitionRouter } from "./cluster/partition-router.js";
import { RAFT_STREAM_PATH } from "./cluster/raft-transport.js";
import { decodeRaftBatch } from "./cluster/raft-wire.js";
import {
  type CollectionRegistry,
  openCollectionRegistry,
} from "./collections/collection-registry.js";
import {
  createCollectionServiceImpl,
  registerCollectionRoutes,
} from "./collections/collection-routes.js";
import type { OdgmConfig } from "./config.js";
import { createFunctionClientPool } from "./invoke/function-client-pool.js";
import { createRouteTriggerSink } from "./invoke/route-trigger-sink.js";
import { createLocalDataPlane } from "./local-data-plane.js";
import {
  countLegacyBlobs,
  createMaintenanceService,
  sampleLegacyBlobs,
} from "./maintenance/maintenance-service.js";
import { createOdgmMetrics, type OdgmMetrics } from "./observability/metrics.js";
import { restErrorLogger } from "./observability/rest-error-log.js";
import { createRpcInstrument, createRpcInterceptor } from "./observability/rpc-interceptor.js";
import { isOdgmError, OdgmError } from "./odgm-error.js";
import {
  createDualProtocolServer,
  type Http2StreamHandler,
} from "./server/dual-protocol-server.js";
import { isAuthenticatedPeer, peersOnly, peersOnlyStreams } from "./server/peer-auth.js";
import { createServerPipeline } from "./server/server-pipeline.js";
import { createShardManager, type ShardManager } from "./shards/shard-manager.js";
import type { ZenohService } from "./zenoh/zenoh-service.js";

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
  /**
   * Connect interceptors added after the node's own (metrics and tracing), applied on every
   * path a call takes (connect-node, the gRPC fast path, REST's in-process client).
   */
  readonly interceptors?: readonly Interceptor[];
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
  /**
   * Re-reads `ODGM_TLS_CERT` / `ODGM_TLS_KEY` for new connections (the `odgm` command does
   * this on SIGHUP). Throws when the files do not load; the old certificate stays.
   */
  reloadTls(): void;
  /**
   * Re-reads `ODGM_AUTH_TOKENS_FILE` (and `ODGM_AUTH_TOKENS`) for the calls that follow (the
   * `odgm` command does this on SIGHUP) and returns how many tokens are configured. Throws
   * when authentication is off or the tokens do not load; the old tokens then stay.
   */
  reloadAuth(): number;
  /**
   * Bearer-token authorization (`ODGM_AUTH_TOKENS_FILE`, `ODGM_AUTH_TOKENS`); `undefined`
   * when authentication is off.
   */
  readonly authorizer: Authorizer | undefined;
  /** What the node serves: every registered RPC service and every REST route. */
  readonly served: {
    readonly services: readonly DescService[];
    readonly routes: readonly { readonly method: string; readonly path: string }[];
  };
}

/** True for an address only this machine reaches. */
function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host.startsWith("127.");
}

/** Reads the token entries of `ODGM_AUTH_TOKENS_FILE` and `ODGM_AUTH_TOKENS`. */
function loadTokens(auth: NonNullable<OdgmConfig["auth"]>): TokenEntry[] {
  const entries: TokenEntry[] = [];
  if (auth.tokensFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(auth.tokensFile, "utf8");
    } catch (err) {
      throw new OdgmError("invalid_config", `ODGM_AUTH_TOKENS_FILE: ${(err as Error).message}`, {
        cause: err,
        variable: "ODGM_AUTH_TOKENS_FILE",
      });
    }
    entries.push(...parseTokenEntries(text, "ODGM_AUTH_TOKENS_FILE"));
  }
  if (auth.tokens !== undefined)
    entries.push(...parseTokenEntries(auth.tokens, "ODGM_AUTH_TOKENS"));
  if (entries.length === 0) {
    throw new OdgmError(
      "invalid_config",
      "authentication is on but ODGM_AUTH_TOKENS_FILE / ODGM_AUTH_TOKENS list no token: nobody could call the node",
      { variable: auth.tokensFile === undefined ? "ODGM_AUTH_TOKENS" : "ODGM_AUTH_TOKENS_FILE" },
    );
  }
  return entries;
}

/** Cluster events as metrics. */
function clusterMetricHooks(metrics: OdgmMetrics): ClusterHooks {
  return {
    onLeaderChange: (group) => metrics.raftLeaderChanges.inc({ group }),
    onProposal: (group, outcome, ms) => {
      metrics.raftProposals.inc({ group, outcome });
      if (outcome !== "error") metrics.raftCommitLatencyMs.observe({ group }, ms);
    },
    onForwarded: (kind) => metrics.raftForwarded.inc({ kind }),
    onRefused: (peer) => metrics.raftRefusedBatches.inc({ peer: String(peer) }),
  };
}

function isRocksEngine(engine: KvEngine): engine is RocksEngine {
  return engine.kind === "rocksdb" && "writeWorkerHeap" in engine;
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
  const tlsConfig = config.tls;
  const readTls = (files: NonNullable<typeof tlsConfig>) => {
    try {
      return {
        cert: readFileSync(files.certFile),
        key: readFileSync(files.keyFile),
        ...(files.caFile === undefined ? {} : { ca: readFileSync(files.caFile) }),
      };
    } catch (err) {
      throw new OdgmError(
        "invalid_config",
        `ODGM_TLS_CERT / ODGM_TLS_KEY / ODGM_TLS_CA: ${(err as Error).message}`,
        { cause: err, variable: "ODGM_TLS_CERT" },
      );
    }
  };
  // Read before anything opens, so a missing or unreadable file fails the start at once.
  const tlsFiles = tlsConfig === undefined ? undefined : readTls(tlsConfig);
  const metrics = createOdgmMetrics();
  const authorizer =
    config.auth === undefined
      ? undefined
      : createAuthorizer({
          tokens: createTokenSet(loadTokens(config.auth)),
          metricsAccess: config.auth.metrics,
          metrics,
        });
  const engine = options.engine ?? (await openEngine(config));
  const functions = createFunctionClientPool({ maxMessageBytes: config.limits.maxMessageBytes });
  let shards: ShardManager | undefined;
  let cluster: ClusterNode | undefined;
  let closingCluster = false;
  try {
    const nodeShard = await engine.openShard(NODE_SHARD);
    const registry = await openCollectionRegistry(nodeShard);
    /** Publishes fired triggers on Zenoh once it is configured (set below). */
    let publishTrigger: ((inv: TriggerInvocation) => Promise<boolean>) | undefined;
    const sink = createRouteTriggerSink(registry, functions, (inv) =>
      publishTrigger === undefined ? Promise.resolve(false) : publishTrigger(inv),
    );
    let late: ShardManager | undefined;
    cluster = await ClusterNode.start({
      config: config.cluster,
      storage: config.storage,
      dataDir: config.dataDir,
      nodeShard,
      registry,
      logger,
      onCollection: async (spec) => {
        await late?.addCollection(spec);
      },
      serving: (cls, partition) => late?.get(cls, partition) !== undefined,
      onReplicaRemoved: async (cls, partition) => {
        await late?.removeShard(cls, partition);
      },
      hooks: clusterMetricHooks(metrics),
      ...(tlsFiles?.ca === undefined ? {} : { peerTls: { ...tlsFiles, ca: tlsFiles.ca } }),
    });
    const clusterNode = cluster;
    const manager = createShardManager({
      engine,
      sync: config.syncWrites,
      dualWrite: !config.features.granularStorage,
      legacyFallback: config.features.blobFallback,
      prefetchLimit: config.limits.prefetchLimit,
      maxGetEntries: config.limits.maxGetEntries,
      maxKeyLength: config.features.maxStringIdLen,
      events: config.events,
      sink,
      metrics,
      onEventError: (err) => logger.error({ err }, "could not enqueue a mutation's event"),
      replication: clusterNode,
      ...(config.changeFeed.enabled ? { changeLog: { values: config.changeFeed.values } } : {}),
      ...(config.triggerDelivery.mode === "at-least-once"
        ? { atLeastOnce: { retry: config.triggerDelivery, logger } }
        : {}),
    });
    late = manager;
    shards = manager;
    for (const spec of registry.list()) await manager.addCollection(spec);
    if (!config.features.blobFallback) await checkNoBlobsRemain(manager, config, logger);
    // Collections of ODGM_COLLECTION (and, on a new cluster without any, the default one)
    // are created through the metadata group. A single node has its leader at once; a
    // node of a larger cluster creates them once a quorum is up, in the background.
    const createConfigured = async (): Promise<void> => {
      for (const spec of config.collections) {
        try {
          await clusterNode.createCollection(spec);
        } catch (err) {
          if (isDataPlaneError(err)) throw err;
          throw new OdgmError("invalid_config", (err as Error).message, {
            cause: err,
            variable: "ODGM_COLLECTION",
          });
        }
      }
      if (registry.list().length === 0 && config.cluster.state === "new") {
        await clusterNode.createCollection(
          create(CreateCollectionRequestSchema, { name: DEFAULT_COLLECTION, partitionCount: 1 }),
        );
        logger.info({ collection: DEFAULT_COLLECTION }, "created the default collection");
      }
    };
    let configured = config.cluster.members.size === 1;
    if (configured) await createConfigured();
    else {
      const retry = async (): Promise<void> => {
        for (let attempt = 1; !closingCluster; attempt++) {
          try {
            await createConfigured();
            configured = true;
            return;
          } catch (err) {
            if (isOdgmError(err)) {
              logger.error({ err }, "configured collections cannot be created");
              return;
            }
            logger.info(
              { err, attempt },
              "waiting for the cluster to create the configured collections",
            );
            await new Promise((r) => setTimeout(r, Math.min(5000, 200 * attempt)));
          }
        }
      };
      void retry();
    }

    const localPlane = createLocalDataPlane({
      shards: manager,
      registry,
      functions,
      metrics,
      eventPipeline: config.events.pipelineEnabled,
      stringIdsWriteOnly: config.features.stringIdsWriteOnly,
      stringIdWrites: config.features.stringIdWrites,
      numericIdCreates: config.features.numericIdCreates,
      onNumericCreate: rateLimitedNumericCreateLog(logger),
      invokeTimeoutMs: config.limits.invokeTimeoutMs,
      readConsistency: config.cluster.readConsistency,
      addressOf: (id) => clusterNode.addresses.get(id),
      opening: (cls, partition) => clusterNode.opening(cls, partition),
      refused: () => clusterNode.failure(),
      onWriteFailed: (err) => {
        if (storageFailure !== undefined) return;
        storageFailure = err.message;
        metrics.storageWritable.set(0);
        logger.error(
          { err },
          "storage refused a write and refuses all writes until restart: not ready; free space (or fix the disk) and restart the node",
        );
      },
    });
    const plane = createPartitionRouter({
      local: localPlane,
      replicasElsewhere: (ref, forwardedBy) => clusterNode.replicasElsewhere(ref, forwardedBy),
      remote: (id) => clusterNode.dataPlaneOf(id),
      onForwarded: () => metrics.raftForwarded.inc({ kind: "request" }),
      pending: (ref) => clusterNode.pending(ref),
    });
    /** Why storage refuses writes (the node is not ready until it restarts), if it does. */
    let storageFailure: string | undefined;
    metrics.storageWritable.set(1);
    const health = createHealthService();
    let ready = true;
    const apiOptions = {
      stringIds: config.features.stringIds,
      stringKeys: config.features.stringKeys,
      maxIdLength: config.features.maxStringIdLen,
      unicode: config.features.unicodeIds,
      onInternalError: (cause: unknown, info: { procedure: string }) =>
        logger.error({ err: cause, procedure: info.procedure }, "internal error"),
      onIdNormalized: (ns: number) => metrics.idNormalizeNs.observe(ns),
    };
    const collectionAdmin = {
      list: () => registry.list(),
      create: (spec: CreateCollectionRequest) => {
        // Every partition is a store and an event queue that stay open: cap them together.
        const max = config.limits.maxPartitions;
        const existing = registry.list();
        const total =
          existing.reduce((n, c) => n + c.partitionCount, 0) + Math.max(1, spec.partitionCount);
        if (registry.get(spec.name) === undefined && total > max) {
          throw new OdgmError(
            "too_many_partitions",
            `collection ${quoteInput(spec.name)} would bring the partitions of all collections to ${total}, above ODGM_MAX_PARTITIONS (${max})`,
          );
        }
        return clusterNode.createCollection(spec);
      },
    };
    const stopWatches = new AbortController();
    const maintenance = createMaintenanceService(manager, metrics);
    // One pipeline: the services once, the same interceptors on every path.
    const pipeline = createServerPipeline({
      plane,
      api: apiOptions,
      health,
      services: [
        { service: CollectionService, impl: createCollectionServiceImpl(collectionAdmin) },
        { service: ClusterService, impl: createClusterServiceImpl(clusterNode) },
        { service: MaintenanceService, impl: maintenance },
        // The Raft stream (client streaming) on the fast path: one decode per batch, by
        // raft-wire's reader rather than protobuf-es's reflective one.
        {
          service: RaftService,
          impl: clusterNode.raftService(),
          streams: true,
          decoders: { stream: decodeRaftBatch },
        },
        {
          service: WatchService,
          impl: createWatchServiceImpl({
            shards: manager,
            registry,
            ids: { maxLength: config.features.maxStringIdLen, unicode: config.features.unicodeIds },
            progressMs: config.changeFeed.progressMs,
            replicasOf: (cls, partition) => clusterNode.replicasElsewhere({ cls, partition }),
            onWatchers: (d) => metrics.changefeedWatchers.inc(d),
            stop: stopWatches.signal,
          }),
          streams: true,
        },
      ],
      interceptors: [
        createRpcInterceptor(createRpcInstrument(metrics)),
        ...(authorizer === undefined ? [] : [authorizer.interceptor]),
        ...(options.interceptors ?? []),
      ],
      ...(authorizer === undefined ? {} : { inProcessInterceptors: [authorizer.trustInterceptor] }),
      maxMessageBytes: config.limits.maxMessageBytes,
      fastPath: config.grpcFastPath,
      onSendError: (err) => logger.error({ err }, "a gRPC answer could not be sent"),
    });
    /** The Zenoh side (ODGM_ZENOH_ENDPOINT), started once the server listens. */
    let zenoh: ZenohService | undefined;
    // REST calls the same handlers in process (no encode, decode or transport in between).
    const gateway = createRestGateway({
      data: pipeline.data,
      functions: pipeline.functions,
      watch: pipeline.client(WatchService),
      ids: { maxLength: config.features.maxStringIdLen, unicode: config.features.unicodeIds },
      bodyLimit: config.limits.maxMessageBytes,
      partitionCount: (cls) => registry.get(cls)?.partitionCount,
      ready: () => ready && configured && storageFailure === undefined && clusterNode.ready(),
      // Zenoh is a side channel: while it is down, gRPC and REST serve and the node stays ready.
      readyDetail: (): Record<string, string> => {
        const refused = clusterNode.failure();
        return {
          ...(zenoh === undefined ? {} : { zenoh: zenoh.isUp() ? "up" : "down" }),
          ...(refused === undefined ? {} : { cluster: refused }),
        };
      },
      metrics: async () => {
        const heap = isRocksEngine(engine) ? await engine.writeWorkerHeap() : undefined;
        if (heap !== undefined) {
          metrics.writeWorkerHeap.set({ kind: "used" }, heap.usedBytes);
          metrics.writeWorkerHeap.set({ kind: "external" }, heap.externalBytes);
        }
        for (const s of manager.all()) {
          metrics.eventQueueLength.set(
            { collection: s.cls, partition: String(s.partition) },
            s.events?.queueLength ?? 0,
          );
        }
        const cluster = clusterNode.status();
        for (const t of cluster.transport) {
          const peer = String(t.peer);
          metrics.raftPeerMessages.set({ peer, outcome: "sent" }, t.messages);
          metrics.raftPeerMessages.set({ peer, outcome: "dropped" }, t.dropped);
          metrics.raftPeerBatches.set({ peer }, t.batches);
        }
        if (cluster.log !== undefined) {
          const { batches, inlineBatches, syncMs } = cluster.log;
          metrics.raftLogBatches.set({ thread: "event_loop" }, inlineBatches);
          metrics.raftLogBatches.set({ thread: "worker" }, batches - inlineBatches);
          metrics.raftLogSyncSeconds.set(syncMs / 1000);
        }
        for (const st of cluster.groups) {
          metrics.raftTerm.set({ group: st.group }, st.term);
          metrics.raftLeader.set({ group: st.group }, st.role === "leader" ? 1 : 0);
          metrics.raftApplyLag.set({ group: st.group }, st.commit - st.applied);
          metrics.raftQuiescent.set({ group: st.group }, st.quiescent ? 1 : 0);
          metrics.raftSnapshots.set({ group: st.group, direction: "sent" }, st.snapshotsSent);
          metrics.raftSnapshots.set(
            { group: st.group, direction: "installed" },
            st.snapshotsInstalled,
          );
          metrics.raftSnapshots.set({ group: st.group, direction: "built" }, st.snapshotsBuilt);
        }
        return metrics.registry.metrics();
      },
      onServerError: restErrorLogger(logger),
    });
    // Collection administration lives on the gateway app itself, so unknown routes keep the
    // gateway's JSON 404 and its error format.
    const app = gateway;
    registerCollectionRoutes(app, collectionAdmin);
    registerClusterRoutes(app, clusterNode);

    const restFetch = authorizer === undefined ? app.fetch : authorizer.guardFetch(app.fetch);
    const served = pipeline.handler(getRequestListener(restFetch) as never);
    // Both ways a call comes in (the gRPC fast path first, then the handler) mark peer calls
    // alike, and refuse a Raft call without a cluster certificate alike.
    const isPeer = (socket: unknown): boolean =>
      tlsFiles?.ca !== undefined && isAuthenticatedPeer(socket);
    const handler: typeof served =
      authorizer === undefined
        ? served
        : (req, res) => {
            authorizer.markPeer(req.headers, isPeer(req.socket));
            served(req, res);
          };
    const fast = pipeline.streamHandler;
    const marked: Http2StreamHandler | undefined =
      fast === undefined || authorizer === undefined
        ? fast
        : (stream, headers) => {
            authorizer.markPeer(headers, isPeer(stream.session?.socket));
            return fast(stream, headers);
          };
    const streamHandler =
      marked === undefined || tlsFiles?.ca === undefined ? marked : peersOnlyStreams(marked);
    const server = await createDualProtocolServer({
      host: config.http.host,
      port: config.http.port,
      h2cEngine: config.http.h2cEngine,
      ...(tlsFiles === undefined ? {} : { tls: tlsFiles }),
      handler: tlsFiles?.ca === undefined ? handler : peersOnly(handler),
      ...(streamHandler === undefined ? {} : { streamHandler }),
      // The Raft stream a peer keeps open: it ends with the cluster node (see close).
      longLived: (path) => path === RAFT_STREAM_PATH,
      onError: (err) => logger.debug({ err }, "connection error"),
      idleTimeoutMs: config.limits.idleTimeoutMs,
      headersTimeoutMs: config.limits.headersTimeoutMs,
      ...(config.limits.maxConnections > 0 ? { maxConnections: config.limits.maxConnections } : {}),
    });
    if (authorizer === undefined && !isLoopback(config.http.host)) {
      logger.warn(
        { host: config.http.host },
        "authentication is off: anyone who reaches this port may read, write and administer; set ODGM_AUTH_TOKENS_FILE (see the odgm README, Authentication)",
      );
    }
    const host = config.http.host === "0.0.0.0" ? "127.0.0.1" : config.http.host;
    const url = `${server.scheme}://${host.includes(":") ? `[${host}]` : host}:${server.address.port}`;
    logger.info(
      {
        url,
        storage: config.storage,
        dataDir: config.storage === "rocksdb" ? config.dataDir : undefined,
        collections: registry.list().map((c) => c.name),
      },
      "odgm listening (gRPC over h2c, gRPC-Web, Connect and REST over HTTP/1.1 and h2c)",
    );

    // Zenoh (ODGM_ZENOH_ENDPOINT): the same DataService handlers, in process, like REST, but
    // each call checked like a network one (a token rides in the query's or sample's attachment).
    // zenoh-ts (and its WebAssembly module) is loaded only when Zenoh is configured.
    const zenohConfig = config.zenoh;
    zenoh =
      zenohConfig === undefined
        ? undefined
        : (await import("./zenoh/zenoh-service.js")).createZenohService({
            endpoint: zenohConfig.endpoint,
            retryMs: zenohConfig.retryMs,
            nodeId: config.cluster.nodeId,
            data: pipeline.edge.data,
            functions: pipeline.edge.functions,
            shards: () => manager.all(),
            // Every node receives a put; the one serving the partition applies it (on a
            // raft partition its leader). Unknown collections: every node refuses it.
            appliesSample: (target) => {
              const ref = { cls: target.cls, partition: target.partition };
              const shard = manager.get(ref.cls, ref.partition);
              if (shard === undefined) return clusterNode.replicasElsewhere(ref) === undefined;
              return shard.replica === undefined || shard.replica.isLeader;
            },
            metrics,
            logger,
            timeoutMs: config.limits.invokeTimeoutMs,
          });
    if (zenoh !== undefined) publishTrigger = zenoh.publishTrigger;
    if (zenoh !== undefined && authorizer !== undefined) {
      logger.info(
        "Zenoh requests need a bearer token in their attachment (Bearer <token>); change events and trigger publications are not checked: restrict who may subscribe with the Zenoh router's access control",
      );
    }

    // odgm_objects_pending_conversion_total: counted in the background, so a large legacy
    // keyspace never delays the start; MaintenanceService conversions count it down.
    const stopCompaction = config.changeFeed.enabled
      ? startChangeLogCompaction({
          shards: manager,
          retention: {
            maxRecords: config.changeFeed.retentionRecords,
            maxAgeMs: config.changeFeed.retentionMs,
          },
          intervalMs: config.changeFeed.compactIntervalMs,
          metrics,
          logger,
        })
      : async () => {};
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
      authorizer,
      served: {
        services: pipeline.services,
        routes: app.routes
          .filter((r) => r.method !== "ALL")
          .map((r) => ({ method: r.method, path: r.path })),
      },
      reloadAuth() {
        if (config.auth === undefined || authorizer === undefined) {
          throw new OdgmError("invalid_config", "authentication is not configured");
        }
        const entries = loadTokens(config.auth);
        authorizer.setTokens(createTokenSet(entries));
        logger.info({ tokens: entries.length }, "reloaded the bearer tokens");
        return entries.length;
      },
      reloadTls() {
        if (tlsConfig === undefined) throw new OdgmError("invalid_config", "TLS is not configured");
        server.setTls(readTls(tlsConfig));
        logger.info({ cert: tlsConfig.certFile }, "reloaded the TLS certificate");
      },
      close() {
        closing ??= (async () => {
          ready = false;
          health.shutdown();
          // Watch streams never end by themselves: end them so the server can drain.
          stopWatches.abort();
          await zenoh?.close();
          const grace = config.limits.shutdownTimeoutMs;
          const deadline = Date.now() + grace;
          const serverClosed = server.close(grace);
          // Raft keeps running while requests drain: a proposal in flight here still
          // commits. Leadership moves first, so clients wait a round trip, not an election.
          const { moved, kept } = await clusterNode.handOffLeadership(grace);
          if (moved.length > 0) logger.info({ groups: moved }, "handed off leadership");
          if (kept.length > 0) logger.info({ groups: kept }, "stopping while still leading");
          const left = Math.max(0, deadline - Date.now());
          await Promise.race([server.requestsDone(), delay(left, undefined, { ref: false })]);
          // Then the Raft streams peers keep open to this node end with the cluster node,
          // so the server's drain does not wait out its grace for them.
          closingCluster = true;
          await clusterNode.close();
          await serverClosed;
          stopSampling.abort();
          await sampling;
          await stopCompaction();
          const reports = await manager.close(AbortSignal.timeout(Math.max(grace, 1)));
          const discarded = reports.reduce((n, r) => n + r.discarded, 0);
          const drained = reports.reduce((n, r) => n + r.drained, 0);
          functions.close();
          try {
            await engine.close();
          } catch (err) {
            // After a refused write RocksDB cannot flush on close; what was acknowledged is
            // in its synced log and recovered on the next start. Anything else is a failure.
            if (storageFailure === undefined) throw err;
            logger.warn(
              { err },
              "storage could not close cleanly after the earlier write failure; acknowledged writes are in its log and recovered on the next start",
            );
          }
          logger.info({ drainedEvents: drained, discardedEvents: discarded }, "odgm stopped");
        })();
        return closing;
      },
    };
  } catch (err) {
    closingCluster = true;
    await cluster?.close().catch(() => {});
    await shards?.close(AbortSignal.timeout(1)).catch(() => {});
    functions.close();
    await engine.close().catch(() => {});
    throw err;
  }
}

/**
 * Logs numeric-id creates (`ODGM_NUMERIC_ID_CREATES=warn`) at most once a minute, with how
 * many went unlogged since the last line; the metric counts every one.
 */
function rateLimitedNumericCreateLog(logger: Logger): (ref: ObjectRef) => void {
  let last = 0;
  let unlogged = 0;
  return (ref) => {
    const now = Date.now();
    if (now - last < 60_000) {
      unlogged++;
      return;
    }
    logger.warn(
      { collection: ref.cls, partition: ref.partition, objectId: ref.id.id, unlogged },
      "object created by numeric object_id (deprecated: ODGM_NUMERIC_ID_CREATES=warn); clients should use object_id_str",
    );
    last = now;
    unlogged = 0;
  };
}

/**
 * Seed 003 phase F: with blob fallback off, blobs left in storage are unreadable objects.
 * Refuses to start while any remain (naming how many, per collection), unless
 * `ODGM_ALLOW_REMAINING_BLOBS=true`.
 */
async function checkNoBlobsRemain(
  shards: ShardManager,
  config: OdgmConfig,
  logger: Logger,
): Promise<void> {
  const totals = (await countLegacyBlobs(shards)) ?? new Map<string, number>();
  const remaining = [...totals].filter(([, n]) => n > 0);
  if (remaining.length === 0) return;
  const count = remaining.reduce((sum, [, n]) => sum + n, 0);
  const where = remaining.map(([cls, n]) => `${cls}: ${n}`).join(", ");
  if (config.features.allowRemainingBlobs) {
    logger.warn(
      { remainingBlobs: count },
      `ODGM_BLOB_FALLBACK=false with ${count} legacy blob(s) left (${where}): those objects are not readable until converted`,
    );
    return;
  }
  throw new OdgmError(
    "invalid_config",
    `ODGM_BLOB_FALLBACK=false but ${count} legacy blob(s) remain (${where}): convert them first (odgm-backfill, or MaintenanceService/ConvertLegacyObjects with ODGM_BLOB_FALLBACK=true), or set ODGM_ALLOW_REMAINING_BLOBS=true to start anyway with those objects unreadable`,
    { variable: "ODGM_BLOB_FALLBACK" },
  );
}
