import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { type EventV2Config, eventConfigFromEnv } from "@oprc/event-v2";
import { type CreateCollectionRequest, CreateCollectionRequestSchema } from "@oprc/grpc-api";
import { z } from "zod";
import { OdgmError } from "./odgm-error.js";

/** Environment the configuration is read from (usually `process.env`). */
export type Env = Readonly<Record<string, string | undefined>>;

/** Everything the service needs to start, parsed and validated from `ODGM_*` variables. */
export interface OdgmConfig {
  /**
   * `ODGM_HTTP_HOST` (default `0.0.0.0`) and `ODGM_HTTP_PORT` (default 8080): gRPC and REST
   * share it. `ODGM_H2C_ENGINE` (default `lean`): what serves cleartext HTTP/2, odgm's own
   * engine (`lean`, which passes what the gRPC fast path does not serve to Node's) or Node's
   * (`node`); TLS connections are always Node's.
   */
  readonly http: {
    readonly host: string;
    readonly port: number;
    readonly h2cEngine: "lean" | "node";
  };
  /**
   * `ODGM_TLS_CERT` and `ODGM_TLS_KEY` (PEM files, both or neither): serve gRPC, gRPC-Web,
   * Connect and REST over TLS on the same port (ALPN h2 and http/1.1); SIGHUP re-reads them.
   * `ODGM_TLS_CA` (PEM file, required in a cluster of more than one member): the CA that
   * signs every member's certificate; nodes then authenticate each other (mutual TLS) and
   * the internal Raft service refuses callers without a certificate it signed.
   */
  readonly tls:
    | { readonly certFile: string; readonly keyFile: string; readonly caFile?: string }
    | undefined;
  /** `ODGM_DATA_DIR` (default `./data`): where RocksDB keeps the node's data. */
  /**
   * Bearer-token authentication, on when `ODGM_AUTH_TOKENS_FILE` or `ODGM_AUTH_TOKENS` is
   * set (both: their entries together); `undefined`: off. `ODGM_AUTH_METRICS` (`read`, the
   * default, or `open`) says whether `/metrics` needs a token.
   */
  readonly auth:
    | {
        readonly tokensFile?: string;
        readonly tokens?: string;
        readonly metrics: "open" | "read";
      }
    | undefined;
  readonly dataDir: string;
  /** `ODGM_STORAGE` (default `rocksdb`): `memory` keeps nothing across restarts. */
  readonly storage: "rocksdb" | "memory";
  /** `ODGM_SYNC_WRITES` (default true): sync the WAL before acknowledging a write. */
  readonly syncWrites: boolean;
  /** Membership and replication; see {@link ClusterConfig}. */
  readonly cluster: ClusterConfig;
  /** `ODGM_COLLECTION`: JSON array of CreateCollectionRequest, created at start if missing. */
  readonly collections: readonly CreateCollectionRequest[];
  /** Feature flags (seed 000 §9 phases); all default on except the opt-ins. */
  readonly features: {
    /** `ODGM_ENABLE_STRING_IDS` (default true). */
    readonly stringIds: boolean;
    /** `ODGM_ENABLE_STRING_KEYS`, alias `ODGM_ENABLE_STRING_ENTRY_KEYS` (default true). */
    readonly stringKeys: boolean;
    /** `ODGM_STRING_IDS_WRITE_ONLY` (default false): accept string ids but hide them from listings. */
    readonly stringIdsWriteOnly: boolean;
    /**
     * `ODGM_STRING_ID_WRITES` (default true): false refuses writes to string-id objects with
     * FAILED_PRECONDITION while reads stay on (seed 000 phase 1).
     */
    readonly stringIdWrites: boolean;
    /** `ODGM_NUMERIC_ID_CREATES` (default `allow`): seed 000 phases 4 (`warn`) and 5 (`refuse`). */
    readonly numericIdCreates: NumericIdCreates;
    /**
     * `ODGM_ENABLE_GRANULAR_STORAGE` (default true): false is dual-write (seed 003 phases
     * A–C): numeric-id objects are also written whole as legacy blobs, beside their
     * per-entry records, for a node of the pre-granular format to read.
     */
    readonly granularStorage: boolean;
    /**
     * `ODGM_BLOB_FALLBACK` (default true): false stops reading legacy blobs (seed 003
     * phase F); the node then refuses to start while any remain unless
     * `ODGM_ALLOW_REMAINING_BLOBS=true` (`allowRemainingBlobs`).
     */
    readonly blobFallback: boolean;
    /** `ODGM_ALLOW_REMAINING_BLOBS` (default false): start with blob fallback off even though blobs remain. */
    readonly allowRemainingBlobs: boolean;
    /** `ODGM_MAX_STRING_ID_LEN` (default 160 bytes), for ids and entry keys. */
    readonly maxStringIdLen: number;
    /** `ODGM_STRING_ID_UNICODE` (default false): NFC unicode ids instead of `[a-z0-9._:-]`. */
    readonly unicodeIds: boolean;
  };
  /** Sizes and time bounds. */
  readonly limits: {
    /** `ODGM_GRANULAR_PREFETCH_LIMIT` (default 256): page size when reconstructing an object. */
    readonly prefetchLimit: number;
    /** `ODGM_MAX_GET_ENTRIES` (default 65536): larger objects answer Get with RESOURCE_EXHAUSTED. */
    readonly maxGetEntries: number;
    /** `ODGM_MAX_MESSAGE_BYTES` (default 4 MiB): request and response size limit. */
    readonly maxMessageBytes: number;
    /** `ODGM_INVOKE_TIMEOUT_MS` (default 30000): bound on one function invocation. */
    readonly invokeTimeoutMs: number;
    /** `ODGM_SHUTDOWN_TIMEOUT_MS` (default 10000): how long a graceful stop waits for in-flight work. */
    readonly shutdownTimeoutMs: number;
    /**
     * `ODGM_MAX_PARTITIONS` (default 4096): partitions of all collections together at most;
     * each open partition costs memory and start-up time.
     */
    readonly maxPartitions: number;
    /** `ODGM_MAX_CONNECTIONS` (default 0 = unlimited): open connections at most; more are refused. */
    readonly maxConnections: number;
    /** `ODGM_IDLE_TIMEOUT_MS` (default 60000): connections and HTTP/2 sessions without traffic are closed. */
    readonly idleTimeoutMs: number;
    /** `ODGM_HEADERS_TIMEOUT_MS` (default 10000): an HTTP/1.1 request's headers must arrive within this. */
    readonly headersTimeoutMs: number;
  };
  /** Events V2: `ODGM_EVENT_*`, `ODGM_MAX_BATCH_TRIGGER_FANOUT`, `ODGM_MAX_TRIGGER_DEPTH`, `ODGM_TRIGGER_TIMEOUT_MS`. */
  readonly events: EventV2Config;
  /** How data triggers are delivered: `ODGM_TRIGGER_DELIVERY`, `ODGM_TRIGGER_RETRY_*`. */
  readonly triggerDelivery: {
    /**
     * `ODGM_TRIGGER_DELIVERY` (default `at-most-once`, spec §5): `at-least-once` delivers
     * the data triggers of basic collections from the durable change log, with a saved
     * cursor per target and retries (needs `ODGM_CHANGEFEED` and the event pipeline).
     */
    readonly mode: "at-most-once" | "at-least-once";
    /** `ODGM_TRIGGER_RETRY_ATTEMPTS` (default 5): attempts per delivery, then dead-lettered. */
    readonly maxAttempts: number;
    /** `ODGM_TRIGGER_RETRY_BASE_MS` (default 200): first retry delay; doubles per retry. */
    readonly baseDelayMs: number;
    /** `ODGM_TRIGGER_RETRY_MAX_MS` (default 10000): ceiling of the retry delay. */
    readonly maxDelayMs: number;
  };
  /** The change feed: `ODGM_CHANGEFEED*`. */
  readonly changeFeed: {
    /** `ODGM_CHANGEFEED` (default true): keep a durable change log per shard and serve Watch. */
    readonly enabled: boolean;
    /** `ODGM_CHANGEFEED_VALUES` (default false): records carry new entry values. */
    readonly values: boolean;
    /** `ODGM_CHANGEFEED_RETENTION_RECORDS` (default 100000): newest records kept per shard. */
    readonly retentionRecords: number;
    /** `ODGM_CHANGEFEED_RETENTION_MS` (default 86400000, a day): records older than this go. */
    readonly retentionMs: number;
    /** `ODGM_CHANGEFEED_COMPACT_INTERVAL_MS` (default 10000): how often compaction runs. */
    readonly compactIntervalMs: number;
    /** `ODGM_CHANGEFEED_PROGRESS_MS` (default 5000): progress message interval of idle watchers. */
    readonly progressMs: number;
  };
  /**
   * `ODGM_GRPC_FAST_PATH` (default true): serve plain binary gRPC unary calls of DataService
   * and OprcFunction without connect's per-call pipeline; false sends every call through
   * connect-node (same answers, slower).
   */
  readonly grpcFastPath: boolean;
  /**
   * `ODGM_ZENOH_ENDPOINT` (default unset = Zenoh off): the locator of a Zenoh router's
   * remote-api plugin, `ws/<host>:<port>` or `ws://<host>:<port>` (`wss` for TLS).
   * `ODGM_ZENOH_RETRY_MS` (default 1000): the pause between connection attempts and between
   * health checks of an open session.
   */
  readonly zenoh: { readonly endpoint: string; readonly retryMs: number } | undefined;
  /** `ODGM_LOG_LEVEL` (default `info`). */
  readonly logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  /** The raw environment, for packages that parse their own variables (events). */
  readonly env: Env;
}

