// This node's part of the cluster: the metadata group (collection registry, addresses),
// the Raft groups of the raft-collection partitions placed here, their log storage, the
// clock that ticks them, the transport between nodes, proposals (local or forwarded to
// the leader), read barriers and membership changes.
import { randomInt } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import {
  type Client,
  Code,
  ConnectError,
  createClient,
  type ServiceImpl,
} from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { EntryStore, KvShard, KvWriteOp, MutationResult, StoreOp } from "@oprc/entry-store";
import { isStoreError } from "@oprc/entry-store";
import {
  type ChangeMembershipRequest,
  ChangeMembershipRequest_Change,
  ChangeMembershipResponseSchema,
  type CreateCollectionRequest,
  createRemoteDataPlane,
  DataPlaneError,
  DataService,
  fromRemoteError,
  isDataPlaneError,
  isDataPlaneErrorCode,
  type PartitionRef,
  type ProposeBatchRequest,
  ProposeBatchResponseSchema,
  type ProposeOutcome,
  ProposeOutcomeSchema,
  type ProposeRefusal,
  type ProposeRequest,
  ProposeRequestSchema,
  RaftConfStateSchema,
  RaftService,
  READ_CONSISTENCY_HEADER,
  type RemoteDataPlane,
  toConnectError,
} from "@oprc/grpc-api";
import {
  type ConfState,
  createMemoryLogStore,
  decodeOdgmOp,
  type Entry,
  encodeOdgmOp,
  isRaftError,
  type LogStore,
  type OdgmOp,
} from "@oprc/raft-log";
import type { Logger } from "pino";
import type { CollectionRegistry } from "../collections/collection-registry.js";
import { normalizeCollectionSpec } from "../collections/collection-registry.js";
import type { ClusterConfig, ReadConsistency } from "../config.js";
import { isOdgmError, OdgmError } from "../odgm-error.js";
import type { ShardReplica } from "../shards/shard-manager.js";
import { AddressedAs } from "./addressed-as.js";
import { isConnectionFailure, isConnectionRefused } from "./connection-failure.js";
import type { PeerTls } from "./h2-streaming-call.js";
import { guardHttp2ClientSessions } from "./http2-goaway-guard.js";
import { type GroupLeadership, planHandoffs } from "./leader-balance.js";
import {
  createCollectionCommand,
  encodeMetaCommand,
  type MetaResult,
  openMetaStateMachine,
  type ReplicaSet,
  refusedForIncarnation,
} from "./meta-state-machine.js";
import { FORWARDED_HEADER } from "./partition-router.js";
import { groupIdOf, parseGroupId, placeCollection, replicasOf } from "./placement.js";
import {
  mostCaughtUpVoter,
  notLeader,
  type ProposalResult,
  RaftGroup,
  type RaftGroupStatus,
  type StateMachine,
} from "./raft-group.js";
import {
  createRaftServiceImpl,
  createRaftTransport,
  type PeerTransportStats,
} from "./raft-transport.js";
import { createRequestBatcher, type RequestBatcher } from "./request-batcher.js";
import { atEndOfTurn } from "./turn.js";

/** The metadata group's id. */
export const META_GROUP = "meta";

/** What a data group's entries produce. */
type DataResult = MutationResult | Error | undefined;

/** Options of {@link ClusterNode.start}. */
export interface ClusterNodeOptions {
  readonly config: ClusterConfig;
  /** `rocksdb`: logs under `<dataDir>/raft`; `memory`: nothing survives a restart. */
  readonly storage: "rocksdb" | "memory";
  readonly dataDir: string;
  /** The node's own shard (registry, addresses, hosted groups). */
  readonly nodeShard: KvShard;
  readonly registry: CollectionRegistry;
  readonly logger: Logger;
  /** Opens the local shards of a collection the metadata group just applied. */
  readonly onCollection: (spec: CreateCollectionRequest) => Promise<void>;
  /**
   * Whether the node serves the partition: its replica is open and the shard manager has it.
   * Until then a partition placed here is "opening". Default: its group is open.
   */
  readonly serving?: (cls: string, partition: number) => boolean;
  /** Closes the local shard of a partition whose Raft group removed this node and removes its data. */
  readonly onReplicaRemoved?: (cls: string, partition: number) => Promise<void>;
  /** Observers for metrics. */
  readonly hooks?: ClusterHooks;
  /** Mutual TLS towards the other members (their URLs are `https://`). */
  readonly peerTls?: PeerTls;
}

/** Events a node reports for metrics. */
export interface ClusterHooks {
  onLeaderChange?(group: string, leader: number): void;
  onProposal?(group: string, outcome: "ok" | "error" | "forwarded", ms: number): void;
  onForwarded?(kind: "propose" | "read" | "request"): void;
  /** A Raft batch of `peer` was refused: it is not the incarnation the cluster records. */
  onRefused?(peer: number): void;
}

/**
 * This node's view of the cluster. `/api/cluster` and `GetCluster` render it as the
 * ClusterStatus message, all but `transport` and `log`, which feed the metrics.
 */
export interface ClusterStatus {
  readonly nodeId: number;
  /** This node's incarnation (see {@link ClusterNode.incarnation}). */
  readonly incarnation: number;
  /** Why the cluster refuses this node ({@link ClusterNode.failure}). */
  readonly failure: string | undefined;
  /** Every known member, with the incarnation the metadata group records for it (0: none). */
  readonly members: { readonly id: number; readonly url: string; readonly incarnation: number }[];
  readonly groups: RaftGroupStatus[];
  /**
   * The replica set of every raft partition whose membership changed since its collection
   * was placed, as the metadata group records it (the others are where they were placed).
   */
  readonly replicas: ({ readonly group: string } & ReplicaSet)[];
  readonly transport: PeerTransportStats[];
  /**
   * The Raft log's synced write batches (every group's saves share them), and how many were
   * written on the event loop (`inlineBatches`) instead of the write worker, and how long a
   * batch's write and fsync took lately (`syncMs`, a moving average); absent on a memory
   * node. In the metrics as `odgm_raft_log_batches` and `odgm_raft_log_sync_seconds`.
   */
  readonly log?: {
    readonly batches: number;
    readonly inlineBatches: number;
    readonly syncMs: number;
  };
}

const HOSTED_PREFIX = "raft-group/";
/**
 * For this long after a node retires its replica of a group, messages for the group are
 * taken to be ones its leader sent before applying the removal, and ignored; after it,
 * they mean the node was added again.
 */
const REJOIN_AFTER_MS = 10_000;
/** Ticks between a data group leader's checks that the metadata group knows its replica set. */
const PUBLISH_EVERY_TICKS = 10;
/** Ticks between two rounds of leadership balancing (`ODGM_RAFT_BALANCE_LEADERS`). */
const BALANCE_EVERY_TICKS = 100;
/** How long `promote` waits for a learner to catch up before refusing. */
const PROMOTE_WAIT_MS = 20_000;
/** Refusals a membership change gets alike from every leader: not worth asking another. */
const FINAL_REFUSALS: ReadonlySet<string> = new Set(["invalid_argument", "failed_precondition"]);
const enc = new TextEncoder();
const dec = new TextDecoder();
/** Node-shard key of the groups this node was removed from: JSON `{group: {voters, index}}`. */
const RETIRED_KEY = enc.encode("raft-retired");
/** Node-shard key of this node's incarnation (decimal). */
const INCARNATION_KEY = enc.encode("raft-incarnation");

/**
 * This node's incarnation: drawn at its first start on this data directory (and stored,
 * synced, before any Raft message leaves the node), then read back at every start.
 */
async function loadIncarnation(shard: KvShard): Promise<number> {
  const raw = await shard.get("system", INCARNATION_KEY);
  const stored = raw === undefined ? 0 : Number(dec.decode(raw));
  if (Number.isSafeInteger(stored) && stored > 0) return stored;
  const drawn = randomInt(1, 2 ** 48);
  await shard.write(
    [{ type: "put", keyspace: "system", key: INCARNATION_KEY, value: enc.encode(String(drawn)) }],
    { sync: true },
  );
  return drawn;
}

/** A Raft log database shared by the groups of this node, or per-group memory stores. */
interface LogStorage {
  open(group: string): Promise<LogStore>;
  /** Drops a group's log here, keeping its term and vote (a replica this node no longer holds). */
  erase(group: string): Promise<void>;
  /** Where the groups write the snapshots they build for followers (emptied at start). */
  readonly snapshotDir: string;
  /** Where the groups receive snapshots and keep those being installed (not emptied). */
  readonly installDir: string;
  /** The log's synced write batches (`ClusterStatus.log`); none on a memory node. */
  stats?(): NonNullable<ClusterStatus["log"]>;
  close(): Promise<void>;
}

