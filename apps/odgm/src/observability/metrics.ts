import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** The service's Prometheus metrics (names from spec §9 and seed 003 §12). */
export interface OdgmMetrics {
  readonly registry: Registry;
  readonly entryReads: Counter<"collection">;
  readonly entryWrites: Counter<"collection">;
  readonly entryDeletes: Counter<"collection">;
  readonly blobFallbackReads: Counter<"collection">;
  readonly entryGetLatencyMs: Histogram<"collection">;
  readonly batchSetSize: Histogram<"collection">;
  readonly objectsConverted: Counter<"collection">;
  readonly objectsPendingConversion: Gauge<"collection">;
  readonly stringIdNormalizeErrors: Counter;
  readonly stringIdLength: Histogram;
  readonly numericIdCreates: Counter;
  readonly changefeedWatchers: Gauge;
  readonly changefeedCompacted: Counter;
  /** Objects created under a string id (seed 000 §8 `objects.string.created`). */
  readonly objectsStringCreated: Counter<"collection">;
  /** String-keyed entries written (seed 000 §8 `entries.string.set`). */
  readonly entriesStringSet: Counter<"collection">;
  /** Time to normalize a request's string object id, ns (seed 000 §8 `id.normalize.ns`). */
  readonly idNormalizeNs: Histogram;
  readonly rpcRequests: Counter<"method" | "code">;
  readonly rpcDurationMs: Histogram<"method">;
  readonly eventsEmitted: Counter<"collection" | "action">;
  readonly eventTruncatedBatches: Counter<"collection">;
  readonly eventQueueDrops: Counter<"collection">;
  readonly eventQueueLength: Gauge<"collection" | "partition">;
  /** 1 while storage accepts writes; 0 once a write failed and the node needs a restart. */
  readonly storageWritable: Gauge;
  readonly triggerFailures: Counter<"collection">;
  readonly triggerDepthExceeded: Counter<"collection">;
  readonly triggersFired: Counter<"collection" | "kind">;
  readonly triggerInflight: Gauge<"target">;
  readonly triggerDeliveries: Counter<"target" | "outcome">;
  readonly triggerRetries: Counter<"target">;
  readonly writeWorkerHeap: Gauge<"kind">;
  readonly triggerDeadLetters: Counter<"target">;
  readonly invocations: Counter<"kind" | "status">;
  /** Raft: current term of each local group (sampled at scrape). */
  readonly raftTerm: Gauge<"group">;
  /** Raft: 1 while this node leads the group. */
  readonly raftLeader: Gauge<"group">;
  /** Raft: leader changes seen by this node. */
  readonly raftLeaderChanges: Counter<"group">;
  /** Raft: proposals by outcome (`ok` led here, `forwarded`, `error`). */
  readonly raftProposals: Counter<"group" | "outcome">;
  /** Raft: time from proposal to applied result, ms. */
  readonly raftCommitLatencyMs: Histogram<"group">;
  /** Raft: committed entries not applied yet on this node. */
  readonly raftApplyLag: Gauge<"group">;
  /** 1 while a local group is quiescent (idle, its clock stopped). */
  readonly raftQuiescent: Gauge<"group">;
  /** Raft: snapshots sent (chunks) and installed by this node. */
  readonly raftSnapshots: Gauge<"group" | "direction">;
  /** Raft messages to each peer since start, sent or dropped. */
  readonly raftPeerMessages: Gauge<"peer" | "outcome">;
  /** Batches written on the Raft stream to each peer since start. */
  readonly raftPeerBatches: Gauge<"peer">;
  /** Synced Raft log write batches since start, by where they were written. */
  readonly raftLogBatches: Gauge<"thread">;
  /** How long a synced Raft log write batch took lately (a moving average), seconds. */
  readonly raftLogSyncSeconds: Gauge;
  /** Requests this node passed to another node (proposals to a leader, reads through ReadIndex). */
  readonly raftForwarded: Counter<"kind">;
  /** Raft batches refused because their sender is not the incarnation the cluster records. */
  readonly raftRefusedBatches: Counter<"peer">;
  /** Zenoh: 1 while the session to the router is open and declared, 0 while down (absent when Zenoh is off). */
  readonly zenohUp: Gauge;
  /** Zenoh: requests served on the key space by kind (`query`, `put`, `delete`) and outcome (`ok` or a status code). */
  readonly zenohRequests: Counter<"kind" | "outcome">;
  /** Zenoh: change events published. */
  readonly zenohEventsPublished: Counter<"collection">;
  /** Zenoh: sessions opened (the first and every reconnect). */
  readonly zenohSessions: Counter;
  /** Requests refused by authentication (`unauthenticated`) or authorization (`permission_denied`), by surface (`rpc`, `rest`). */
  readonly authFailures: Counter<"surface" | "reason">;
}