/** Where this node sits in its cluster and how its Raft groups run. */
export interface ClusterConfig {
  /** `ODGM_NODE_ID` (default 1): this node's id, 1 … 2^53-1. */
  readonly nodeId: number;
  /**
   * `ODGM_MEMBERS` (default: this node alone at its own address): the bootstrap members
   * as `id=url` pairs, e.g. `1=http://127.0.0.1:7001,2=http://127.0.0.1:7002`. It must
   * name this node. The metadata group (collection registry) starts with these voters.
   */
  readonly members: ReadonlyMap<number, string>;
  /**
   * `ODGM_CLUSTER_STATE` (default `new`): `new` bootstraps the groups this node is placed
   * on from `ODGM_MEMBERS`; `existing` bootstraps nothing and waits to be added to a
   * running cluster (admin API), like etcd's `initial-cluster-state`.
   */
  readonly state: "new" | "existing";
  /**
   * `ODGM_READ_CONSISTENCY` (default `linearizable`): reads of raft shards confirm
   * leadership with a quorum round (ReadIndex); `lease` serves the leader's reads under
   * its lease (no round; relies on bounded clock drift); `follower` serves any replica's
   * applied state (may be stale). A request may ask for its own with the
   * `odgm-read-consistency` header.
   */
  readonly readConsistency: ReadConsistency;
  /** `ODGM_RAFT_TICK_MS` (default 100): one Raft tick. */
  readonly tickMs: number;
  /** `ODGM_RAFT_ELECTION_TICKS` (default 10): ticks without a leader before an election. */
  readonly electionTicks: number;
  /** `ODGM_RAFT_COMPACT_ENTRIES` (default 100000): applied entries kept before a snapshot compacts the log. */
  readonly compactEntries: number;
  /** `ODGM_RAFT_COMPACT_BYTES` (default 64 MiB): applied payload bytes kept before a snapshot compacts the log. */
  readonly compactBytes: number;
  /**
   * `ODGM_RAFT_CATCHUP_ENTRIES` (default 5000): entries a compaction keeps behind the applied
   * index for followers a little behind (within half the two thresholds above).
   */
  readonly catchUpEntries: number;
  /**
   * `ODGM_RAFT_BALANCE_LEADERS` (default on): every 100 ticks, a node that leads at least two
   * more data groups than a caught-up voter of one of them hands leadership over to it.
   */
  readonly balanceLeaders: boolean;
  /**
   * `ODGM_RAFT_QUIESCE` (default on): a group with nothing to do for an election timeout
   * stops its heartbeats and election clocks until something happens (*Cluster*).
   */
  readonly quiesce: boolean;
  /**
   * `ODGM_RAFT_LOG_INLINE_MAX_MS` (default 10): a node that leads no group with writes in
   * flight writes its Raft log on the event loop while the log's synced writes took at most
   * this long lately (a moving average); 0 leaves every log write to the write worker.
   */
  readonly logInlineMaxMs: number;
}