/**
 * Opens the Raft log. `idle`: whether the node's event loop may wait for a log write's fsync
 * (the committer's `inlineSynced`), while the log's synced writes took at most
 * `inlineMaxMs` lately (0: never).
 */
async function openLogStorage(
  storage: "rocksdb" | "memory",
  dataDir: string,
  idle: () => boolean,
  inlineMaxMs: number,
): Promise<LogStorage> {
  if (storage === "memory") {
    // Nothing of a memory node outlives it.
    const snapshotDir = mkdtempSync(join(tmpdir(), "odgm-snapshots-"));
    return {
      open: async () => createMemoryLogStore(),
      erase: async () => {},
      snapshotDir,
      installDir: snapshotDir,
      close: async () => rmSync(snapshotDir, { recursive: true, force: true }),
    };
  }
  // Snapshots being sent when the node stopped are of no use after it.
  const snapshotDir = join(dataDir, "raft-snapshots");
  rmSync(snapshotDir, { recursive: true, force: true });
  mkdirSync(snapshotDir, { recursive: true });
  // A snapshot being installed when the node stopped is installed again from here at start.
  const installDir = join(dataDir, "raft-installs");
  mkdirSync(installDir, { recursive: true });
  const { openRocksLogDatabase, createGroupCommitter, createRocksLogStore } = await import(
    "@oprc/raft-log/rocksdb"
  );
  const path = join(dataDir, "raft");
  mkdirSync(path, { recursive: true });
  const database = await openRocksLogDatabase({ path });
  // Many groups, one fsync: every group's Ready joins the batch in flight. A batch starts in
  // the end-of-turn pass in which the leaders' Readys run (turn.ts). It is written on the
  // event loop, blocking it for the fsync, while no client waits on this node for a proposal
  // (`proposing`: none in flight in a group it leads, none forwarded from it to another
  // leader): a follower's log write, which its acknowledgement waits for anyway, then costs
  // no trip through the write worker (6–10 % of a three-node cluster's CPU per write at 64
  // in flight, BENCHMARKS.md). Not while the log's writes took more than `inlineMaxMs`
  // lately (a slow disk would hold the event loop up), and never when that is 0.
  const committer = createGroupCommitter(database, {
    schedule: atEndOfTurn,
    ...(inlineMaxMs > 0 ? { inlineSynced: idle, inlineSyncedMaxMs: inlineMaxMs } : {}),
  });
  return {
    open: (groupId) => createRocksLogStore({ database, groupId, committer }),
    erase: async (groupId) => (await createRocksLogStore({ database, groupId, committer })).erase(),
    snapshotDir,
    installDir,
    stats: () => {
      const s = committer.stats();
      return { batches: s.batches, inlineBatches: s.inlineBatches, syncMs: s.syncMs };
    },
    close: async () => {
      await committer.close();
      await database.close();
    },
  };
}

/** A node's view of the cluster. */
export class ClusterNode {
  readonly nodeId: number;
  /** Where every known member listens: `ODGM_MEMBERS`, then addresses learnt from the log. */
  readonly addresses: Map<number, string>;
  private readonly groups = new Map<string, RaftGroup<unknown>>();
  private readonly startCommit = new Map<string, number>();
  /** Groups this node was added to at run time (opened on their leader's first message). */
  private readonly adopted = new Set<string>();
  /** Data groups whose configuration has included this node since they were opened here. */
  private readonly member = new Set<string>();
  /**
   * Data groups this node was removed from: the voters that removed it (where requests for
   * the partition go now), the group's applied index then, and when (0: before this
   * process started).
   */
  private readonly retired = new Map<string, { voters: number[]; index: number; at: number }>();
  /**
   * Data groups this node rejoined, with the applied index at which it had been removed: the
   * configurations its own log replays up to there are history, not news of membership.
   */
  private readonly replayedUntil = new Map<string, number>();
  /**
   * Data groups that removed this node while it led them, with their new voters: the core
   * keeps leading until the new voters know the whole log is committed, then hands over;
   * the replica retires once it no longer leads (checked every tick).
   */
  private readonly leaving = new Map<string, readonly number[]>();
  /**
   * The replica sets the metadata group records (`setReplicas`): published by each data
   * group's leader when its membership differs from the collection's placement, so every
   * node routes by the current one, and a replica removed while it was down learns of it.
   */
  private readonly replicaSets = new Map<string, ReplicaSet>();
  /** Data groups whose replica set this node is publishing (one proposal at a time). */
  private readonly publishing = new Set<string>();
  /**
   * Every node's incarnation as the metadata group records it (`setIncarnation`): Raft
   * messages of a node under another incarnation are refused (see {@link admit}).
   */
  private readonly incarnations = new Map<number, number>();
  /** The incarnations peers address this node by (see {@link failure}). */
  private readonly addressedAs: AddressedAs;
  /** Refused peer incarnations already logged (`peer/incarnation`): one line each. */
  private readonly refusalsLogged = new Set<string>();
  /** The failure last logged ({@link failure}), so that each is logged once. */
  private failureLogged: string | undefined;
  /**
   * Where recording this node's incarnation stands: `proposed` once the metadata group's
   * leader applied it (not proposed again: this node's copy may lag, or, after an upgrade
   * from a version without incarnations, miss the record, until the record is dropped), or
   * `refused` for the incarnation recorded instead; both until the record is dropped (the
   * node is added back).
   */
  private recording:
    | { readonly state: "pending" | "proposing" | "proposed" }
    | { readonly state: "refused"; readonly recorded: number } = { state: "pending" };
  private ticks = 0;
  /**
   * One HTTP/2 session per peer URL for calls this node makes of its own accord: forwarded
   * proposals (RaftService) and requests for partitions held elsewhere (DataService).
   */
  private readonly peers = new Map<
    string,
    {
      raft: Client<typeof RaftService>;
      proposals: RequestBatcher<ProposeRequest, ProposeOutcome>;
      plane: RemoteDataPlane;
      session: Http2SessionManager;
    }
  >();
  private meta!: RaftGroup<MetaResult>;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Proposals forwarded from here whose answer has not come back ({@link proposing}). */
  private forwarding = 0;
  /** Set once the node hands its leadership off to stop. */
  private handingOff = false;
  private readonly transport;
  /** Aborted when the node stops: ends the Raft streams peers opened to it. */
  private readonly stopping = new AbortController();
  /**
   * When a batch of each peer last arrived (`Date.now()`); forgotten when a stream to it
   * fails. A quiescent group whose leader's node is silent for an election timeout wakes.
   */
  private readonly heardAt = new Map<number, number>();

  private constructor(
    private readonly o: ClusterNodeOptions,
    private readonly logs: LogStorage,
    /**
     * This node's incarnation: a random number its data directory got when the node first
     * started there. A wiped or replaced directory gets a new one, by which the cluster
     * tells it from the node that cast its votes and acknowledged its entries.
     */
    readonly incarnation: number,
  ) {
    this.nodeId = o.config.nodeId;
    this.addresses = new Map(o.config.members);
    this.addressedAs = new AddressedAs(incarnation);
    this.transport = createRaftTransport({
      nodeId: this.nodeId,
      incarnation,
      incarnationOf: (id) => this.incarnations.get(id),
      ...(o.peerTls === undefined ? {} : { tls: o.peerTls }),
      addressOf: (id) => this.addresses.get(id),
      onUnreachable: (peer, groups) => {
        this.heardAt.delete(peer);
        for (const g of groups) this.groups.get(g)?.reportUnreachable(peer);
      },
      onError: (err, peer) => o.logger.debug({ err, peer }, "raft transport: peer unreachable"),
    });
  }

  /** Opens the log storage and the metadata group, and starts the clock. */
  static async start(o: ClusterNodeOptions): Promise<ClusterNode> {
    guardHttp2ClientSessions();
    const incarnation = await loadIncarnation(o.nodeShard);
    const started: { node?: ClusterNode } = {};
    const logs = await openLogStorage(
      o.storage,
      o.dataDir,
      () => started.node?.proposing() === false,
      o.config.logInlineMaxMs,
    );
    const node = new ClusterNode(o, logs, incarnation);
    started.node = node;
    try {
      const retired = await o.nodeShard.get("system", RETIRED_KEY);
      if (retired !== undefined) {
        const groups = JSON.parse(dec.decode(retired)) as Record<
          string,
          { voters: number[]; index: number }
        >;
        for (const [g, r] of Object.entries(groups)) node.retired.set(g, { ...r, at: 0 });
      }
      const sm = await openMetaStateMachine({
        shard: o.nodeShard,
        registry: o.registry,
        addresses: node.addresses,
        replicaSets: node.replicaSets,
        incarnations: node.incarnations,
        onIncarnation: (id, incarnation) => {
          // Dropped as this node is added back: its directory's incarnation is recorded anew.
          const dropped = id === node.nodeId && incarnation === undefined;
          if (dropped && node.recording.state !== "proposing")
            node.recording = { state: "pending" };
        },
        onReplicaSet: (group) => node.checkRemoved(group),
        onCollection: o.onCollection,
        onBadEntry: (err, index) =>
          o.logger.error({ err, index }, "metadata entry does not decode; applied as a no-op"),
      });
      node.meta = await node.openGroup(
        META_GROUP,
        sm,
        o.config.state === "new" ? [...o.config.members.keys()] : undefined,
      );
      node.timer = setInterval(() => node.tick(), o.config.tickMs);
      node.timer.unref();
      // A single-member cluster need not wait an election timeout for its first leader.
      if (o.config.members.size === 1 && o.config.state === "new") node.meta.campaign();
    } catch (err) {
      await node.close();
      throw err;
    }
    return node;
  }

