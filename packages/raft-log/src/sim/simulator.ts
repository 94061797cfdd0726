import { type CheckVerdict, checkOperations } from "../checker/check-operations.js";
import { createHistoryRecorder, type HistoryRecorder } from "../checker/history-recorder.js";
import { type KvInput, type KvOutput, kvModel } from "../checker/kv-model.js";
import { applyConfChange } from "../core/conf-change.js";
import { createInvariantChecker, type InvariantSubject } from "../core/invariants.js";
import type { Message } from "../core/message.js";
import { createPrng } from "../core/prng.js";
import {
  createRaft,
  type Raft,
  type RaftStatus,
  type ReadOnlyOption,
  type Ready,
  stablyCommitted,
} from "../core/raft.js";
import { isRaftError } from "../core/raft-error.js";
import { createMemoryLogStore, type MemoryLogStore } from "../storage/memory-log-store.js";
import {
  type ConfChange,
  type ConfState,
  type Entry,
  type HardState,
  type Snapshot,
  snapshotBytes,
} from "../types.js";
import { decodeCommand, encodeCommand, KvStateMachine, MARKER_PREFIX } from "./kv-state-machine.js";
import { SimNetwork } from "./sim-network.js";

/** Which check caught a failure. */
export type SimCheck =
  /** A scenario-28 invariant (the core's invariant checker). */
  | "invariant"
  /** A durable promise was lost: a term or vote revealed in a message, or an acked entry. */
  | "durability"
  /**
   * A leader advanced its commit index against the commit rules: to an entry of an earlier
   * term (§5.4.2, scenario 25), or to an index not stored by a majority of each of its voter
   * sets (scenario 33 for joint configurations).
   */
  | "commit_rule"
  /** The core threw an internal assertion (`invariant_violation` / `invalid_state`). */
  | "core_assertion"
  /**
   * A node's state machine was handed an entry other than the one after the last it
   * applied (or installed by a snapshot): one applied twice, skipped, or out of order.
   */
  | "apply_order"
  /** After healing, no leader committed a proposal within 10 election timeouts. */
  | "liveness"
  /** The client history is not linearizable (WGL checker, KV model). */
  | "linearizability"
  /** Anything else thrown (a bug in the simulator or an unexpected error). */
  | "harness";

/** Options of {@link runSimulation}. */
export interface SimOptions {
  /** The seed; everything (faults, timeouts, workload) derives from it. */
  readonly seed: number;
  /** Smallest cluster size (nodes, including non-voting spares). Default 3. */
  readonly minNodes?: number;
  /** Largest cluster size. Default 7. The size of a seed is `minNodes + seed mod span`. */
  readonly maxNodes?: number;
  /** Ticks of the fault phase. Default 100. */
  readonly ticks?: number;
  /** Step budget of the linearizability check. Default 1,000,000. */
  readonly maxCheckSteps?: number;
  /**
   * Drops are silent (a datagram transport): no one is told that a message was lost, and
   * snapshot sends are never reported. False: the transport reports every lost message to
   * the leader concerned (`reportUnreachable`, `reportSnapshot(id, false)`) and a delivered
   * last snapshot chunk as `reportSnapshot(id, true)` — etcd's transport contract. Default:
   * chosen per seed ({@link silentDropsForSeed}, about 30 % of the seeds silent), because
   * real networks lose messages silently and liveness must hold either way.
   */
  readonly silentDrops?: boolean;
  /**
   * Check the leader commit rules after every step (see {@link SimCheck} `commit_rule`).
   * Default true; off shows what the end-to-end checks alone catch.
   */
  readonly commitRuleCheck?: boolean;
  /** With `trace`: also print every delivered message. */
  readonly traceMessages?: boolean;
  /** Print a trace of fault events to this sink (debugging a replay). */
  readonly trace?: (line: string) => void;
}

/** A failed seed. */
export interface SimFailure {
  readonly check: SimCheck;
  readonly message: string;
  /** Tick at which it was detected. */
  readonly tick: number;
}

/** Outcome of one seed. */
export interface SimResult {
  readonly seed: number;
  readonly nodes: number;
  readonly failure?: SimFailure;
  /** Linearizability verdict ("unknown" when the step budget ran out; not a failure). */
  readonly verdict: CheckVerdict | "skipped";
  readonly stats: SimStats;
}

/** Counters of one run (for the summary and to show that faults really happened). */
export interface SimStats {
  ticks: number;
  messages: number;
  dropped: number;
  crashes: number;
  partitions: number;
  compactions: number;
  snapshotsInstalled: number;
  /**
   * Committed entries applied while a Ready's sync was in flight (`earlyApply` seeds): its
   * own stably committed ones, and those taken while it was out.
   */
  appliedEarly: number;
  confChanges: number;
  transfers: number;
  leaderChanges: number;
  opsOk: number;
  opsPending: number;
  checks: number;
}

/** Simulator steps per Raft tick (message and disk delays are counted in steps). */
export const STEPS_PER_TICK = 4;

/** A compact one-line rendering of a message (for traces). */
export function describeMessage(m: Message): string {
  const parts = [`${m.type} ${m.from}→${m.to} t${m.term}`];
  if (m.index !== 0 || m.logTerm !== 0) parts.push(`i${m.index}/lt${m.logTerm}`);
  if (m.entries.length > 0)
    parts.push(`ents[${m.entries.map((e) => `${e.index}@${e.term}`).join(",")}]`);
  if (m.commit !== 0) parts.push(`c${m.commit}`);
  if (m.reject) parts.push(`REJECT hint${m.rejectHint}`);
  if (m.snapshot !== undefined) {
    parts.push(
      `snap${m.snapshot.metadata.index}@${m.snapshot.metadata.term} off${m.chunkOffset}/${m.chunkTotal}`,
    );
  } else if (m.type === "snap_resp") parts.push(`off${m.chunkOffset}`);
  return parts.join(" ");
}

class Failure extends Error {
  constructor(
    readonly check: SimCheck,
    message: string,
  ) {
    super(message);
  }
}