/** How reads of a raft shard are confirmed. */
export type ReadConsistency = "linearizable" | "lease" | "follower";

/**
 * What a write that would create an object addressed by a numeric `object_id` does:
 * `allow` it; `warn` (allow, count in `odgm_numeric_id_creates_total`, log at most once a
 * minute, and send an `odgm-warning` response header); `refuse` it with FAILED_PRECONDITION
 * (existing numeric objects stay readable and writable).
 */
export type NumericIdCreates = "allow" | "warn" | "refuse";

/** A configuration problem naming `variable`: an {@link OdgmError} with code `invalid_config`. */
function configError(variable: string, message: string): OdgmError {
  return new OdgmError("invalid_config", message, { variable });
}

const TRUE = new Set(["1", "true", "yes", "on"]);
const FALSE = new Set(["0", "false", "no", "off"]);

function parseAuth(
  env: Env,
  cluster: ClusterConfig,
  caFile: string | undefined,
): OdgmConfig["auth"] {
  const tokensFile = env.ODGM_AUTH_TOKENS_FILE?.trim() || undefined;
  const tokens = env.ODGM_AUTH_TOKENS?.trim() || undefined;
  const metrics = (env.ODGM_AUTH_METRICS?.trim() || "read").toLowerCase();
  if (metrics !== "open" && metrics !== "read") {
    throw configError("ODGM_AUTH_METRICS", `expected open or read, got ${JSON.stringify(metrics)}`);
  }
  if (tokensFile === undefined && tokens === undefined) return undefined;
  // Members forward writes and reads to each other; with tokens on, they must know each
  // other by certificate.
  if (cluster.members.size > 1 && caFile === undefined) {
    throw configError(
      tokensFile === undefined ? "ODGM_AUTH_TOKENS" : "ODGM_AUTH_TOKENS_FILE",
      "a cluster with authentication needs mutual TLS between its members: set ODGM_TLS_CERT, ODGM_TLS_KEY and ODGM_TLS_CA",
    );
  }
  return {
    ...(tokensFile === undefined ? {} : { tokensFile }),
    ...(tokens === undefined ? {} : { tokens }),
    metrics,
  };
}