  /** The `oprc.RaftService` implementation this node serves. */
  raftService(): ServiceImpl<typeof RaftService> {
    const receive = createRaftServiceImpl({
      nodeId: this.nodeId,
      heard: (from) => this.heardAt.set(from, Date.now()),
      deliver: (group, m, quiesce) => {
        const g = this.groups.get(group);
        if (g === undefined) {
          this.adopt(group);
          return false;
        }
        // A node handing its leadership off to stop takes none back (another node's
        // balancing could pick it, as it then leads the fewest groups).
        if (this.handingOff && m.type === "timeout_now") return true;
        g.step(m, quiesce);
        return true;
      },
      onRejected: (err, from) =>
        this.o.logger.warn({ err, from }, "refused a malformed Raft message from a peer"),
      admit: (from, incarnations) => this.admit(from, incarnations),
      stop: this.stopping.signal,
    });
    return {
      stream: receive.stream,
      proposeBatch: async (req: ProposeBatchRequest) => {
        // Proposed in request order, synchronously, so they enter each group's log in order.
        const settled = req.proposals.map((p) => this.proposeHere(p));
        return create(ProposeBatchResponseSchema, { outcomes: await Promise.all(settled) });
      },
      changeMembership: async (req: ChangeMembershipRequest) => {
        try {
          const conf = await this.changeLocal(req.group, req.change, Number(req.nodeId));
          return create(ChangeMembershipResponseSchema, { confState: toWireConf(conf) });
        } catch (err) {
          throw toConnectError(toPlaneError(err));
        }
      },
    };
  }

  /** A proposal forwarded by a follower, as its outcome (a refusal is an answer, not a throw). */
  private async proposeHere(p: ProposeRequest): Promise<ProposeOutcome> {
    try {
      const g = this.groups.get(p.group);
      if (g === undefined) {
        throw new DataPlaneError(
          "unavailable",
          `node ${this.nodeId} does not host group ${p.group}`,
        );
      }
      const r = await this.proposeAsLeader(g, p.command);
      if (r === undefined) throw notLeader(g.id, g.leader);
      return create(ProposeOutcomeSchema, {
        outcome: {
          case: "applied",
          value: {
            index: BigInt(r.index),
            result: enc.encode(JSON.stringify(resultJson(r.result))),
          },
        },
      });
    } catch (err) {
      const e = DataPlaneError.from(toPlaneError(err));
      if (e.code === "internal") {
        this.o.logger.error({ err, group: p.group }, "a forwarded proposal failed");
      }
      return create(ProposeOutcomeSchema, {
        outcome: {
          case: "refused",
          value: {
            code: e.code,
            message: e.code === "internal" ? `internal error on node ${this.nodeId}` : e.message,
            leaderHint: e.leaderHint ?? "",
            ...(e.expected === undefined ? {} : { expectedVersion: e.expected }),
            ...(e.actual === undefined ? {} : { actualVersion: e.actual }),
          },
        },
      });
    }
  }

  /**
   * The nodes holding a replica of a raft partition this node holds none of, in the order to
   * try them, or `undefined` when this node serves the partition (it hosts it, or the
   * collection is not a raft one): the newer of the replica set the metadata group records
   * (voters first) and the voters that removed this node from the group, else the
   * collection's placement. A call another node forwarded here (`forwardedBy`) is sent on
   * only when this node knows where the partition went (a recorded replica set, or its own
   * removal), and never back to that node.
   */
  replicasElsewhere(ref: PartitionRef, forwardedBy?: number): number[] | undefined {
    const spec = this.o.registry.get(ref.cls);
    if (spec?.shardType !== "raft" || ref.partition >= spec.partitionCount) return undefined;
    const id = groupIdOf(ref.cls, ref.partition);
    if (this.groups.has(id)) return undefined;
    const known = this.recordedReplicas(id);
    if (forwardedBy !== undefined && known === undefined) return undefined;
    const nodes = (known ?? replicasOf(spec, ref.partition)).filter(
      (n) => n !== this.nodeId && n !== forwardedBy,
    );
    return forwardedBy !== undefined && nodes.length === 0 ? undefined : nodes;
  }

  /** The DataService of another member as a data plane (`undefined`: address unknown). */
  dataPlaneOf(nodeId: number): RemoteDataPlane | undefined {
    return nodeId === this.nodeId ? undefined : this.peerOf(nodeId)?.plane;
  }

  private peerOf(nodeId: number) {
    const url = this.addresses.get(nodeId);
    if (url === undefined) return undefined;
    let p = this.peers.get(url);
    if (p === undefined) {
      // Over `https://`, authenticated both ways with the node's certificate.
      const session = new Http2SessionManager(
        url,
        { pingIntervalMs: 2000, pingTimeoutMs: 2000 },
        this.o.peerTls,
      );
      const transport = createGrpcTransport({ baseUrl: url, sessionManager: session });
      const raft = createClient(RaftService, transport);
      p = {
        raft,
        proposals: createRequestBatcher({
          send: async (proposals: ProposeRequest[]) =>
            (await raft.proposeBatch({ proposals }, { timeoutMs: this.electionMs() * 5 })).outcomes,
        }),
        plane: createRemoteDataPlane(createClient(DataService, transport), {
          headers: { [FORWARDED_HEADER]: String(this.nodeId) },
          passHeaders: [READ_CONSISTENCY_HEADER],
        }),
        session,
      };
      this.peers.set(url, p);
    }
    return p;
  }

  /**
   * Whether a client waits on this node for a proposal: one in flight in a group led here,
   * or one forwarded from here to another node's leader.
   */
  proposing(): boolean {
    if (this.forwarding > 0) return true;
    for (const g of this.groups.values()) if (g.isLeader && g.proposing) return true;
    return false;
  }

  /** Groups of this node. */
  group(id: string): RaftGroup<unknown> | undefined {
    return this.groups.get(id);
  }

  /**
   * Opens the Raft group of a raft-collection partition hosted here, replicating `store`.
   * Bootstraps it from the collection's placement when this node is one of its first
   * replicas and the cluster is new; otherwise it waits for its leader.
   */
  async openDataGroup(
    spec: CreateCollectionRequest,
    partition: number,
    store: EntryStore,
  ): Promise<RaftGroup<DataResult>> {
    const id = groupIdOf(spec.name, partition);
    const existing = this.groups.get(id);
    if (existing !== undefined) return existing as RaftGroup<DataResult>;
    const sm: StateMachine<DataResult> = {
      appliedIndex: () => store.appliedIndex(),
      apply: (entries) =>
        store.applyCommitted(
          entries.map((e) => ({ index: e.index, op: this.decodeEntry(id, e) })),
          { sync: false },
        ),
      snapshot: async () => (await store.openStateExport()).read,
      restore: (data, index) => store.importState(data, { appliedIndex: index }),
      persist: () => store.syncApplied(),
    };
    const replicas = replicasOf(spec, partition);
    const bootstrap =
      this.o.config.state === "new" && replicas.includes(this.nodeId) ? replicas : undefined;
    const rejoining = this.retired.get(id);
    if (rejoining !== undefined) this.replayedUntil.set(id, rejoining.index);
    const group = await this.openGroup(id, sm, bootstrap);
    const rejoined = this.retired.delete(id);
    await this.o.nodeShard.write(
      [
        {
          type: "put",
          keyspace: "system",
          key: enc.encode(`${HOSTED_PREFIX}${id}`),
          value: new Uint8Array(0),
        },
        ...(rejoined ? [this.retiredRecord()] : []),
      ],
      { sync: true },
    );
    this.checkRemoved(id);
    return group;
  }

  /** Starts replicating `store` as a replica of the partition (the shard manager's hook). */
  async replicate(
    spec: CreateCollectionRequest,
    partition: number,
    store: EntryStore,
  ): Promise<ShardReplica> {
    const id = groupIdOf(spec.name, partition);
    const group = await this.openDataGroup(spec, partition, store);
    return {
      get isLeader() {
        return group.isLeader;
      },
      mutate: (op) => this.mutate(id, { ...op, cls: spec.name, partition } as OdgmOp),
      read: async (consistency, run) => {
        await this.readBarrier(id, consistency);
        return group.reading(run);
      },
    };
  }