interface Inflight {
  readonly rd: Ready;
  readonly held: Message[];
  readonly at: number;
  /** How many of its committed entries were applied before its sync (`earlyApply`). */
  readonly applied: number;
}

interface ClientOp {
  readonly seq: number;
  readonly input: KvInput;
  readonly histId: number;
  /** Node the current attempt went to and when; retried after a timeout. */
  node: number;
  sentAt: number;
  readCtx: string;
}

interface Client {
  readonly id: number;
  op: ClientOp | undefined;
  nextSeq: number;
  idleUntil: number;
  /** Leader guess. */
  target: number;
}

interface SimNode {
  readonly id: number;
  readonly store: MemoryLogStore;
  raft: Raft | undefined;
  incarnation: number;
  kv: KvStateMachine;
  /** The index `kv` holds everything up to (its snapshot's, then the last entry applied). */
  kvIndex: number;
  inflight: Inflight | undefined;
  /** Hard state of the last Ready handed out (for the early-send rule). */
  lastHard: HardState;
  restartAt: number;
  /** Pending writes: `${client}:${seq}` → client id. */
  waiters: Map<string, number>;
  /** Pending reads: context → client id. */
  readWaiters: Map<string, number>;
  // Durable promises, checked on restart and live.
  sentTerm: number;
  votePromise: { term: number; to: number };
  ack: { term: number; index: number };
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const noop = (): void => {};
const EXPECTED_CODES = new Set([
  "no_leader",
  "not_leader",
  "transfer_in_progress",
  "proposal_dropped",
  "conf_change_pending",
  "lease_expired",
]);

/** The replay command for a seed (what a failure prints). */
export function replayCommand(
  seed: number,
  minNodes = 3,
  maxNodes = 7,
  extra: { readonly ticks?: number; readonly silentDrops?: boolean } = {},
): string {
  const ticks = extra.ticks !== undefined ? ` --ticks ${extra.ticks}` : "";
  const silent =
    extra.silentDrops === true
      ? " --silent-drops"
      : extra.silentDrops === false
        ? " --reporting"
        : "";
  return `pnpm --filter @oprc/raft-log sim --start ${seed} --seeds 1 --nodes ${minNodes}-${maxNodes}${ticks}${silent} --trace`;
}

/**
 * Whether a seed's transport drops messages silently when {@link SimOptions.silentDrops} is
 * not given: about 30 % of the seeds.
 */
export function silentDropsForSeed(seed: number): boolean {
  // A hash of the seed, independent of the seed's PRNG stream (so the rest of the fault mix
  // of a seed does not depend on this choice).
  return (Math.imul(seed ^ 0x3c6ef372, 0x85ebca6b) >>> 0) % 100 < 30;
}

/** Cluster size of `seed` for a node range. */
export function nodesForSeed(seed: number, minNodes = 3, maxNodes = 7): number {
  return minNodes + (seed % (maxNodes - minNodes + 1));
}

/**
 * Runs one seeded simulation: a cluster of pure Raft cores on simulated disks and a faulty
 * simulated network, with clients, fault injection, the invariant checker after every step,
 * a liveness phase and a linearizability check of the client history. Deterministic: the
 * same options give the same result.
 *
 * @example
 * ```ts
 * const r = runSimulation({ seed: 42 });
 * if (r.failure) console.log(r.failure.check, r.failure.message, replayCommand(42));
 * ```
 */
export function runSimulation(options: SimOptions): SimResult {
  // Expected refusals (no_leader, ...) are thrown as errors by the core; capturing their
  // stacks costs more than the rest of a run, so stacks are off unless tracing.
  const limit = Error.stackTraceLimit;
  if (options.trace === undefined) Error.stackTraceLimit = 0;
  try {
    return new Simulation(options).run();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

class Simulation {
  private readonly seed: number;
  private readonly n: number;
  private readonly rnd: () => number;
  private readonly net: SimNetwork;
  private readonly nodes: SimNode[] = [];
  private readonly ids: number[];
  private readonly clients: Client[] = [];
  private readonly checker = createInvariantChecker();
  private readonly rec: HistoryRecorder<KvInput, KvOutput> = createHistoryRecorder();
  private readonly stats: SimStats = {
    ticks: 0,
    messages: 0,
    dropped: 0,
    crashes: 0,
    partitions: 0,
    compactions: 0,
    snapshotsInstalled: 0,
    appliedEarly: 0,
    confChanges: 0,
    transfers: 0,
    leaderChanges: 0,
    opsOk: 0,
    opsPending: 0,
    checks: 0,
  };
  private now = 0;
  private tickNo = 0;
  private ctxCounter = 0;
  private lastLeader = 0;
  private markerApplied = false;
  private readonly trace: ((line: string) => void) | undefined;
  private readonly traceMessages: boolean;

  // Per-seed profile.
  private readonly electionTick: number;
  private readonly heartbeatTick: number;
  private readonly preVote: boolean;
  private readonly checkQuorum: boolean;
  private readonly readOnly: ReadOnlyOption;
  private readonly maxSizePerMsg: number;
  private readonly maxInflight: number;
  private readonly chunkSize: number;
  private readonly earlySend: boolean;
  /**
   * Whether the committed entries a node already holds are applied as soon as their Ready is
   * handed out, while its sync is in flight (`stablyCommitted`), and those committed while it
   * is (`takeCommitted`), as odgm's driver does; or after the sync. From a PRNG of its own,
   * so the fault sequence of every seed is as before.
   */
  private readonly earlyApply: boolean;
  /**
   * Leaders run with `deferCommitAppends`: a new commit index reaches the followers with the
   * next appends, the next heartbeat, or the `sendCommit` this driver calls at every tick
   * (odgm calls it 25 ms after, unless appends told them first). From a PRNG of its own, like `earlyApply`.
   */
  private readonly deferCommit: boolean;
  private readonly maxDisk: number;
  private readonly pCrash: number;
  private readonly storm: boolean;
  /** Faults planned for a later tick (membership-aware partitions). */
  private readonly scheduled: { at: number; run: () => void }[] = [];
  private readonly pPartition: number;
  private readonly pHeal: number;
  private readonly pCompact: number;
  private readonly pChurn: number;
  private readonly pTransfer: number;
  /**
   * Deposed-leader faults draw from their own PRNG, so that adding them did not change the
   * fault sequence of any seed in which they do not fire.
   */
  private readonly rndStale: () => number;
  private readonly pStaleLeader: number;
  private staleActive = false;
  private readonly keys: string[];
  private readonly ticks: number;
  private readonly maxCheckSteps: number;
  private faultsOn = true;
  private readonly commitRule: boolean;
  /** Last observation of each node incarnation as leader (commit rule check). */
  private readonly leaderSeen = new Map<number, { term: number; commit: number; conf: string }>();
  private readonly unreachable: [number, number][] = [];
  private readonly snapStatus: [number, number, boolean][] = [];
  private readonly reporting: boolean;
  private issuing = true;

  constructor(o: SimOptions) {
    this.seed = o.seed;
    const min = o.minNodes ?? 3;
    const max = o.maxNodes ?? 7;
    this.n = nodesForSeed(o.seed, min, max);
    this.rnd = createPrng(Math.imul(o.seed ^ 0x5bd1e995, 0x27d4eb2d) ^ 0x9e3779b9);
    this.trace = o.trace;
    this.traceMessages = o.traceMessages ?? false;
    this.commitRule = o.commitRuleCheck ?? true;
    this.ticks = o.ticks ?? 100;
    this.maxCheckSteps = o.maxCheckSteps ?? 1_000_000;
    const r = this.rnd;
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
    this.electionTick = pick([6, 8, 10]);
    this.heartbeatTick = pick([1, 1, 2]);
    this.preVote = r() < 0.8;
    this.checkQuorum = r() < 0.8;
    this.maxSizePerMsg = pick([1, 1, 64, 1 << 20]);
    this.maxInflight = pick([1, 2, 8, 256]);
    this.chunkSize = pick([8, 32, 1 << 20]);
    this.earlySend = r() < 0.5;
    this.maxDisk = pick([0, 1, 3, 6]);
    // A quarter of the seeds are "leader storms": frequent, short crashes, mostly of the
    // leader — the Figure 8 pattern (leaders that append and die before replicating).
    this.storm = r() < 0.25;
    this.pCrash = this.storm ? pick([0.1, 0.2]) : pick([0, 0.01, 0.03, 0.06]);
    this.pPartition = pick([0, 0.02, 0.05, 0.1]);
    this.pHeal = pick([0.03, 0.1, 0.25]);
    this.pCompact = pick([0, 0.02, 0.08]);
    this.pChurn = pick([0, 0.02, 0.06, 0.15]);
    this.pTransfer = pick([0, 0.01, 0.04]);
    this.rndStale = createPrng(Math.imul(o.seed ^ 0x68e31da4, 0x1b873593) ^ 0x85ebca6b);
    this.earlyApply = createPrng(Math.imul(o.seed ^ 0x3c6ef372, 0x1b873593) ^ 0x9e3779b9)() < 0.5;
    this.deferCommit = createPrng(Math.imul(o.seed ^ 0x510e527f, 0x1b873593) ^ 0x9b05688c)() < 0.5;
    this.pStaleLeader = [0, 0.02, 0.05][Math.floor(this.rndStale() * 3)] as number;
    // Lease reads assume bounded clock drift and no restarts within a lease: only in runs
    // without crashes, membership churn or transfers.
    this.readOnly =
      this.checkQuorum &&
      this.pCrash === 0 &&
      this.pChurn === 0 &&
      this.pTransfer === 0 &&
      r() < 0.5
        ? "lease_based"
        : "safe";
    this.keys = ["a", "b", "c"].slice(0, 1 + Math.floor(r() * 3));
    this.net = new SimNetwork(r, {
      drop: pick([0, 0.02, 0.08, 0.15]),
      duplicate: pick([0, 0.02, 0.08]),
      maxDelay: pick([1, 3, 8, 20]),
    });
    this.reporting = !(o.silentDrops ?? silentDropsForSeed(o.seed));
    if (this.reporting) {
      this.net.onDrop = (m) => {
        if (m.type === "snap") this.snapStatus.push([m.from, m.to, false]);
        else if (m.type === "app" || m.type === "heartbeat") {
          this.unreachable.push([m.from, m.to]);
        } else if (m.type === "app_resp" || m.type === "snap_resp" || m.type === "heartbeat_resp") {
          this.unreachable.push([m.to, m.from]);
        }
      };
    }
    this.ids = Array.from({ length: this.n }, (_, i) => i + 1);
    // Initial membership: at least 3 voters; the rest are learners or not yet members.
    const voterCount = Math.max(3, this.n - Math.floor(r() * (this.n - 2)));
    const voters = this.ids.slice(0, voterCount);
    const learners = this.ids.slice(voterCount).filter(() => r() < 0.5);
    const confState: ConfState = {
      voters,
      learners,
      votersOutgoing: [],
      learnersNext: [],
      autoLeave: false,
    };
    const boot: Snapshot = {
      metadata: { index: 1, term: 1, confState },
      data: new KvStateMachine().snapshot(),
    };
    for (const id of this.ids) {
      const store = createMemoryLogStore({ durability: "manual" });
      store.save({ snapshot: boot, hardState: { term: 1, vote: 0, commit: 1 } }).catch(noop);
      store.sync();
      this.nodes.push({
        id,
        store,
        raft: undefined,
        incarnation: 0,
        kv: new KvStateMachine(),
        kvIndex: boot.metadata.index,
        inflight: undefined,
        lastHard: { term: 1, vote: 0, commit: 1 },
        restartAt: -1,
        waiters: new Map(),
        readWaiters: new Map(),
        sentTerm: 0,
        votePromise: { term: 0, to: 0 },
        ack: { term: 0, index: 0 },
      });
    }
    const clientCount = 2 + Math.floor(r() * 4);
    for (let c = 1; c <= clientCount; c++) {
      this.clients.push({ id: c, op: undefined, nextSeq: 1, idleUntil: 0, target: pick(voters) });
    }
  }

  private log(line: string): void {
    this.trace?.(`[t${this.tickNo}] ${line}`);
  }

  private node(id: number): SimNode {
    return this.nodes[id - 1] as SimNode;
  }

  private pickOf<T>(xs: readonly T[]): T | undefined {
    if (xs.length === 0) return undefined;
    return xs[Math.floor(this.rnd() * xs.length)];
  }

  // ------------------------------------------------------------------ lifecycle

  run(): SimResult {
    let failure: SimFailure | undefined;
    let verdict: CheckVerdict | "skipped" = "skipped";
    try {
      for (const nd of this.nodes) this.start(nd);
      const total = this.ticks * STEPS_PER_TICK;
      for (; this.now < total; this.now++) this.step();
      this.liveness();
      const ops = this.rec.operations();
      this.stats.opsPending = ops.filter((o) => o.output === undefined).length;
      verdict = checkOperations(kvModel, ops, { maxSteps: this.maxCheckSteps });
      if (verdict === "illegal") {
        throw new Failure("linearizability", "client history is not linearizable (KV model)");
      }
    } catch (e) {
      if (e instanceof Failure) failure = { check: e.check, message: e.message, tick: this.tickNo };
      else if (isRaftError(e)) {
        const stack = this.trace !== undefined ? `\n${e.stack ?? ""}` : "";
        failure = { check: "core_assertion", message: `${e.message}${stack}`, tick: this.tickNo };
      } else {
        const msg = e instanceof Error ? `${e.message}\n${e.stack ?? ""}` : String(e);
        failure = { check: "harness", message: msg, tick: this.tickNo };
      }
    }
    this.stats.messages = this.net.sent;
    this.stats.dropped = this.net.dropped;
    this.stats.ticks = this.tickNo;
    this.stats.checks = this.checker.checks;
    return {
      seed: this.seed,
      nodes: this.n,
      verdict,
      stats: this.stats,
      ...(failure !== undefined ? { failure } : {}),
    };
  }

  private start(nd: SimNode): void {
    nd.incarnation++;
    const hs = nd.store.initialState().hardState;
    // Durable promises: a term revealed in any message, a granted vote and an acked entry
    // must all survive the crash.
    if (hs.term < nd.sentTerm) {
      throw new Failure(
        "durability",
        `node ${nd.id} restarted at term ${hs.term} after sending messages in term ${nd.sentTerm}`,
      );
    }
    if (
      nd.votePromise.term === hs.term &&
      nd.votePromise.term > 0 &&
      hs.vote !== nd.votePromise.to
    ) {
      throw new Failure(
        "durability",
        `node ${nd.id} lost its vote for ${nd.votePromise.to} in term ${hs.term} (has ${hs.vote})`,
      );
    }
    if (nd.ack.term === hs.term && nd.store.lastIndex() < nd.ack.index) {
      throw new Failure(
        "durability",
        `node ${nd.id} acked index ${nd.ack.index} in term ${hs.term} but restarted with last ${nd.store.lastIndex()}`,
      );
    }
    nd.kv = new KvStateMachine();
    nd.kv.restore(snapshotBytes(nd.store.snapshot().data));
    nd.kvIndex = nd.store.snapshot().metadata.index;
    nd.lastHard = hs;
    nd.inflight = undefined;
    nd.waiters.clear();
    nd.readWaiters.clear();
    nd.raft = createRaft({
      id: nd.id,
      storage: nd.store,
      random: createPrng(this.seed * 7919 + nd.id * 104729 + nd.incarnation * 15485863),
      electionTick: this.electionTick,
      heartbeatTick: this.heartbeatTick,
      preVote: this.preVote,
      checkQuorum: this.checkQuorum,
      readOnlyOption: this.readOnly,
      maxSizePerMsg: this.maxSizePerMsg,
      maxInflightMsgs: this.maxInflight,
      snapshotChunkSize: this.chunkSize,
      deferCommitAppends: this.deferCommit,
    });
    this.drive(nd);
  }

  private crash(nd: SimNode): void {
    if (nd.raft === undefined) return;
    this.log(`crash ${nd.id} (pending writes ${nd.store.pending})`);
    this.stats.crashes++;
    nd.store.crash();
    nd.raft = undefined;
    nd.inflight = undefined;
    nd.waiters.clear();
    nd.readWaiters.clear();
    const down = this.storm ? 1 : 3;
    nd.restartAt = this.now + Math.floor(this.rnd() * this.electionTick * down * STEPS_PER_TICK);
  }

  // ------------------------------------------------------------------ main loop

  private step(): void {
    let active = false;
    if (this.now % STEPS_PER_TICK === 0) {
      this.tickNo = this.now / STEPS_PER_TICK;
      if (this.faultsOn) this.faults();
      this.runClients();
      for (const nd of this.nodes) {
        if (nd.raft === undefined) {
          if (nd.restartAt <= this.now) this.start(nd);
          continue;
        }
        if (this.deferCommit && nd.raft.hasUnsentCommit()) nd.raft.sendCommit();
        nd.raft.tick();
        this.drive(nd);
      }
      active = true;
    }
    for (const m of this.net.due(this.now)) {
      const nd = this.node(m.to);
      if (nd.raft === undefined) {
        this.net.onDrop?.(m); // the receiver is down: the transport notices
        continue;
      }
      if (this.traceMessages) this.log(describeMessage(m));
      if (this.reporting && m.type === "snap" && m.snapshot !== undefined) {
        // The transport saw the last chunk of a snapshot through: report it sent (etcd's
        // ReportSnapshot contract); the leader then probes and, if needed, starts afresh.
        if (m.chunkOffset + m.snapshot.data.byteLength >= m.chunkTotal) {
          this.snapStatus.push([m.from, m.to, true]);
        }
      }
      nd.raft.step(m);
      this.drive(nd);
      active = true;
    }
    for (const [leader, peer, ok] of this.snapStatus.splice(0)) {
      const nd = this.node(leader);
      if (nd.raft?.role !== "leader") continue;
      nd.raft.reportSnapshot(peer, ok);
      this.drive(nd);
    }
    for (const [leader, peer] of this.unreachable.splice(0)) {
      const nd = this.node(leader);
      if (nd.raft?.role !== "leader") continue;
      nd.raft.reportUnreachable(peer);
      this.drive(nd);
    }
    for (const nd of this.nodes) {
      if (nd.inflight !== undefined && nd.inflight.at <= this.now) {
        this.completeSync(nd);
        active = true;
      }
    }
    if (active) this.check();
  }

  private check(): void {
    const subjects: InvariantSubject[] = [];
    for (const nd of this.nodes) {
      const raft = nd.raft;
      if (raft === undefined) continue;
      const st = raft.status();
      if (st.term === nd.ack.term && st.lastIndex < nd.ack.index && st.firstIndex <= nd.ack.index) {
        throw new Failure(
          "durability",
          `node ${nd.id} acked index ${nd.ack.index} in term ${st.term} but its log now ends at ${st.lastIndex}`,
        );
      }
      if (st.role === "leader" && st.id !== this.lastLeader) {
        this.lastLeader = st.id;
        this.stats.leaderChanges++;
        this.log(`leader ${st.id} term ${st.term}`);
      }
      const inc = nd.id * 1000 + nd.incarnation;
      const status: RaftStatus = { ...st, id: inc };
      // One slice of the whole retained log per check (the checker reads every index).
      const first = st.firstIndex;
      const ents = st.lastIndex >= first ? raft.log.slice(first, st.lastIndex + 1) : [];
      if (this.commitRule) this.checkCommitRule(nd, inc, st, ents);
      subjects.push({
        status: (): RaftStatus => status,
        entryAt: (i) => (i < first ? undefined : ents[i - first]),
      });
    }
    try {
      this.checker.check(subjects);
    } catch (e) {
      if (isRaftError(e) && e.code === "invariant_violation") {
        throw new Failure("invariant", `${e.message} (ids are node*1000+incarnation)`);
      }
      throw e;
    }
  }

  /**
   * A leader's commit index may only move (within its term, with an unchanged
   * configuration) to an entry of its own term that a majority of each voter set stores.
   */
  private checkCommitRule(
    nd: SimNode,
    inc: number,
    st: RaftStatus,
    ents: readonly { readonly term: number }[],
  ): void {
    if (st.role !== "leader") {
      this.leaderSeen.delete(inc);
      return;
    }
    const cs = st.confState;
    const conf = `${cs.voters.join(",")}|${cs.votersOutgoing.join(",")}`;
    const prev = this.leaderSeen.get(inc);
    this.leaderSeen.set(inc, { term: st.term, commit: st.commit, conf });
    if (prev === undefined || prev.term !== st.term || st.commit <= prev.commit) return;
    const e = ents[st.commit - st.firstIndex];
    if (e !== undefined && e.term !== st.term) {
      throw new Failure(
        "commit_rule",
        `leader ${nd.id} (term ${st.term}) advanced commit ${prev.commit} → ${st.commit}, an entry of term ${e.term} (§5.4.2)`,
      );
    }
    if (prev.conf !== conf) return;
    for (const [name, set] of [
      ["C_new", cs.voters],
      ["C_old", cs.votersOutgoing],
    ] as const) {
      if (set.length === 0) continue;
      const have = set.filter((id) => (st.match.get(id) ?? 0) >= st.commit).length;
      if (have * 2 <= set.length) {
        throw new Failure(
          "commit_rule",
          `leader ${nd.id} (term ${st.term}) committed ${st.commit} stored by ${have} of ${name} {${set.join(",")}}`,
        );
      }
    }
  }

  // ------------------------------------------------------------------ Ready handling

  private drive(nd: SimNode): void {
    if (this.earlyApply && nd.raft !== undefined && nd.inflight !== undefined) {
      // Committed since the Ready in flight was handed out: applied without waiting for it.
      const taken = nd.raft.takeCommitted();
      this.applyCommitted(nd, taken);
      this.stats.appliedEarly += taken.length;
    }
    while (nd.raft !== undefined && nd.inflight === undefined && nd.raft.hasReady()) {
      const raft = nd.raft;
      const rd = raft.ready();
      if (this.traceMessages) {
        const st = raft.status();
        this.log(
          `ready ${nd.id}: ents[${rd.entries.map((e) => `${e.index}@${e.term}`).join(",")}]${rd.snapshot !== undefined ? ` snap${rd.snapshot.metadata.index}` : ""}${rd.hardState !== undefined ? ` hs${rd.hardState.term}/${rd.hardState.vote}/${rd.hardState.commit}` : ""} apply${rd.committedEntries.length} msgs${rd.messages.length} sync${rd.mustSync} (log [${st.firstIndex},${st.lastIndex}] c${st.commit}; store [${nd.store.firstIndex()},${nd.store.lastIndex()}] snap${nd.store.snapshot().metadata.index})`,
        );
      }
      const persist =
        rd.snapshot !== undefined || rd.entries.length > 0 || rd.hardState !== undefined;
      if (persist) {
        nd.store
          .save({
            entries: rd.entries,
            ...(rd.hardState !== undefined ? { hardState: rd.hardState } : {}),
            ...(rd.snapshot !== undefined ? { snapshot: rd.snapshot } : {}),
          })
          .catch(noop);
      }
      const prev = nd.lastHard;
      if (rd.hardState !== undefined) nd.lastHard = rd.hardState;
      if (!rd.mustSync) {
        this.finish(nd, rd, rd.messages, 0);
        continue;
      }
      const applied = this.earlyApply ? stablyCommitted(rd) : 0;
      this.applyCommitted(nd, rd.committedEntries.slice(0, applied));
      this.stats.appliedEarly += applied;
      const termVoteChanged =
        rd.hardState !== undefined &&
        (rd.hardState.term !== prev.term || rd.hardState.vote !== prev.vote);
      const early = this.earlySend && raft.role === "leader" && !termVoteChanged;
      const held: Message[] = [];
      for (const m of rd.messages) {
        if (early && (m.type === "app" || m.type === "heartbeat" || m.type === "snap")) {
          this.send(nd, m);
        } else held.push(m);
      }
      const delay = Math.floor(this.rnd() * (this.maxDisk + 1));
      nd.inflight = { rd, held, at: this.now + delay, applied };
      if (delay === 0) this.completeSync(nd);
    }
  }

  private completeSync(nd: SimNode): void {
    const inf = nd.inflight;
    if (inf === undefined) return;
    nd.store.sync();
    nd.inflight = undefined;
    this.finish(nd, inf.rd, inf.held, inf.applied);
    this.drive(nd);
  }

  /** Applies committed entries to the node's state machine and answers the writes among them. */
  private applyCommitted(nd: SimNode, entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    this.checker.recordApplied(nd.id, entries);
    for (const e of entries) {
      if (e.index !== nd.kvIndex + 1) {
        throw new Failure(
          "apply_order",
          `node ${nd.id} was handed entry ${e.index} to apply after ${nd.kvIndex}`,
        );
      }
      nd.kvIndex = e.index;
      if (e.type !== "normal" || e.data.byteLength === 0) continue;
      const cmd = decodeCommand(e.data);
      if (cmd === undefined) {
        if (dec.decode(e.data).startsWith(MARKER_PREFIX)) this.markerApplied = true;
        continue;
      }
      nd.kv.apply(cmd);
      const key = `${cmd.clientId}:${cmd.seq}`;
      if (nd.waiters.has(key)) {
        nd.waiters.delete(key);
        const c = this.clients[cmd.clientId - 1];
        if (c?.op !== undefined && c.op.seq === cmd.seq) this.complete(c, "");
      }
    }
  }

  /** Completes a Ready whose first `applied` committed entries were applied already. */
  private finish(nd: SimNode, rd: Ready, msgs: readonly Message[], applied: number): void {
    const raft = nd.raft;
    if (raft === undefined) return;
    for (const m of msgs) this.send(nd, m);
    if (rd.snapshot !== undefined) {
      nd.kv.restore(snapshotBytes(rd.snapshot.data));
      nd.kvIndex = rd.snapshot.metadata.index;
      this.stats.snapshotsInstalled++;
      this.log(`node ${nd.id} installed snapshot ${rd.snapshot.metadata.index}`);
    }
    this.applyCommitted(
      nd,
      applied === 0 ? rd.committedEntries : rd.committedEntries.slice(applied),
    );
    for (const rs of rd.readStates) {
      const ctx = dec.decode(rs.context);
      const cid = nd.readWaiters.get(ctx);
      if (cid === undefined) continue;
      nd.readWaiters.delete(ctx);
      const c = this.clients[cid - 1];
      if (c?.op === undefined || c.op.readCtx !== ctx || c.op.input.op !== "get") continue;
      this.complete(c, nd.kv.get(c.op.input.key));
    }
    raft.advance();
  }

  private send(nd: SimNode, m: Message): void {
    // Record what this message promises (checked when the node restarts).
    if (m.term > 0 && m.type !== "pre_vote" && m.type !== "pre_vote_resp") {
      if (m.term > nd.sentTerm) nd.sentTerm = m.term;
      if (m.type === "vote_resp" && !m.reject) nd.votePromise = { term: m.term, to: m.to };
      if (m.type === "app_resp" && !m.reject) {
        if (m.term > nd.ack.term || (m.term === nd.ack.term && m.index > nd.ack.index)) {
          nd.ack = { term: m.term, index: m.index };
        }
      }
    }
    if (m.to === nd.id) return;
    this.net.send(m, this.now);
  }

  // ------------------------------------------------------------------ clients

  private complete(c: Client, value: string): void {
    const op = c.op;
    if (op === undefined) return;
    this.rec.ok(op.histId, { value });
    this.stats.opsOk++;
    c.op = undefined;
    c.target = op.node;
    c.idleUntil = this.now + Math.floor(this.rnd() * 3 * STEPS_PER_TICK);
  }

  private runClients(): void {
    const timeout = this.electionTick * 2 * STEPS_PER_TICK;
    for (const c of this.clients) {
      if (c.op === undefined) {
        if (!this.issuing || this.now < c.idleUntil || this.rnd() < 0.3) continue;
        const key = this.pickOf(this.keys) as string;
        const r = this.rnd();
        const seq = c.nextSeq++;
        const value = `${c.id}.${seq};`;
        const input: KvInput =
          r < 0.4
            ? { op: "get", key }
            : r < 0.7
              ? { op: "put", key, value }
              : { op: "append", key, value };
        const histId = this.rec.invoke(c.id, input);
        c.op = { seq, input, histId, node: c.target, sentAt: this.now, readCtx: "" };
        this.submit(c, c.op);
      } else if (this.now - c.op.sentAt >= timeout) {
        if (this.rnd() < 0.1) {
          // Give up: the outcome stays unknown (pending in the history).
          this.rec.info(c.op.histId);
          c.op = undefined;
          continue;
        }
        // Retry (same sequence number: the state machine applies it at most once).
        const hinted = this.node(c.op.node).raft?.lead ?? 0;
        c.op.node = hinted !== 0 && this.rnd() < 0.7 ? hinted : (this.pickOf(this.ids) as number);
        c.op.sentAt = this.now;
        this.submit(c, c.op);
      }
    }
  }

  private submit(c: Client, op: ClientOp): void {
    const nd = this.node(op.node);
    const raft = nd.raft;
    if (raft === undefined) return; // times out and retries elsewhere
    try {
      if (op.input.op === "get") {
        op.readCtx = `r${++this.ctxCounter}`;
        nd.readWaiters.set(op.readCtx, c.id);
        raft.readIndex(enc.encode(op.readCtx));
      } else {
        nd.waiters.set(`${c.id}:${op.seq}`, c.id);
        raft.propose(encodeCommand({ clientId: c.id, seq: op.seq, input: op.input }));
      }
    } catch (e) {
      if (!isRaftError(e) || !EXPECTED_CODES.has(e.code)) throw e;
      // Refused: retry soon on another node (the leader hint when there is one).
      const hint = e.leaderHint !== 0 ? e.leaderHint : raft.lead;
      op.node = hint !== 0 ? hint : (this.pickOf(this.ids) as number);
      op.sentAt = this.now - this.electionTick * 2 * STEPS_PER_TICK + STEPS_PER_TICK;
    }
    this.drive(nd);
  }

  // ------------------------------------------------------------------ faults

  private leaderNode(): SimNode | undefined {
    let best: SimNode | undefined;
    for (const nd of this.nodes) {
      const r = nd.raft;
      if (
        r !== undefined &&
        r.role === "leader" &&
        (best === undefined || r.term > (best.raft?.term ?? 0))
      ) {
        best = nd;
      }
    }
    return best;
  }

  private faults(): void {
    const r = this.rnd;
    const leader = this.leaderNode();
    // Crashes (the leader more often than others).
    if (r() < this.pCrash) {
      const live = this.nodes.filter((x) => x.raft !== undefined);
      const victim =
        leader !== undefined && r() < (this.storm ? 0.85 : 0.5) ? leader : this.pickOf(live);
      if (victim !== undefined) this.crash(victim);
    }
    for (let i = this.scheduled.length - 1; i >= 0; i--) {
      const job = this.scheduled[i];
      if (job !== undefined && job.at <= this.tickNo) {
        this.scheduled.splice(i, 1);
        job.run();
      }
    }
    // Partitions.
    if (this.net.cuts > 0 && r() < this.pHeal) {
      this.net.heal();
      this.log("heal");
    }
    if (r() < this.pPartition) {
      this.stats.partitions++;
      if (r() < 0.5) this.net.heal();
      const kind = r();
      const a = leader !== undefined && r() < 0.5 ? leader.id : (this.pickOf(this.ids) as number);
      const others = this.ids.filter((x) => x !== a);
      if (kind < 0.35) {
        this.net.split([a], others);
        this.log(`isolate ${a}`);
      } else if (kind < 0.6) {
        const left = [a, ...others.filter(() => r() < 0.4)];
        this.net.split(
          left,
          this.ids.filter((x) => !left.includes(x)),
        );
        this.log(`split ${left.join(",")}`);
      } else if (kind < 0.85) {
        const b = this.pickOf(others) as number;
        this.net.cutLink(a, b);
        this.log(`cut ${a}-${b}`);
      } else {
        const b = this.pickOf(others) as number;
        if (r() < 0.5) this.net.cutOneWay(a, b);
        else this.net.cutOneWay(b, a);
        this.log(`cut one way ${a}/${b}`);
      }
    }
    // A deposed leader with a long tail: isolate the leader while clients keep writing to
    // it, let the others elect a successor, then crash the successor and heal — the old
    // leader's log is now longer but older than the others', and it may time out first
    // (elections must compare the last term before the length; §5.4.1).
    if (!this.staleActive && leader !== undefined && this.rndStale() < this.pStaleLeader) {
      this.staleActive = true;
      const x = leader.id;
      this.stats.partitions++;
      this.net.heal();
      this.net.split(
        [x],
        this.ids.filter((i) => i !== x),
      );
      this.log(`deposed leader: isolate ${x}`);
      const at =
        this.tickNo + this.electionTick + Math.floor(this.rndStale() * 2 * this.electionTick);
      this.scheduled.push({
        at,
        run: () => {
          this.staleActive = false;
          const successor = this.leaderNode();
          if (successor !== undefined && successor.id !== x) this.crash(successor);
          this.net.heal();
          this.log(`deposed leader: ${x} rejoins`);
        },
      });
    }
    // Compaction (any node, up to its applied index).
    for (const nd of this.nodes) if (r() < this.pCompact) this.compact(nd);
    // Membership churn and leader transfer.
    if (leader?.raft !== undefined && r() < this.pChurn) this.churn(leader);
    if (leader?.raft !== undefined && r() < this.pTransfer) {
      const cs = leader.raft.status().confState;
      const to = this.pickOf(cs.voters);
      if (to !== undefined) {
        this.stats.transfers++;
        this.log(`transfer ${leader.id} → ${to}`);
        this.guard(() => leader.raft?.transferLeader(to));
        this.drive(leader);
      }
    }
  }

  private guard(f: () => void): void {
    try {
      f();
    } catch (e) {
      if (!isRaftError(e) || !EXPECTED_CODES.has(e.code)) throw e;
    }
  }

  private compact(nd: SimNode): void {
    const raft = nd.raft;
    if (raft === undefined || nd.inflight !== undefined) return;
    const st = raft.status();
    const index = st.applied;
    if (index <= nd.store.snapshot().metadata.index || index > nd.store.lastIndex()) return;
    const snap: Snapshot = {
      metadata: { index, term: nd.store.term(index), confState: st.confState },
      data: nd.kv.snapshot(),
    };
    nd.store.compact(index, snap).catch(noop);
    if (this.rnd() < 0.5) nd.store.sync();
    this.stats.compactions++;
  }

  private churn(leader: SimNode): void {
    const raft = leader.raft as Raft;
    const cs = raft.status().confState;
    const r = this.rnd;
    let cc: ConfChange | undefined;
    if (cs.votersOutgoing.length > 0) {
      if (!cs.autoLeave) cc = { changes: [], transition: "auto" };
    } else {
      const members = new Set([...cs.voters, ...cs.learners]);
      const outsiders = this.ids.filter((x) => !members.has(x));
      const kind = r();
      const transition = this.pickOf(["auto", "joint", "joint_explicit"] as const) ?? "auto";
      if (kind < 0.25) {
        const x = this.pickOf(outsiders);
        if (x !== undefined)
          cc = { changes: [{ type: "add_learner", nodeId: x }], transition: "auto" };
      } else if (kind < 0.5) {
        const x = this.pickOf([...cs.learners, ...outsiders]);
        if (x !== undefined)
          cc = { changes: [{ type: "add_voter", nodeId: x }], transition: "auto" };
      } else if (kind < 0.7) {
        const x = cs.voters.length > 3 ? this.pickOf(cs.voters) : this.pickOf(cs.learners);
        if (x !== undefined) cc = { changes: [{ type: "remove", nodeId: x }], transition: "auto" };
      } else {
        // Joint change: replace up to two voters (possibly the leader) at once.
        const spare = [...cs.learners, ...outsiders];
        const k = Math.min(spare.length, 1 + Math.floor(r() * 2));
        if (k > 0) {
          const out = [...cs.voters].sort(() => r() - 0.5).slice(0, k);
          const inn = [...spare].sort(() => r() - 0.5).slice(0, k);
          cc = {
            changes: [
              ...out.map((id) => ({
                type: r() < 0.5 ? ("remove" as const) : ("add_learner" as const),
                nodeId: id,
              })),
              ...inn.map((id) => ({ type: "add_voter" as const, nodeId: id })),
            ],
            transition,
          };
        }
      }
    }
    if (cc === undefined) return;
    this.stats.confChanges++;
    this.log(`conf change ${JSON.stringify(cc)} on ${leader.id}`);
    this.guard(() => raft.proposeConfChange(cc));
    this.drive(leader);
    // Membership-aware nemesis: a while later, cut the voters leaving the configuration
    // (plus some others) from the rest, so that nodes holding different configurations
    // and different logs have to elect leaders.
    let next: ConfState | undefined;
    try {
      next = applyConfChange(cs, cc);
    } catch {
      next = undefined;
    }
    if (next !== undefined && r() < 0.6) {
      const incoming = new Set(next.voters);
      const group = this.ids.filter(
        (id) => (cs.voters.includes(id) && !incoming.has(id)) || r() < 0.25,
      );
      const rest = this.ids.filter((id) => !group.includes(id));
      const at = this.tickNo + Math.floor(r() * 2 * this.electionTick);
      if (group.length > 0 && rest.length > 0) {
        this.scheduled.push({
          at,
          run: () => {
            this.stats.partitions++;
            this.net.heal();
            this.net.split(group, rest);
            this.log(`membership split ${group.join(",")} | ${rest.join(",")}`);
          },
        });
      }
    }
  }

  /** One-line state of every node (for failure messages). */
  private describe(): string {
    return this.nodes
      .map((nd) => {
        const r = nd.raft;
        if (r === undefined) return `${nd.id}:down`;
        const s = r.status();
        const cs = s.confState;
        return `${nd.id}:${s.role} t${s.term} lead${s.lead} c${s.commit} a${s.applied} [${s.firstIndex},${s.lastIndex}] v{${cs.voters}}${cs.votersOutgoing.length > 0 ? `o{${cs.votersOutgoing}}` : ""}${cs.learners.length > 0 ? `l{${cs.learners}}` : ""}${nd.inflight !== undefined ? " inflight" : ""}${s.role === "leader" ? ` progress ${[...r.trk.progress].map(([id, p]) => `${id}=${p.state}/m${p.match}/n${p.next}/if${p.inflights.length}${p.probeSent ? "/sent" : ""}`).join(",")}` : ""}`;
      })
      .join(" | ");
  }

  // ------------------------------------------------------------------ liveness

  private liveness(): void {
    this.faultsOn = false;
    this.net.heal();
    this.net.faults = { drop: 0, duplicate: 0, maxDelay: 2 };
    for (const nd of this.nodes) nd.restartAt = this.now;
    this.log("liveness phase: healed");
    // Spec scenario 31: 10 election timeouts with the default configuration (pre-vote on).
    // Without pre-vote, candidates whose logs are too short to win keep bumping the term and
    // splitting votes, and basic Raft only promises progress with high probability; those
    // seeds get 30 timeouts.
    const timeouts = this.preVote ? 10 : 30;
    const bound = (this.now / STEPS_PER_TICK + timeouts * this.electionTick) * STEPS_PER_TICK;
    let proposedAt = -1;
    const marker = enc.encode(`${MARKER_PREFIX}${this.seed}`);
    for (; this.now < bound && !this.markerApplied; this.now++) {
      this.step();
      if (this.now % STEPS_PER_TICK !== 0) continue;
      // Normal operation continues: nodes snapshot now and then. (A leader can only send its
      // stored snapshot; one older than the conf change that added a follower is refused by
      // that follower, so without a newer snapshot it could never catch up.)
      if ((this.now / STEPS_PER_TICK) % this.electionTick === 0) {
        for (const nd of this.nodes) this.compact(nd);
      }
      const leader = this.leaderNode();
      const retry =
        proposedAt < 0 || this.now - proposedAt > this.electionTick * STEPS_PER_TICK * 2;
      if (leader?.raft !== undefined && retry) {
        try {
          leader.raft.propose(marker);
          proposedAt = this.now;
        } catch (e) {
          if (!isRaftError(e) || !EXPECTED_CODES.has(e.code)) throw e;
        }
        this.drive(leader);
      }
    }
    if (!this.markerApplied) {
      throw new Failure(
        "liveness",
        `no proposal committed within ${timeouts} election timeouts (${timeouts * this.electionTick} ticks) after healing; ${this.describe()}`,
      );
    }
    // Let open client operations finish (fewer pending operations to check).
    this.issuing = false;
    const drain = this.now + 2 * this.electionTick * STEPS_PER_TICK;
    for (; this.now < drain && this.clients.some((c) => c.op !== undefined); this.now++)
      this.step();
  }
}