function parseZenoh(env: Env): OdgmConfig["zenoh"] {
  const endpoint = env.ODGM_ZENOH_ENDPOINT?.trim() || undefined;
  if (endpoint === undefined) return undefined;
  if (!/^wss?(:\/\/|\/)[^/\s]+:\d+\/?$/.test(endpoint)) {
    throw configError(
      "ODGM_ZENOH_ENDPOINT",
      `expected ws/<host>:<port> or ws://<host>:<port> (wss for TLS), got ${JSON.stringify(endpoint)}`,
    );
  }
  return { endpoint, retryMs: int(env, "ODGM_ZENOH_RETRY_MS", 1000, 50, 600_000) };
}

function bool(env: Env, name: string, fallback: boolean, alias?: string): boolean {
  const used = env[name] !== undefined || alias === undefined ? name : alias;
  const raw = env[used]?.trim().toLowerCase();
  if (raw === undefined || raw === "") return fallback;
  if (TRUE.has(raw)) return true;
  if (FALSE.has(raw)) return false;
  throw configError(used, `expected true or false, got ${JSON.stringify(env[used])}`);
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === "") return fallback;
  const parsed = z.coerce
    .number()
    .int()
    .min(min)
    .max(max)
    .safeParse(/^-?\d+$/.test(raw) ? raw : NaN);
  if (!parsed.success) {
    throw configError(
      name,
      `expected an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`,
    );
  }
  return parsed.data;
}