  /** Whether this node hosts (or hosted before a restart) a group of `spec`'s partition. */
  async hosts(spec: CreateCollectionRequest, partition: number): Promise<boolean> {
    const id = groupIdOf(spec.name, partition);
    if (this.groups.has(id) || this.adopted.has(id)) return true;
    if (this.retired.has(id)) return false;
    if (replicasOf(spec, partition).includes(this.nodeId)) return true;
    return (
      (await this.o.nodeShard.get("system", enc.encode(`${HOSTED_PREFIX}${id}`))) !== undefined
    );
  }

  /** The raft collection and partition of a data group id; `undefined` for any other id. */
  private raftSpecOf(
    group: string,
  ): { spec: CreateCollectionRequest; partition: number } | undefined {
    const part = parseGroupId(group);
    const spec = part === undefined ? undefined : this.o.registry.get(part.collection);
    if (part === undefined || spec?.shardType !== "raft" || part.partition >= spec.partitionCount) {
      return undefined;
    }
    return { spec, partition: part.partition };
  }

  /** The nodes the collection's placement put a data group on ([] for other ids). */
  private placedReplicas(group: string): number[] {
    const raft = this.raftSpecOf(group);
    return raft === undefined ? [] : replicasOf(raft.spec, raft.partition);
  }

  /**
   * A leader sends messages for a group this node does not host: it was added to the group
   * (a new learner). Open an empty replica; the leader brings it up to date.
   */
  private adopt(group: string): void {
    if (this.adopted.has(group) || this.closed) return;
    const spec = this.raftSpecOf(group)?.spec;
    if (spec === undefined) return;
    const retired = this.retired.get(group);
    // Sent before the leader applied this node's removal: not an invitation to rejoin.
    if (retired !== undefined && Date.now() - retired.at < REJOIN_AFTER_MS) return;
    this.adopted.add(group);
    this.o.logger.info({ group }, "joining a raft group as a new replica");
    this.o.onCollection(spec).catch((err: unknown) => {
      this.adopted.delete(group);
      this.o.logger.error({ err, group }, "could not open a replica of a raft group");
    });
  }

  private decodeEntry(group: string, e: Entry): StoreOp | undefined {
    if (e.type !== "normal" || e.data.byteLength === 0) return undefined;
    try {
      const op = decodeOdgmOp(e.data);
      return op.kind === "noop" ? undefined : (op as StoreOp);
    } catch (err) {
      // Every replica refuses the same bytes alike: the entry is a no-op everywhere.
      this.o.logger.error(
        { err, group, index: e.index },
        "log entry does not decode; applied as a no-op",
      );
      return undefined;
    }
  }

  private async openGroup<R>(
    id: string,
    sm: StateMachine<R>,
    bootstrapVoters: readonly number[] | undefined,
  ): Promise<RaftGroup<R>> {
    const storage = await this.logs.open(id);
    const reopened = storage.lastIndex() > 0 || storage.snapshot().metadata.index > 0;
    const group = await RaftGroup.open<R>({
      id,
      nodeId: this.nodeId,
      storage,
      stateMachine: sm,
      send: (g, msgs, quiesce) => this.transport.send(g, msgs, quiesce),
      quiesce: this.o.config.quiesce,
      peerSilent: (peer) => this.silent(peer),
      ...(bootstrapVoters === undefined ? {} : { bootstrapVoters }),
      electionTick: this.o.config.electionTicks,
      heartbeatTick: 1,
      advanceElection: reopened,
      compactAfter: this.o.config.compactEntries,
      compactAfterBytes: this.o.config.compactBytes,
      catchUpEntries: this.o.config.catchUpEntries,
      snapshotDir: this.logs.snapshotDir,
      installDir: this.logs.installDir,
      onSoftState: (_role, leader) => this.o.hooks?.onLeaderChange?.(id, leader),
      onConfState: (conf) => this.confChanged(id, conf),
      onError: (err, what) => this.o.logger.error({ err, group: id, what }, "raft group error"),
      onInstallResumed: (index) =>
        this.o.logger.info(
          { group: id, index },
          "installing again a snapshot whose install was cut short",
        ),
    });
    this.startCommit.set(id, storage.initialState().hardState.commit);
    this.groups.set(id, group as RaftGroup<unknown>);
    if (
      id !== META_GROUP &&
      !this.replayedUntil.has(id) &&
      includes(group.status().confState, this.nodeId)
    ) {
      this.member.add(id);
    }
    return group;
  }

  /**
   * A group applied a configuration. One that no longer includes this node, of a data group
   * whose configuration did include it here, means the node was removed: it retires its
   * replica. (Only a change seen here counts: a new replica installs a snapshot from
   * before it was added, which does not include it either.)
   */
  private confChanged(id: string, conf: ConfState): void {
    if (id === META_GROUP) return;
    const replayed = this.replayedUntil.get(id);
    if (replayed !== undefined) {
      if ((this.groups.get(id)?.status().applied ?? 0) <= replayed) return;
      this.replayedUntil.delete(id);
    }
    this.leaving.delete(id);
    if (includes(conf, this.nodeId)) this.member.add(id);
    else if (this.member.has(id)) {
      if (this.groups.get(id)?.isLeader === true) this.leaving.set(id, conf.voters);
      else void this.retire(id, conf.voters);
    }
    this.publishReplicas(id);
  }

  /**
   * On the leader of a data group: records the group's membership in the metadata group
   * when it differs from what that records (or, with no record, from the collection's
   * placement). Checked at every conf change and every {@link PUBLISH_EVERY_TICKS} ticks, so
   * a proposal lost to a leader change is made again by the next leader.
   */
  private publishReplicas(id: string): void {
    const g = this.groups.get(id);
    if (g === undefined || !g.isLeader || this.publishing.has(id) || this.closed) return;
    const { index, conf } = g.appliedConf();
    const { voters, learners } = rolesOf(conf);
    const known = this.replicaSets.get(id);
    if (known === undefined) {
      if (learners.length === 0 && sameNodes(voters, this.placedReplicas(id))) return;
    } else if (
      known.confIndex >= index ||
      (sameNodes(known.voters, voters) && sameNodes(known.learners, learners))
    ) {
      return;
    }
    this.publishing.add(id);
    const replicas: ReplicaSet = { voters, learners, confIndex: index };
    this.propose(META_GROUP, encodeMetaCommand({ setReplicas: { group: id, replicas } }))
      .then(
        () =>
          this.o.logger.info(
            { group: id, ...replicas },
            "recorded the replica set of a raft group",
          ),
        (err: unknown) =>
          this.o.logger.warn(
            { err, group: id },
            "could not record the replica set of a raft group; will retry",
          ),
      )
      .finally(() => this.publishing.delete(id));
  }

  /**
   * A replica set recorded in the metadata group that leaves this node out, of a group this
   * node hosts and was a member of, at a configuration newer than any that includes this
   * node here: the node was removed while it was down or cut off (it never applied its
   * removal), or died between applying it and recording it. It retires its replica, which
   * no leader talks to any more. (A node added back afterwards is opened again when its
   * leader reaches it, as after any removal.)
   */
  private checkRemoved(id: string): void {
    const set = this.replicaSets.get(id);
    const g = this.groups.get(id);
    if (set === undefined || g === undefined || !this.member.has(id) || g.isLeader) return;
    if (set.voters.includes(this.nodeId) || set.learners.includes(this.nodeId)) return;
    const own = g.appliedConf();
    if (own.index >= set.confIndex && includes(own.conf, this.nodeId)) return;
    this.o.logger.info(
      { group: id, ...set, applied: g.status().applied },
      "the metadata group records a replica set without this node: retiring its replica",
    );
    void this.retire(id, set.voters, set.confIndex);
  }