/**
 * Creates the metrics in a registry of their own (so several services can share a
 * process, as tests do), with Node's default process metrics.
 */
export function createOdgmMetrics(): OdgmMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const c = <L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> =>
    new Counter({ name, help, labelNames, registers });
  const h = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    buckets: number[],
  ): Histogram<L> => new Histogram({ name, help, labelNames, buckets, registers });
  const g = <L extends string>(name: string, help: string, labelNames: readonly L[]): Gauge<L> =>
    new Gauge({ name, help, labelNames, registers });
  const latency = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 1000];
  return {
    registry,
    entryReads: c("odgm_entry_reads_total", "Entry reads (GetValue, ListValues items).", [
      "collection",
    ]),
    entryWrites: c("odgm_entry_writes_total", "Entries written.", ["collection"]),
    entryDeletes: c("odgm_entry_deletes_total", "Entries deleted.", ["collection"]),
    blobFallbackReads: c(
      "odgm_blob_fallback_reads_total",
      "Reads served from a legacy whole-object blob.",
      ["collection"],
    ),
    entryGetLatencyMs: h(
      "odgm_entry_get_latency_ms",
      "GetValue latency in milliseconds.",
      ["collection"],
      latency,
    ),
    batchSetSize: h(
      "odgm_batch_set_size",
      "Entries set or deleted per BatchSetValues.",
      ["collection"],
      [1, 2, 5, 10, 20, 50, 100, 250, 500, 1000],
    ),
    objectsConverted: c(
      "odgm_objects_converted_total",
      "Legacy blobs converted to per-entry records.",
      ["collection"],
    ),
    objectsPendingConversion: g(
      "odgm_objects_pending_conversion_total",
      "Legacy blobs not yet converted (sampled at start and by backfill).",
      ["collection"],
    ),
    stringIdNormalizeErrors: c(
      "odgm_string_id_normalize_errors_total",
      "Requests rejected because an id or key failed normalization.",
      [],
    ),
    stringIdLength: h(
      "odgm_string_id_length",
      "Byte length of string object ids in requests.",
      [],
      [4, 8, 16, 32, 64, 128, 160, 256],
    ),
    changefeedWatchers: g("odgm_changefeed_watchers", "Open Watch streams (gRPC and SSE).", []),
    changefeedCompacted: c(
      "odgm_changefeed_compacted_total",
      "Change-log records removed by retention.",
      ["collection"],
    ),
    numericIdCreates: c(
      "odgm_numeric_id_creates_total",
      "Writes that created (outcome=created) or would have created (outcome=refused) an object addressed by a numeric object_id, counted while ODGM_NUMERIC_ID_CREATES is warn or refuse.",
      ["collection", "outcome"],
    ),
    objectsStringCreated: c(
      "odgm_objects_string_created_total",
      "Objects created under a string id (a write to an object that did not exist).",
      ["collection"],
    ),
    entriesStringSet: c(
      "odgm_entries_string_set_total",
      "Entries with string keys written (created or updated).",
      ["collection"],
    ),
    idNormalizeNs: h(
      "odgm_id_normalize_ns",
      "Time to normalize a request's string object id, in nanoseconds (refused ids included).",
      [],
      [250, 500, 1000, 2500, 5000, 10_000, 25_000, 100_000, 1_000_000],
    ),
    rpcRequests: c("odgm_rpc_requests_total", "RPCs handled, by method and status code.", [
      "method",
      "code",
    ]),
    rpcDurationMs: h(
      "odgm_rpc_duration_ms",
      "RPC handling time in milliseconds.",
      ["method"],
      latency,
    ),
    eventsEmitted: c("odgm_events_emitted_total", "Per-entry change events emitted.", [
      "collection",
      "action",
    ]),
    eventTruncatedBatches: c(
      "odgm_events_truncated_batches_total",
      "Mutations whose changed keys exceeded the trigger fan-out cap.",
      ["collection"],
    ),
    eventQueueDrops: c(
      "odgm_event_queue_drops_total",
      "Events dropped because a shard's event queue was full.",
      ["collection"],
    ),
    eventQueueLength: g("odgm_event_queue_length", "Events waiting in a shard's queue.", [
      "collection",
      "partition",
    ]),
    zenohUp: g(
      "odgm_zenoh_up",
      "1 while the Zenoh session to the router is open and declared, 0 while it is down (reconnecting).",
      [],
    ),
    zenohRequests: c("odgm_zenoh_requests_total", "Requests served on the Zenoh key space.", [
      "kind",
      "outcome",
    ]),
    zenohEventsPublished: c(
      "odgm_zenoh_events_published_total",
      "Change events published on Zenoh.",
      ["collection"],
    ),
    zenohSessions: c(
      "odgm_zenoh_sessions_total",
      "Zenoh sessions opened (first and reconnects).",
      [],
    ),
    authFailures: c(
      "odgm_auth_failures_total",
      "Requests refused: no or unknown bearer token (unauthenticated) or missing rights (permission_denied).",
      ["surface", "reason"],
    ),
    storageWritable: g(
      "odgm_storage_writable",
      "1 while storage accepts writes; 0 after a write failed (a full disk, an I/O error): the node needs a restart.",
      [],
    ),
    triggerFailures: c("odgm_trigger_failures_total", "Trigger invocations that failed.", [
      "collection",
    ]),
    triggerDepthExceeded: c(
      "odgm_trigger_depth_exceeded_total",
      "Triggers not fired because the trigger depth limit was reached.",
      ["collection"],
    ),
    triggersFired: c("odgm_triggers_fired_total", "Trigger invocations dispatched.", [
      "collection",
      "kind",
    ]),
    triggerInflight: g(
      "odgm_trigger_inflight",
      "Trigger dispatches in flight, per target (<collection>/<function>).",
      ["target"],
    ),
    triggerDeliveries: c(
      "odgm_trigger_deliveries_total",
      "Trigger dispatches per target (<collection>/<function>) by outcome: ok, error, timeout, or dropped (the target's lane was full).",
      ["target", "outcome"],
    ),
    writeWorkerHeap: g(
      "odgm_rocksdb_write_worker_heap_bytes",
      "The RocksDB write worker's V8 heap (its own isolate, outside nodejs_heap_*): kind used (live objects) or external (buffers it holds).",
      ["kind"],
    ),
    triggerRetries: c(
      "odgm_trigger_retries_total",
      "Trigger deliveries tried again after a failed attempt, per target (at-least-once delivery).",
      ["target"],
    ),
    triggerDeadLetters: c(
      "odgm_trigger_dead_letters_total",
      "Trigger deliveries given up after their last attempt, per target (at-least-once delivery).",
      ["target"],
    ),
    invocations: c("odgm_invocations_total", "Function invocations, by kind and status.", [
      "kind",
      "status",
    ]),
    raftTerm: g("odgm_raft_term", "Current Raft term of a local group.", ["group"]),
    raftLeader: g("odgm_raft_is_leader", "1 while this node leads the group.", ["group"]),
    raftLeaderChanges: c("odgm_raft_leader_changes_total", "Leader changes seen by this node.", [
      "group",
    ]),
    raftProposals: c("odgm_raft_proposals_total", "Proposals by outcome.", ["group", "outcome"]),
    raftCommitLatencyMs: h(
      "odgm_raft_commit_latency_ms",
      "Time from proposal to applied result in milliseconds.",
      ["group"],
      latency,
    ),
    raftApplyLag: g("odgm_raft_apply_lag", "Committed entries not yet applied on this node.", [
      "group",
    ]),
    raftQuiescent: g(
      "odgm_raft_quiescent",
      "1 while a local group is quiescent: idle, its heartbeats and election clock stopped.",
      ["group"],
    ),
    raftSnapshots: g(
      "odgm_raft_snapshots",
      "Snapshot chunks sent, snapshots installed, and snapshots built for followers behind the compacted log.",
      ["group", "direction"],
    ),
    raftPeerMessages: g(
      "odgm_raft_peer_messages",
      "Raft messages to each peer since start: sent, or dropped (queue full, peer unreachable; Raft resends).",
      ["peer", "outcome"],
    ),
    raftLogBatches: g(
      "odgm_raft_log_batches",
      "Synced Raft log write batches since start (the saves of every local group share them), by thread: the write worker, or the event loop while no group led here has a proposal in flight.",
      ["thread"],
    ),
    raftLogSyncSeconds: g(
      "odgm_raft_log_sync_seconds",
      "How long a synced Raft log write batch took lately, write and fsync, on the thread that wrote it (a moving average; above ODGM_RAFT_LOG_INLINE_MAX_MS, default 10 ms, the event loop leaves them to the worker).",
      [],
    ),
    raftPeerBatches: g(
      "odgm_raft_peer_batches",
      "Batches written on the Raft stream to each peer since start (each carries the messages of every group bound for it).",
      ["peer"],
    ),
    raftForwarded: c(
      "odgm_raft_forwarded_total",
      "Requests passed to another node: proposals to the leader, reads confirmed by it.",
      ["kind"],
    ),
    raftRefusedBatches: c(
      "odgm_raft_refused_batches_total",
      "Raft batches refused because the sending node is not the incarnation the cluster records for it (its data directory was wiped or replaced).",
      ["peer"],
    ),
  };
}