function nodeIdOf(name: string, raw: string): number {
  if (!/^\d{1,16}$/.test(raw) || Number(raw) === 0 || !Number.isSafeInteger(Number(raw))) {
    throw configError(name, `expected a node id from 1 to 2^53-1, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

function parseCluster(env: Env, port: number, scheme: "http:" | "https:"): ClusterConfig {
  const nodeId = env.ODGM_NODE_ID?.trim() ? nodeIdOf("ODGM_NODE_ID", env.ODGM_NODE_ID.trim()) : 1;
  const members = new Map<number, string>();
  const raw = env.ODGM_MEMBERS?.trim();
  if (raw) {
    for (const item of raw.split(",")) {
      const m = /^\s*([^=\s]+)\s*=\s*(\S+)\s*$/.exec(item);
      if (m === null) {
        throw configError(
          "ODGM_MEMBERS",
          `expected id=url pairs (1=http://10.0.0.1:8080,…), got ${JSON.stringify(item.trim())}`,
        );
      }
      const id = nodeIdOf("ODGM_MEMBERS", m[1] as string);
      let url: URL;
      try {
        url = new URL(m[2] as string);
      } catch {
        throw configError("ODGM_MEMBERS", `member ${id}: ${JSON.stringify(m[2])} is not a URL`);
      }
      if (url.protocol !== scheme) {
        throw configError(
          "ODGM_MEMBERS",
          scheme === "https:"
            ? `member ${id}: expected an https:// URL (this node serves TLS, so do its peers)`
            : `member ${id}: expected an http:// URL (set ODGM_TLS_CERT, ODGM_TLS_KEY and ODGM_TLS_CA for https:// members)`,
        );
      }
      if (members.has(id)) throw configError("ODGM_MEMBERS", `member ${id} is listed twice`);
      members.set(id, url.origin);
    }
    if (!members.has(nodeId)) {
      throw configError("ODGM_MEMBERS", `does not list this node (ODGM_NODE_ID=${nodeId})`);
    }
  } else {
    members.set(nodeId, `${scheme}//127.0.0.1:${port}`);
  }
  const state = (env.ODGM_CLUSTER_STATE?.trim() || "new").toLowerCase();
  if (state !== "new" && state !== "existing") {
    throw configError(
      "ODGM_CLUSTER_STATE",
      `expected new or existing, got ${JSON.stringify(state)}`,
    );
  }
  const rc = (env.ODGM_READ_CONSISTENCY?.trim() || "linearizable").toLowerCase();
  if (rc !== "linearizable" && rc !== "lease" && rc !== "follower") {
    throw configError(
      "ODGM_READ_CONSISTENCY",
      `expected linearizable, lease or follower, got ${JSON.stringify(rc)}`,
    );
  }
  return {
    nodeId,
    members,
    state,
    readConsistency: rc,
    tickMs: int(env, "ODGM_RAFT_TICK_MS", 100, 1, 60_000),
    electionTicks: int(env, "ODGM_RAFT_ELECTION_TICKS", 10, 3, 1000),
    compactEntries: int(env, "ODGM_RAFT_COMPACT_ENTRIES", 100_000, 10, 100_000_000),
    compactBytes: int(env, "ODGM_RAFT_COMPACT_BYTES", 64 * 1024 * 1024, 64 * 1024, 2 ** 40),
    catchUpEntries: int(env, "ODGM_RAFT_CATCHUP_ENTRIES", 5_000, 0, 100_000_000),
    balanceLeaders: bool(env, "ODGM_RAFT_BALANCE_LEADERS", true),
    quiesce: bool(env, "ODGM_RAFT_QUIESCE", true),
    logInlineMaxMs: int(env, "ODGM_RAFT_LOG_INLINE_MAX_MS", 10, 0, 60_000),
  };
}

function parseEvents(env: Env): EventV2Config {
  try {
    return eventConfigFromEnv({ ...env });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const variable = /ODGM_[A-Z0-9_]+/.exec(message)?.[0] ?? "ODGM_EVENT_*";
    throw configError(variable, message.replace(/^\[[a-z_]+\]\s*/, ""));
  }
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

function parseCollections(raw: string | undefined): CreateCollectionRequest[] {
  if (raw === undefined || raw.trim() === "") return [];
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    throw configError("ODGM_COLLECTION", `not valid JSON (${(err as Error).message})`);
  }
  if (!Array.isArray(json)) {
    throw configError("ODGM_COLLECTION", "expected a JSON array of CreateCollectionRequest");
  }
  const names = new Set<string>();
  return json.map((item, i) => {
    let req: CreateCollectionRequest;
    try {
      req = fromJson(CreateCollectionRequestSchema, item as JsonValue, {
        ignoreUnknownFields: false,
      });
    } catch (err) {
      throw configError("ODGM_COLLECTION", `item ${i}: ${(err as Error).message}`);
    }
    if (req.name === "") throw configError("ODGM_COLLECTION", `item ${i}: name is empty`);
    if (names.has(req.name)) {
      throw configError("ODGM_COLLECTION", `item ${i}: duplicate collection ${req.name}`);
    }
    names.add(req.name);
    if (req.partitionCount < 0 || req.partitionCount > 65_536) {
      throw configError("ODGM_COLLECTION", `item ${i}: partition_count must be 1..65536`);
    }
    return req;
  });
}