  /**
   * Stops serving a group this node was removed from: records the removal (so a restart does
   * not open it again), closes the group and the partition's local shard. Requests for the
   * partition go to `voters` from then on. Its data stays on disk.
   */
  private async retire(id: string, voters: readonly number[], removedAt = 0): Promise<void> {
    const group = this.groups.get(id);
    if (group === undefined || this.closed) return;
    this.groups.delete(id);
    this.startCommit.delete(id);
    this.member.delete(id);
    this.leaving.delete(id);
    this.replayedUntil.delete(id);
    this.adopted.delete(id);
    // The index of the removal when known (a node that never applied it retires before it):
    // if the node is added back, its log replays up to there as history.
    const index = Math.max(group.status().applied, removedAt);
    this.retired.set(id, { voters: [...voters], index, at: Date.now() });
    try {
      await this.o.nodeShard.write(
        [
          this.retiredRecord(),
          { type: "del", keyspace: "system", key: enc.encode(`${HOSTED_PREFIX}${id}`) },
        ],
        { sync: true },
      );
      await group.close();
      // The log first. Stopped in between, the node keeps the shard's data and the applied
      // index stored with it, which a later re-add skips entries up to (as after an install
      // whose log record was lost); the other way round would leave a compacted log over an
      // empty shard, which refuses to open.
      await this.logs.erase(id);
      const part = parseGroupId(id);
      if (part !== undefined) await this.o.onReplicaRemoved?.(part.collection, part.partition);
      this.o.logger.info(
        { group: id, voters },
        "removed from a raft group: its replica here is closed and its log and data removed, requests go to its voters",
      );
    } catch (err) {
      this.o.logger.error({ err, group: id }, "could not retire the replica of a raft group");
    }
  }

  /** The node-shard write recording {@link ClusterNode.retired}. */
  private retiredRecord(): KvWriteOp {
    const groups = Object.fromEntries(
      [...this.retired].map(([g, r]) => [g, { voters: r.voters, index: r.index }]),
    );
    return {
      type: "put",
      keyspace: "system",
      key: RETIRED_KEY,
      value: enc.encode(JSON.stringify(groups)),
    };
  }

  /**
   * Whether `peer` answers this leader of a group (`st`): it answered a heartbeat within an
   * election timeout — or, the group being quiescent (no heartbeats, so no lease), it answered
   * the quiescence mark and its node is heard from.
   */
  private answers(st: RaftGroupStatus, peer: number): boolean {
    return st.responsive.has(peer) || (st.quiescent && !this.silent(peer));
  }

  /** True when no batch of `peer` arrived for an election timeout (or its stream failed since). */
  private silent(peer: number): boolean {
    return Date.now() - (this.heardAt.get(peer) ?? 0) > this.electionMs();
  }

  private tick(): void {
    for (const g of this.groups.values()) g.tick();
    // Peers hear from this node even while every group they share is quiescent: a round every
    // election timeout / 4 ticks writes to each peer that got nothing since the last round, so
    // silence lasts at most half an election timeout.
    const every = Math.max(1, Math.floor(this.o.config.electionTicks / 4));
    if (this.o.config.quiesce && this.ticks % every === 0) {
      this.transport.keepAlive(this.addresses.keys());
    }
    for (const [id, voters] of this.leaving) {
      if (this.groups.get(id)?.isLeader !== true) void this.retire(id, voters);
    }
    if (++this.ticks % PUBLISH_EVERY_TICKS === 0) {
      for (const [id, g] of this.groups)
        if (id !== META_GROUP && g.isLeader) this.publishReplicas(id);
      this.recordIncarnation();
      this.logFailure();
    }
    if (this.o.config.balanceLeaders && this.ticks % BALANCE_EVERY_TICKS === 0) {
      this.balanceLeaders();
    }
  }

  /** One round of leadership balancing (see `leader-balance.ts`). */
  private balanceLeaders(): void {
    if (this.closed || this.handingOff) return;
    const view: GroupLeadership[] = [];
    for (const [id, g] of this.groups) {
      if (id === META_GROUP || g.leader === 0) continue;
      let candidates: number[] = [];
      if (g.isLeader && !this.leaving.has(id)) {
        const st = g.status();
        if (st.leadTransferee === 0) {
          candidates = st.confState.voters.filter(
            (v) => v !== this.nodeId && this.answers(st, v) && (st.match.get(v) ?? 0) >= st.commit,
          );
        }
      }
      view.push({ group: id, leader: g.leader, candidates });
    }
    for (const h of planHandoffs(this.nodeId, view)) {
      try {
        this.groups.get(h.group)?.transferLeader(h.to);
      } catch {
        continue; // no longer its leader
      }
      this.o.logger.info(
        { group: h.group, to: h.to },
        "balancing leadership: handing a group over",
      );
    }
  }

  /**
   * True when every raft partition placed here has its group open, and every group here has
   * a leader and has applied what was committed at start.
   */
  ready(): boolean {
    if (this.failure() !== undefined) return false;
    for (const spec of this.o.registry.list()) {
      if (spec.shardType !== "raft") continue;
      for (let p = 0; p < spec.partitionCount; p++) {
        if (this.opening(spec.name, p)) return false;
      }
    }
    for (const [id, g] of this.groups) {
      const st = g.status();
      if (st.failure !== undefined) return false;
      if (st.lead === 0 || st.applied < (this.startCommit.get(id) ?? 0)) return false;
    }
    return true;
  }

  /**
   * The replicas of data group `id` as recorded since its placement: the newer of the
   * replica set the metadata group records and the voters that removed this node;
   * `undefined` when neither exists (the collection's placement holds).
   */
  private recordedReplicas(id: string): number[] | undefined {
    const set = this.replicaSets.get(id);
    const retired = this.retired.get(id);
    return set !== undefined && (retired === undefined || set.confIndex >= retired.index)
      ? [...set.voters, ...set.learners]
      : retired?.voters;
  }

  /**
   * True when partition `partition` of raft collection `cls` is placed on this node (by the
   * recorded replicas, else by the collection's placement) and not served here yet: the
   * collection was just created, or the node is starting.
   */
  opening(cls: string, partition: number): boolean {
    const spec = this.o.registry.get(cls);
    if (spec?.shardType !== "raft" || partition >= spec.partitionCount) return false;
    // Served is the common case, asked on every routed request: before building the id.
    const served = this.o.serving?.(cls, partition);
    if (served === true) return false;
    const id = groupIdOf(cls, partition);
    if (served === undefined && this.groups.has(id)) return false;
    return (this.recordedReplicas(id) ?? replicasOf(spec, partition)).includes(this.nodeId);
  }

  /**
   * When this node may not know yet what the cluster knows of `ref`'s partition, a promise
   * that settles (bounded, never rejecting) once it does; otherwise `undefined`. The
   * collection is unknown here — it may have been created through another node, so the
   * metadata group is read (ReadIndex) to learn of it — or its partition is placed here and
   * still opening. A request right after CreateCollection answered on another node then
   * finds the collection, instead of NOT_FOUND or UNAVAILABLE.
   */
  pending(ref: PartitionRef): Promise<void> | undefined {
    if (this.o.registry.get(ref.cls) !== undefined) return this.opened(ref);
    if (this.closed || this.failure() !== undefined) return undefined;
    return this.meta.readIndex(this.electionMs() * 5).then(
      () => this.opened(ref),
      () => undefined,
    );
  }

  /** Waits (bounded) while `ref`'s partition is placed here and still opening. */
  private opened(ref: PartitionRef): Promise<void> | undefined {
    const opening = () => !this.closed && this.opening(ref.cls, ref.partition);
    if (!opening()) return undefined;
    return waitUntil(() => !opening(), this.electionMs() * 5, Math.min(20, this.o.config.tickMs));
  }

  /** Waits (bounded) for `group` to know a leader; resolves with it, or 0. */
  private async leaderOf(group: RaftGroup<unknown>, timeoutMs: number): Promise<number> {
    const step = Math.min(50, this.o.config.tickMs);
    await waitUntil(() => group.leader !== 0 || this.closed, timeoutMs, step);
    return group.leader;
  }

  private electionMs(): number {
    return this.o.config.tickMs * this.o.config.electionTicks;
  }

  private peerClient(nodeId: number) {
    const p = this.peerOf(nodeId);
    if (p === undefined)
      throw new DataPlaneError("unavailable", `no address is known for node ${nodeId}`);
    return p;
  }

  /**
   * Proposes `command` to `groupId` and resolves with its result once applied: on this node
   * when it leads the group, else through the leader (which answers once applied there).
   */
  private async propose(
    groupId: string,
    command: Uint8Array,
  ): Promise<{ result: unknown; local: boolean; index: number }> {
    const g = this.groups.get(groupId);
    if (g === undefined)
      throw new DataPlaneError("unavailable", `this node does not host group ${groupId}`);
    for (let attempt = 0; ; attempt++) {
      let leader = g.isLeader ? this.nodeId : await this.leaderOf(g, this.electionMs() * 3);
      if (leader === this.nodeId && g.isLeader) {
        const r = await this.proposeAsLeader(g, command);
        if (r !== undefined) return { result: r.result, local: true, index: r.index };
        leader = await this.leaderOf(g, this.electionMs() * 3);
      }
      if (leader === 0) {
        throw new DataPlaneError("unavailable", `group ${groupId} has no leader right now; retry`);
      }
      const outcome = await this.forwardProposal(groupId, leader, command);
      if (outcome.case === "applied") {
        return {
          result: JSON.parse(dec.decode(outcome.value.result)) as unknown,
          local: false,
          index: Number(outcome.value.index),
        };
      }
      if (outcome.case === "refused") {
        // Not the leader any more (it handed leadership on, say): the entry was not proposed,
        // so it goes once more to wherever leadership went.
        if (attempt === 0 && outcome.value.code === "not_leader") {
          const moved = () => (g.leader !== leader && g.leader !== 0) || this.closed;
          await waitUntil(moved, this.electionMs() * 2, Math.min(20, this.o.config.tickMs));
          if (moved() && !this.closed) continue;
        }
        throw refusalError(outcome.value, leader);
      }
      throw new DataPlaneError("internal", `node ${leader} answered a proposal with no outcome`);
    }
  }

  /** Forwards `command` to `leader`, as its outcome; a failure to reach it as `not_leader`. */
  private async forwardProposal(
    groupId: string,
    leader: number,
    command: Uint8Array,
  ): Promise<ProposeOutcome["outcome"]> {
    this.o.hooks?.onForwarded?.("propose");
    this.forwarding++;
    try {
      return (
        await this.peerClient(leader).proposals.submit(
          create(ProposeRequestSchema, { group: groupId, command }),
        )
      ).outcome;
    } catch (err) {
      const ce = ConnectError.from(err);
      if (
        ce.code === Code.Unavailable ||
        ce.code === Code.DeadlineExceeded ||
        ce.code === Code.Unknown ||
        // Nothing here cancels a batched proposal: CANCELED is the leader's stream reset as
        // it died (connect-node: "http/2 stream closed with error code CANCEL").
        ce.code === Code.Canceled ||
        isConnectionFailure(ce)
      ) {
        const leaderHint = this.addresses.get(leader) ?? String(leader);
        if (isConnectionRefused(ce)) {
          throw new DataPlaneError(
            "not_leader",
            `could not reach the leader (node ${leader}) of group ${groupId}: the connection was refused, so the operation was not applied; retry`,
            { leaderHint, cause: err },
          );
        }
        // No answer came back: the leader may or may not have applied the operation.
        throw new DataPlaneError(
          "not_leader",
          `could not forward to the leader (node ${leader}) of group ${groupId}, or lost its answer (the operation may have been applied): ${ce.rawMessage}`,
          { leaderHint, cause: err },
        );
      }
      throw ce;
    } finally {
      this.forwarding--;
    }
  }

  /**
   * Proposes `command` to `g`, which this node leads, and resolves with its result once
   * applied here. While leadership is moving away (balancing, an admin's transfer, or this
   * node's removal) the core refuses new entries, which are then not in the log: the
   * proposal waits (bounded) for the move to land or be given up, and is proposed again if
   * this node still leads; it resolves `undefined` when another node leads by then.
   */
  private async proposeAsLeader(
    g: RaftGroup<unknown>,
    command: Uint8Array,
  ): Promise<ProposalResult<unknown> | undefined> {
    try {
      return await g.propose(command);
    } catch (err) {
      const moving = isRaftError(err) ? err.code : undefined;
      if (moving !== "transfer_in_progress" && moving !== "proposal_dropped") {
        throw toPlaneError(err);
      }
      const settled = () =>
        !g.isLeader ||
        this.closed ||
        (moving === "transfer_in_progress" && g.status().leadTransferee === 0);
      await waitUntil(settled, this.electionMs() * 2, Math.min(20, this.o.config.tickMs));
      if (!g.isLeader) return undefined;
      return g.propose(command).catch((e: unknown) => {
        throw toPlaneError(e);
      });
    }
  }

  /** Applies a mutation to a raft-collection partition hosted here (proposed through its leader). */
  async mutate(groupId: string, op: OdgmOp): Promise<MutationResult> {
    const started = performance.now();
    try {
      const { result, local } = await this.propose(groupId, encodeOdgmOp(op));
      this.o.hooks?.onProposal?.(groupId, local ? "ok" : "forwarded", performance.now() - started);
      if (local) {
        if (result instanceof Error) throw toPlaneError(result);
        if (result === undefined)
          throw new DataPlaneError("internal", "the operation produced no result");
        return result as MutationResult;
      }
      return mutationFromJson(result);
    } catch (err) {
      this.o.hooks?.onProposal?.(groupId, "error", performance.now() - started);
      throw err;
    }
  }

  /**
   * Waits until a read of `groupId` on this node may be served under `consistency`:
   * `linearizable` confirms leadership with a quorum round (ReadIndex) and waits for this
   * node to apply what was committed; `lease` skips the round on a leader under lease;
   * `follower` serves whatever this node has applied.
   */
  async readBarrier(groupId: string, consistency: ReadConsistency): Promise<void> {
    const g = this.groups.get(groupId);
    if (g === undefined)
      throw new DataPlaneError("unavailable", `this node does not host group ${groupId}`);
    if (consistency === "follower") return;
    if (consistency === "lease" && g.leaseRead()) return;
    if (g.leader === 0 && (await this.leaderOf(g, this.electionMs() * 3)) === 0) {
      throw new DataPlaneError("unavailable", `group ${groupId} has no leader right now; retry`);
    }
    if (!g.isLeader) this.o.hooks?.onForwarded?.("read");
    try {
      await g.readIndex(this.electionMs() * 5);
    } catch (err) {
      throw toPlaneError(err);
    }
  }

  /** Creates a collection cluster-wide (through the metadata group) and returns its spec. */
  async createCollection(input: CreateCollectionRequest): Promise<CreateCollectionRequest> {
    let spec = normalizeCollectionSpec(input);
    if (spec.shardType === "raft") {
      // Re-creating a placed collection (ODGM_COLLECTION at every start) keeps its placement.
      const existing = this.o.registry.get(spec.name);
      if (spec.shardAssignments.length === 0 && existing?.shardType === "raft") {
        spec.shardAssignments = existing.shardAssignments;
      }
      spec = placeCollection(spec, [...this.addresses.keys()]);
    }
    const { result, local } = await this.proposeMeta(
      encodeMetaCommand(createCollectionCommand(spec)),
    );
    if (local && result !== undefined) throw result;
    if (!local && result !== null && typeof result === "object" && "code" in result) {
      const r = result as { code: string; message: string };
      throw new OdgmError(
        r.code === "collection_exists" ? "collection_exists" : "invalid_collection",
        r.message,
      );
    }
    return this.o.registry.get(spec.name) ?? spec;
  }

  /** Records a member's address cluster-wide. */
  async setMember(id: number, url: string): Promise<void> {
    const scheme = this.o.peerTls === undefined ? "http:" : "https:";
    if (new URL(url).protocol !== scheme) {
      throw new DataPlaneError(
        "invalid_argument",
        `member ${id}: this cluster's members are ${scheme}// URLs (${this.o.peerTls === undefined ? "mutual TLS is not configured" : "mutual TLS"}), got ${url}`,
      );
    }
    await this.proposeMeta(encodeMetaCommand({ setMember: { id, url } }));
  }

  /**
   * Proposes a metadata command and, when the leader applied it elsewhere, waits (bounded)
   * until this node has applied it too: a caller's next request to this node (writing to
   * the collection it created, adding the member it recorded) finds it here.
   */
  private async proposeMeta(
    command: Uint8Array,
  ): Promise<{ result: unknown; local: boolean; index: number }> {
    const out = await this.propose(META_GROUP, command);
    if (!out.local) {
      const applied = () => this.meta.status().applied >= out.index || this.closed;
      await waitUntil(applied, this.electionMs() * 5, Math.min(20, this.o.config.tickMs));
    }
    return out;
  }

  /**
   * Changes the membership of `group` (or, with `"*"`, of the metadata group and every
   * raft-collection partition) through each group's leader, wherever it runs.
   */
  async changeMembership(
    group: string,
    change: ChangeMembershipRequest_Change,
    nodeId: number,
  ): Promise<Map<string, ConfState>> {
    const joins =
      change === ChangeMembershipRequest_Change.ADD_LEARNER ||
      change === ChangeMembershipRequest_Change.PROMOTE ||
      change === ChangeMembershipRequest_Change.TRANSFER_LEADER;
    if (joins && !this.addresses.has(nodeId)) {
      throw new DataPlaneError(
        "failed_precondition",
        `node ${nodeId} is not a member of the cluster: record its address first (POST /api/cluster/members)`,
      );
    }
    const ids =
      group === "*"
        ? [
            META_GROUP,
            ...this.o.registry
              .list()
              .filter((c) => c.shardType === "raft")
              .flatMap((c) =>
                Array.from({ length: c.partitionCount }, (_, p) => groupIdOf(c.name, p)),
              ),
          ]
        : [group];
    if (group !== "*" && group !== META_GROUP && this.raftSpecOf(group) === undefined) {
      throw new DataPlaneError(
        "not_found",
        `no raft group ${group}: expected "meta", "*" or "<raft collection>/<partition>"`,
      );
    }
    const out = new Map<string, ConfState>();
    for (const id of ids) out.set(id, await this.changeOne(id, change, nodeId));
    return out;
  }