function parseTriggerDelivery(env: Env): OdgmConfig["triggerDelivery"] {
  const mode = (env.ODGM_TRIGGER_DELIVERY?.trim() || "at-most-once").toLowerCase();
  if (mode !== "at-most-once" && mode !== "at-least-once") {
    throw configError(
      "ODGM_TRIGGER_DELIVERY",
      `expected at-most-once or at-least-once, got ${JSON.stringify(mode)}`,
    );
  }
  if (mode === "at-least-once") {
    if (!bool(env, "ODGM_CHANGEFEED", true)) {
      throw configError(
        "ODGM_TRIGGER_DELIVERY",
        "at-least-once delivery reads the change log: it needs ODGM_CHANGEFEED=true",
      );
    }
    if (!bool(env, "ODGM_EVENT_PIPELINE_V2", true)) {
      throw configError(
        "ODGM_TRIGGER_DELIVERY",
        "at-least-once delivery needs the event pipeline (ODGM_EVENT_PIPELINE_V2=true)",
      );
    }
  }
  return {
    mode,
    maxAttempts: int(env, "ODGM_TRIGGER_RETRY_ATTEMPTS", 5, 1, 1_000),
    baseDelayMs: int(env, "ODGM_TRIGGER_RETRY_BASE_MS", 200, 1, 3_600_000),
    maxDelayMs: int(env, "ODGM_TRIGGER_RETRY_MAX_MS", 10_000, 1, 86_400_000),
  };
}

function numericIdCreates(raw: string | undefined): NumericIdCreates {
  const v = (raw?.trim() || "allow").toLowerCase();
  if (v === "allow" || v === "warn" || v === "refuse") return v;
  throw configError(
    "ODGM_NUMERIC_ID_CREATES",
    `expected allow, warn or refuse, got ${JSON.stringify(v)}`,
  );
}

/**
 * Reads the service configuration from `ODGM_*` variables, with the defaults of the
 * specification. Throws an {@link OdgmError} (`invalid_config`) naming the variable on any invalid value.
 *
 * @example
 * const config = loadConfig(process.env);
 */