  private async changeOne(
    group: string,
    change: ChangeMembershipRequest_Change,
    nodeId: number,
  ): Promise<ConfState> {
    const local = this.groups.get(group);
    // Ask the leader (or, not knowing it, the group's replicas) until one leads: this node
    // first whenever it leads. A refusal for the moment (leadership moving, a change still
    // pending, no leader yet) is asked again; a final one is the answer.
    const candidates = new Set<number>();
    if (local !== undefined && local.leader !== 0) candidates.add(local.leader);
    for (const r of this.replicaSets.get(group)?.voters ?? []) candidates.add(r);
    for (const r of this.placedReplicas(group)) candidates.add(r);
    for (const id of this.addresses.keys()) candidates.add(id);
    candidates.delete(this.nodeId);
    const deadline = Date.now() + this.electionMs() * 10;
    let last: unknown;
    while (Date.now() < deadline) {
      const leadsHere = this.groups.get(group)?.isLeader === true;
      for (const id of leadsHere ? [this.nodeId, ...candidates] : candidates) {
        try {
          return id === this.nodeId
            ? await this.changeLocal(group, change, nodeId)
            : await this.changeRemote(id, group, change, nodeId);
        } catch (err) {
          last = id === this.nodeId ? toPlaneError(err) : fromRemoteError(err);
          if (isDataPlaneError(last) && FINAL_REFUSALS.has(last.code)) throw last;
        }
      }
      await new Promise((r) => setTimeout(r, this.o.config.tickMs * 2));
    }
    throw toPlaneError(
      last ?? new DataPlaneError("unavailable", `no leader of group ${group} answered`),
    );
  }

  /** Asks node `id` to change the membership of `group`, which it leads. */
  private async changeRemote(
    id: number,
    group: string,
    change: ChangeMembershipRequest_Change,
    nodeId: number,
  ): Promise<ConfState> {
    const res = await this.peerClient(id).raft.changeMembership(
      { group, change, nodeId: BigInt(nodeId) },
      // A promotion may wait for its learner to catch up first.
      {
        timeoutMs:
          this.electionMs() * 5 +
          (change === ChangeMembershipRequest_Change.PROMOTE ? PROMOTE_WAIT_MS : 0),
      },
    );
    const c = res.confState ?? create(RaftConfStateSchema);
    const n = (xs: readonly bigint[]) => xs.map(Number);
    return {
      voters: n(c.voters),
      learners: n(c.learners),
      votersOutgoing: n(c.votersOutgoing),
      learnersNext: n(c.learnersNext),
      autoLeave: c.autoLeave,
    };
  }

  /** Changes the membership of a group this node leads; resolves with the new membership. */
  private async changeLocal(
    group: string,
    change: ChangeMembershipRequest_Change,
    nodeId: number,
  ): Promise<ConfState> {
    const g = this.groups.get(group);
    if (g === undefined)
      throw new DataPlaneError("not_found", `this node does not host group ${group}`);
    if (!Number.isSafeInteger(nodeId) || nodeId < 1) {
      throw new DataPlaneError(
        "invalid_argument",
        `node id must be a positive integer, got ${nodeId}`,
      );
    }
    const single = (type: "add_voter" | "add_learner" | "remove") =>
      g.proposeConfChange({ changes: [{ type, nodeId }], transition: "auto" });
    const conf = g.appliedConf().conf;
    const roles = rolesOf(conf);
    const voter = roles.voters.includes(nodeId);
    const learner = roles.learners.includes(nodeId);
    const refuse = (why: string, hint = "") =>
      new DataPlaneError("failed_precondition", `node ${nodeId} ${why} of group ${group}${hint}`);
    switch (change) {
      case ChangeMembershipRequest_Change.ADD_LEARNER:
        // Raft would demote a voter to a learner: not what "add" asks for.
        if (voter) throw refuse("is already a voter");
        if (!learner) await single("add_learner");
        break;
      case ChangeMembershipRequest_Change.PROMOTE:
        if (voter) break;
        if (!learner) throw refuse("is not a learner", ": add it with add_learner first");
        await this.caughtUp(g, nodeId);
        await single("add_voter");
        break;
      case ChangeMembershipRequest_Change.REMOVE:
        if (!voter && !learner) break;
        if (voter && conf.voters.length === 1 && conf.votersOutgoing.length === 0) {
          throw refuse("is the only voter");
        }
        await single("remove");
        break;
      case ChangeMembershipRequest_Change.TRANSFER_LEADER: {
        if (!voter) throw refuse("is not a voter");
        g.transferLeader(nodeId);
        await waitUntil(() => g.leader === nodeId, this.electionMs() * 3, 20);
        if (g.leader !== nodeId) {
          throw new DataPlaneError(
            "unavailable",
            `leadership of ${group} did not move to node ${nodeId}`,
          );
        }
        break;
      }
      default:
        throw new DataPlaneError("invalid_argument", `unknown membership change ${change}`);
    }
    // The membership as applied: the core's own (status) takes the change only once the
    // Ready that carried it is done, after the proposal is answered.
    return g.appliedConf().conf;
  }

  /**
   * Waits (at most {@link PROMOTE_WAIT_MS}) until learner `nodeId` has acknowledged every
   * entry committed when asked: promoting a learner still catching up (a snapshot on its
   * way, say) would count a voter that cannot vote yet toward every quorum.
   */
  private async caughtUp(g: RaftGroup<unknown>, nodeId: number): Promise<void> {
    const target = g.status().commit;
    const matched = () => g.status().match.get(nodeId) ?? 0;
    await waitUntil(
      () => !g.isLeader || matched() >= target,
      PROMOTE_WAIT_MS,
      this.o.config.tickMs,
    );
    if (!g.isLeader) throw notLeader(g.id, g.leader);
    if (matched() < target) {
      throw new DataPlaneError(
        "failed_precondition",
        `learner ${nodeId} of group ${g.id} has acknowledged ${matched()} of the ${target} entries committed when its promotion was asked, after ${PROMOTE_WAIT_MS / 1000} s; promote it once it has caught up`,
      );
    }
  }

  /**
   * Whether to deliver a batch of peer `from`: not when the metadata group records the peer
   * under another incarnation. Its data directory was then wiped or replaced, so it
   * remembers none of the votes it cast or the entries it acknowledged, and counting it
   * toward a quorum could elect a leader without committed entries, or a second leader in
   * a term. It is refused until it is removed and added back. Also notes a peer addressing
   * this node by another incarnation than its own ({@link failure}).
   */
  private admit(from: number, incarnations: { from: number; to: number }): boolean {
    this.addressedAs.note(from, incarnations.to, Date.now());
    const recorded = this.incarnations.get(from);
    // 0: a node of a version that does not send it.
    if (recorded === undefined || incarnations.from === 0 || incarnations.from === recorded) {
      return true;
    }
    this.o.hooks?.onRefused?.(from);
    const key = `${from}/${incarnations.from}`;
    if (!this.refusalsLogged.has(key)) {
      this.refusalsLogged.add(key);
      this.o.logger.warn(
        { peer: from, incarnation: incarnations.from, recorded },
        `refusing the Raft messages of node ${from}: its data directory is incarnation ${incarnations.from}, not ${recorded} as the cluster records; it was wiped or replaced and remembers none of its votes or acknowledged entries. Remove node ${from} from the cluster and add it back`,
      );
    }
    return false;
  }

  /**
   * Why the cluster refuses this node, or `undefined`: the metadata group records another
   * incarnation for its id, or a peer goes on addressing it by another one (it refuses this
   * node's messages; this node may not have the metadata group's log to see the record).
   */
  failure(): string | undefined {
    let recorded =
      this.recording.state === "refused"
        ? this.recording.recorded
        : this.incarnations.get(this.nodeId);
    let by = "";
    if (recorded === undefined || recorded === this.incarnation) {
      const peer = this.addressedAs.misaddressedBy(Date.now());
      recorded = peer?.incarnation;
      by = peer === undefined ? "" : ` (node ${peer.peer} addresses it so)`;
    }
    if (recorded === undefined) return undefined;
    return `the cluster knows node ${this.nodeId} as incarnation ${recorded}${by}, but this data directory is incarnation ${this.incarnation}: it was wiped or replaced, so the other nodes refuse its Raft messages. Remove node ${this.nodeId} from the cluster (group "*") and add it back`;
  }

  private logFailure(): void {
    const failure = this.failure();
    if (failure !== undefined && failure !== this.failureLogged) {
      this.o.logger.error({ incarnation: this.incarnation }, failure);
    }
    this.failureLogged = failure;
  }

  /**
   * Records this node's incarnation in the metadata group, once it is a member of that group
   * and none is recorded (a first start, or a node added back after it was removed).
   */
  private recordIncarnation(): void {
    if (this.recording.state !== "pending" || this.closed || this.incarnations.has(this.nodeId)) {
      return;
    }
    const { voters, learners } = rolesOf(this.meta.appliedConf().conf);
    if (this.meta.leader === 0 || ![...voters, ...learners].includes(this.nodeId)) return;
    this.recording = { state: "proposing" };
    const cmd = { setIncarnation: { id: this.nodeId, incarnation: this.incarnation } };
    this.propose(META_GROUP, encodeMetaCommand(cmd)).then(
      ({ result }) => {
        // Refused: another incarnation is recorded, which this node's copy may not show.
        const recorded = refusedForIncarnation(result);
        this.recording =
          recorded === undefined ? { state: "proposed" } : { state: "refused", recorded };
        if (recorded === undefined) {
          this.o.logger.info({ incarnation: this.incarnation }, "recorded this node's incarnation");
        }
      },
      (err: unknown) => {
        this.recording = { state: "pending" };
        this.o.logger.debug({ err }, "could not record this node's incarnation; will retry");
      },
    );
  }

  status(): ClusterStatus {
    return {
      nodeId: this.nodeId,
      incarnation: this.incarnation,
      failure: this.failure(),
      members: [...this.addresses]
        .map(([id, url]) => ({ id, url, incarnation: this.incarnations.get(id) ?? 0 }))
        .sort((a, b) => a.id - b.id),
      groups: [...this.groups.values()]
        .map((g) => g.status())
        .sort((a, b) => (a.group < b.group ? -1 : 1)),
      replicas: [...this.replicaSets]
        .map(([group, r]) => ({ group, ...r }))
        .sort((a, b) => (a.group < b.group ? -1 : 1)),
      transport: this.transport.stats(),
      ...(this.logs.stats === undefined ? {} : { log: this.logs.stats() }),
    };
  }

  /**
   * The first step of a graceful stop: hands the leadership of every group this node leads
   * to its most caught-up other voter that answers (raft-log's leadership transfer), and waits until it
   * has moved, `maxWaitMs` passed, or three election timeouts (raft-log abandons a transfer
   * after one). Clients then see a leader change of a round trip or
   * two instead of an election timeout. Raft keeps running meanwhile, so proposals already
   * in flight here still commit and are answered. Returns the groups whose leadership moved,
   * and those this node still leads although they have other voters (voters that are silent,
   * and transfers that did not finish in time); a group whose only voter is this node is in
   * neither list.
   */
  async handOffLeadership(maxWaitMs: number): Promise<{ moved: string[]; kept: string[] }> {
    this.handingOff = true;
    const connected = new Set(
      this.transport
        .stats()
        .filter((p) => p.connected)
        .map((p) => p.peer),
    );
    const handing: { group: RaftGroup<unknown>; to: number }[] = [];
    for (const g of this.groups.values()) {
      if (!g.isLeader) continue;
      const st = g.status();
      const target = mostCaughtUpVoter(st, (id) => this.answers(st, id) && connected.has(id));
      if (target === 0) continue;
      try {
        g.transferLeader(target);
        handing.push({ group: g, to: target });
      } catch (err) {
        this.o.logger.warn({ err, group: g.id }, "could not hand off leadership");
      }
    }
    // A transfer is waited for while its group is led here, transferring, and its target
    // connected (a target that stopped too cannot take over).
    const waiting = () =>
      handing.some(
        ({ group, to }) =>
          group.isLeader &&
          group.status().leadTransferee === to &&
          this.transport.stats().some((p) => p.peer === to && p.connected),
      );
    await waitUntil(
      () => !waiting() || this.closed,
      Math.min(maxWaitMs, this.electionMs() * 3),
      10,
    );
    return {
      moved: handing.filter(({ group }) => !group.isLeader).map(({ group }) => group.id),
      kept: [...this.groups.values()]
        .filter((g) => g.isLeader && g.status().confState.voters.some((v) => v !== this.nodeId))
        .map((g) => g.id),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopping.abort();
    if (this.timer !== undefined) clearInterval(this.timer);
    this.transport.close();
    for (const p of this.peers.values()) p.session.abort();
    for (const g of this.groups.values()) await g.close();
    await this.logs.close();
  }
}

function toWireConf(c: ConfState) {
  return create(RaftConfStateSchema, {
    voters: c.voters.map(BigInt),
    learners: c.learners.map(BigInt),
    votersOutgoing: c.votersOutgoing.map(BigInt),
    learnersNext: c.learnersNext.map(BigInt),
    autoLeave: c.autoLeave,
  });
}

/** Any failure of the replicated path as the data plane's error. */
export function toPlaneError(err: unknown): unknown {
  if (isDataPlaneError(err) || err instanceof ConnectError) return err;
  if (isStoreError(err)) {
    switch (err.code) {
      case "version_mismatch":
        return new DataPlaneError("version_mismatch", err.message, {
          cause: err,
          ...(err.expected === undefined ? {} : { expected: err.expected }),
          ...(err.actual === undefined ? {} : { actual: err.actual }),
        });
      case "invalid_argument":
        return new DataPlaneError("invalid_argument", err.message, { cause: err });
      case "not_found":
        return new DataPlaneError("not_found", err.message, { cause: err });
      case "too_large":
        return new DataPlaneError("too_large", err.message, { cause: err });
      default:
        return new DataPlaneError("unavailable", err.message, { cause: err });
    }
  }
  if (isRaftError(err)) {
    if (err.code === "not_leader" || err.code === "no_leader") {
      return new DataPlaneError("not_leader", err.message, {
        cause: err,
        ...(err.leaderHint === undefined ? {} : { leaderHint: String(err.leaderHint) }),
      });
    }
    return new DataPlaneError("unavailable", err.message, { cause: err });
  }
  if (isOdgmError(err)) return err;
  return err;
}

/** The error a follower raises for a proposal its leader (node `from`) refused. */
function refusalError(r: ProposeRefusal, from: number): DataPlaneError {
  const code = isDataPlaneErrorCode(r.code) ? r.code : "internal";
  return new DataPlaneError(
    code,
    code === r.code ? r.message : `node ${from} refused a proposal: ${r.code}: ${r.message}`,
    {
      ...(r.leaderHint === "" ? {} : { leaderHint: r.leaderHint }),
      ...(r.expectedVersion === undefined ? {} : { expected: r.expectedVersion }),
      ...(r.actualVersion === undefined ? {} : { actual: r.actualVersion }),
    },
  );
}

/** A result crossing nodes as JSON: a mutation's versions and changes, or a refusal. */
function resultJson(result: unknown): unknown {
  if (result === undefined) return null;
  if (isOdgmError(result)) return { code: result.code, message: result.message };
  if (result instanceof Error) {
    // Refusals travel as errors: the RPC maps them to a status.
    throw toPlaneError(result);
  }
  const r = result as MutationResult;
  return {
    versionBefore: String(r.versionBefore),
    versionAfter: String(r.versionAfter),
    changed: r.changed,
    wrote: r.wrote,
    existedBefore: r.existedBefore,
    exists: r.exists,
  };
}

function mutationFromJson(json: unknown): MutationResult {
  const r = json as {
    versionBefore: string;
    versionAfter: string;
    changed: MutationResult["changed"];
    wrote: boolean;
    existedBefore: boolean;
    exists: boolean;
  };
  return {
    versionBefore: BigInt(r.versionBefore),
    versionAfter: BigInt(r.versionAfter),
    changed: r.changed,
    wrote: r.wrote,
    existedBefore: r.existedBefore,
    exists: r.exists,
    // Events leave from the leader, which has the config.
    eventConfig: undefined,
  };
}

/** The voters (of both halves of a joint configuration) and the learners of `conf`. */
function rolesOf(conf: ConfState): { voters: number[]; learners: number[] } {
  const voters = [...new Set([...conf.voters, ...conf.votersOutgoing])];
  const learners = [...new Set([...conf.learners, ...conf.learnersNext])].filter(
    (n) => !voters.includes(n),
  );
  return { voters, learners };
}

/** Resolves once `done()` holds or `timeoutMs` has passed, checking every `stepMs`. */
async function waitUntil(done: () => boolean, timeoutMs: number, stepMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, stepMs));
}

/** Whether two lists name the same nodes. */
function sameNodes(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((n) => b.includes(n));
}

/** Whether `conf` includes `node` in any role (voter, learner, outgoing or incoming). */
function includes(conf: ConfState, node: number): boolean {
  return (
    conf.voters.includes(node) ||
    conf.learners.includes(node) ||
    conf.votersOutgoing.includes(node) ||
    conf.learnersNext.includes(node)
  );
}