export function loadConfig(env: Env): OdgmConfig {
  const storage = (env.ODGM_STORAGE?.trim() || "rocksdb").toLowerCase();
  if (storage !== "rocksdb" && storage !== "memory") {
    throw configError("ODGM_STORAGE", `expected rocksdb or memory, got ${JSON.stringify(storage)}`);
  }
  const logLevel = (env.ODGM_LOG_LEVEL?.trim() || "info").toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw configError("ODGM_LOG_LEVEL", `expected one of ${LOG_LEVELS.join(", ")}`);
  }
  const host = env.ODGM_HTTP_HOST?.trim() || "0.0.0.0";
  const dataDir = env.ODGM_DATA_DIR?.trim() || "./data";
  const port = int(env, "ODGM_HTTP_PORT", 8080, 0, 65_535);
  const h2cEngine = (env.ODGM_H2C_ENGINE?.trim() || "lean").toLowerCase();
  if (h2cEngine !== "lean" && h2cEngine !== "node") {
    throw configError("ODGM_H2C_ENGINE", `expected lean or node, got ${JSON.stringify(h2cEngine)}`);
  }
  const certFile = env.ODGM_TLS_CERT?.trim() || undefined;
  const keyFile = env.ODGM_TLS_KEY?.trim() || undefined;
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw configError(
      certFile === undefined ? "ODGM_TLS_CERT" : "ODGM_TLS_KEY",
      "ODGM_TLS_CERT and ODGM_TLS_KEY go together: set both (PEM files) or neither",
    );
  }
  const caFile = env.ODGM_TLS_CA?.trim() || undefined;
  if (!bool(env, "ODGM_ENABLE_GRANULAR_STORAGE", true) && !bool(env, "ODGM_BLOB_FALLBACK", true)) {
    throw configError(
      "ODGM_BLOB_FALLBACK",
      "ODGM_ENABLE_GRANULAR_STORAGE=false writes legacy blobs (dual-write, seed 003 phases A-C) and ODGM_BLOB_FALLBACK=false is for once none remain (phase F): set one or the other",
    );
  }
  if (caFile !== undefined && certFile === undefined) {
    throw configError("ODGM_TLS_CA", "ODGM_TLS_CA needs ODGM_TLS_CERT and ODGM_TLS_KEY as well");
  }
  const cluster = parseCluster(env, port, certFile === undefined ? "http:" : "https:");
  if (certFile !== undefined && caFile === undefined && cluster.members.size > 1) {
    throw configError(
      "ODGM_TLS_CA",
      "a cluster served over TLS needs ODGM_TLS_CA, the CA that signs every member's certificate: nodes authenticate each other with it",
    );
  }
  const auth = parseAuth(env, cluster, caFile);
  return {
    http: { host, port, h2cEngine },
    auth,
    tls:
      certFile === undefined || keyFile === undefined
        ? undefined
        : { certFile, keyFile, ...(caFile === undefined ? {} : { caFile }) },
    dataDir,
    storage,
    syncWrites: bool(env, "ODGM_SYNC_WRITES", true),
    cluster,
    collections: parseCollections(env.ODGM_COLLECTION),
    features: {
      stringIds: bool(env, "ODGM_ENABLE_STRING_IDS", true),
      stringKeys: bool(env, "ODGM_ENABLE_STRING_KEYS", true, "ODGM_ENABLE_STRING_ENTRY_KEYS"),
      stringIdsWriteOnly: bool(env, "ODGM_STRING_IDS_WRITE_ONLY", false),
      stringIdWrites: bool(env, "ODGM_STRING_ID_WRITES", true),
      numericIdCreates: numericIdCreates(env.ODGM_NUMERIC_ID_CREATES),
      granularStorage: bool(env, "ODGM_ENABLE_GRANULAR_STORAGE", true),
      blobFallback: bool(env, "ODGM_BLOB_FALLBACK", true),
      allowRemainingBlobs: bool(env, "ODGM_ALLOW_REMAINING_BLOBS", false),
      maxStringIdLen: int(env, "ODGM_MAX_STRING_ID_LEN", 160, 1, 4096),
      unicodeIds: bool(env, "ODGM_STRING_ID_UNICODE", false),
    },
    limits: {
      prefetchLimit: int(env, "ODGM_GRANULAR_PREFETCH_LIMIT", 256, 1, 65_536),
      maxGetEntries: int(env, "ODGM_MAX_GET_ENTRIES", 65_536, 1, 10_000_000),
      maxMessageBytes: int(
        env,
        "ODGM_MAX_MESSAGE_BYTES",
        4 * 1024 * 1024,
        1024,
        1024 * 1024 * 1024,
      ),
      invokeTimeoutMs: int(env, "ODGM_INVOKE_TIMEOUT_MS", 30_000, 1, 3_600_000),
      shutdownTimeoutMs: int(env, "ODGM_SHUTDOWN_TIMEOUT_MS", 10_000, 0, 600_000),
      maxPartitions: int(env, "ODGM_MAX_PARTITIONS", 4096, 1, 1_000_000),
      maxConnections: int(env, "ODGM_MAX_CONNECTIONS", 0, 0, 10_000_000),
      idleTimeoutMs: int(env, "ODGM_IDLE_TIMEOUT_MS", 60_000, 100, 86_400_000),
      headersTimeoutMs: int(env, "ODGM_HEADERS_TIMEOUT_MS", 10_000, 100, 600_000),
    },
    events: parseEvents(env),
    triggerDelivery: parseTriggerDelivery(env),
    changeFeed: {
      enabled: bool(env, "ODGM_CHANGEFEED", true),
      values: bool(env, "ODGM_CHANGEFEED_VALUES", false),
      retentionRecords: int(env, "ODGM_CHANGEFEED_RETENTION_RECORDS", 100_000, 1, 1e12),
      retentionMs: int(env, "ODGM_CHANGEFEED_RETENTION_MS", 86_400_000, 1, 1e13),
      compactIntervalMs: int(env, "ODGM_CHANGEFEED_COMPACT_INTERVAL_MS", 10_000, 10, 86_400_000),
      progressMs: int(env, "ODGM_CHANGEFEED_PROGRESS_MS", 5_000, 10, 3_600_000),
    },
    grpcFastPath: bool(env, "ODGM_GRPC_FAST_PATH", true),
    zenoh: parseZenoh(env),
    logLevel: logLevel as OdgmConfig["logLevel"],
    env,
  };
}
