// One Raft group on this node: drives the pure core of `@oprc/raft-log` — persists each
// Ready through the group's log store, sends its messages, applies committed entries to
// the group's state machine, answers proposals and linearizable reads — and compacts the
// log behind the state machine's durable state. A snapshot of the state machine is built
// only when a follower needs entries the log no longer holds, and dropped after the transfer.

import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DataPlaneError } from "@oprc/grpc-api";
import {
  applyConfChange,
  type ConfChange,
  type ConfState,
  createMessage,
  createPrng,
  createRaft,
  type Entry,
  type HardState,
  isRaftError,
  jsonConfChangeCodec,
  type LogStore,
  type Message,
  type Raft,
  type RaftStatus,
  type ReadOnlyOption,
  type Ready,
  type Snapshot,
  type SnapshotBytes,
  stablyCommitted,
} from "@oprc/raft-log";
import { planRetention } from "./log-retention.js";
import { SnapshotFile, syncDir } from "./snapshot-file.js";
import { atEndOfTurn } from "./turn.js";

/** What a group replicates. Entries are applied in log order, exactly once per index. */
export interface StateMachine<R> {
  /** Index of the last entry whose effects are stored (0: none). Entries ≤ it are skipped. */
  appliedIndex(): number;
  /**
   * Applies committed entries (in order); one result per entry, in order. `confAt(index)`:
   * the group's membership as of an index, from the stored snapshot up to the last entry
   * given (so before any membership change among them).
   */
  apply(entries: readonly Entry[], confAt: (index: number) => ConfState): Promise<readonly R[]>;
  /**
   * Fixes the state as of {@link appliedIndex} (called between applies) and returns the
   * reader of it, a page of bytes at a time. Reading may overlap later applies, and yields
   * the fixed state (called once).
   */
  snapshot(): Promise<() => AsyncIterable<Uint8Array>>;
  /**
   * Replaces the state with a snapshot's bytes (read a range at a time: they may be a file).
   * May write in several steps: if it fails or the process dies part-way, the group calls
   * it again with the same bytes before anything else (at the next open). Bytes it refuses
   * as malformed, before changing anything, reject with an error whose `code` is
   * `"invalid_argument"`: those are not installed again.
   */
  restore(data: SnapshotBytes, index: number): Promise<void>;
  /**
   * Makes every applied entry durable (the log is compacted behind it next; applies may be
   * unsynced until then). Called between applies.
   */
  persist(): Promise<void>;
}

/** Options of {@link openRaftGroup}. */
export interface RaftGroupOptions<R> {
  /** Group id, unique in the cluster (`"meta"`, `"<collection>/<partition>"`). */
  readonly id: string;
  /** This node's id (positive integer). */
  readonly nodeId: number;
  /** The group's durable log. */
  readonly storage: LogStore;
  readonly stateMachine: StateMachine<R>;
  /**
   * Hands messages to the transport (fire and forget); `quiesce` marks their envelopes (a
   * heartbeat of an idle group, or a follower's answer that it stopped its clock).
   */
  readonly send: (group: string, messages: readonly Message[], quiesce?: boolean) => void;
  /**
   * Quiesce when idle (default false). A leader with nothing in flight for an election
   * timeout marks its heartbeats; a follower told so stops its election clock and marks its
   * answer; once every peer answered so, the leader stops its clock too (and its lease
   * ends). Anything else that happens in the group — a message, a proposal, a read, a
   * transfer — wakes whoever it reaches, and what that node sends wakes the rest.
   */
  readonly quiesce?: boolean;
  /**
   * Whether node `peer` has been silent for an election timeout: a quiescent follower of
   * its leader's node wakes and, its clock running again, elects a new leader if need be.
   * Needed with `quiesce` (default: never silent).
   */
  readonly peerSilent?: (peer: number) => boolean;
  /**
   * Initial members of a group created from nothing (every member gets the same list).
   * Absent: the node waits to be added by the group's leader (it starts with an empty log).
   */
  readonly bootstrapVoters?: readonly number[];
  /** Ticks without a leader before an election. Default 10. */
  readonly electionTick?: number;
  /** Ticks between heartbeats. Default 1. */
  readonly heartbeatTick?: number;
  /**
   * Start the election clock `electionTick - 1` ticks ahead (for a group reopened after a
   * restart): without a leader to hear from, it campaigns after 1 to `electionTick` ticks
   * instead of `electionTick` to twice that, as etcd's initial election tick advance. Its
   * peers still refuse votes while they hear from a leader. Default false.
   */
  readonly advanceElection?: boolean;
  /** Compact the log once this many applied entries follow the last snapshot. Default 100,000. */
  readonly compactAfter?: number;
  /**
   * Compact the log once the applied entries since the last snapshot (or since this node
   * opened the group) carry this many payload bytes. Default 64 MiB.
   */
  readonly compactAfterBytes?: number;
  /**
   * Entries kept behind the applied index when the log is compacted, for followers a little
   * behind (within half the compaction thresholds). Default 5,000, as etcd's
   * SnapshotCatchUpEntries. The leader keeps as well what a follower that answers still lacks.
   */
  readonly catchUpEntries?: number;
  /** Default 64 KiB. */
  readonly snapshotChunkSize?: number;
  /**
   * Where a snapshot built for followers is written while it is sent (a file per snapshot,
   * removed once no follower is being sent it). Default: the system's temporary directory.
   */
  readonly snapshotDir?: string;
  /**
   * Where a snapshot received from the leader is written as its chunks arrive, and kept
   * while it is installed: a state machine that restores in several writes and a process
   * that dies part-way install it again from there at the next open. Not emptied at start;
   * groups may share it. Default: a temporary directory of this group's own, removed when
   * the group is closed (nothing is installed again after a restart).
   */
  readonly installDir?: string;
  readonly readOnlyOption?: ReadOnlyOption;
  /**
   * How long a leader's followers may wait to hear that their entries are committed (so that
   * they apply them) when no append goes out meanwhile to tell them (ms). A new commit index
   * rides on the next batch's appends; only when none was sent within this time is it sent
   * alone (Raft `deferCommitAppends`). Under load that saves every follower a message, a
   * Ready and an answer per commit. 0: sent at once, as etcd does. Default 25.
   */
  readonly commitNoticeMs?: number;
  /** Told when this node's role or the group's known leader changes. */
  readonly onSoftState?: (role: RaftStatus["role"], leader: number) => void;
  /** Told of failures that leave the node serving (bad peer messages, apply errors). */
  readonly onError?: (err: unknown, what: string) => void;
  /** Told of every committed conf change's resulting membership. */
  readonly onConfState?: (conf: ConfState) => void;
  /** Told when opening finishes installing a snapshot the process did not live to complete. */
  readonly onInstallResumed?: (index: number) => void;
}

/** The outcome of a proposal once its entry is applied. */
export type ProposalResult<R> = { readonly index: number; readonly result: R };

interface PendingProposal<R> {
  readonly term: number;
  resolve(r: ProposalResult<R>): void;
  reject(err: unknown): void;
}

/** A group's progress, for `/api/cluster` and metrics. */
export interface RaftGroupStatus extends RaftStatus {
  readonly group: string;
  /** The index the log is compacted to. */
  readonly lastSnapshotIndex: number;
  readonly snapshotsInstalled: number;
  /** Snapshot chunks sent. */
  readonly snapshotsSent: number;
  /** Snapshots of the state machine built for followers behind the compacted log. */
  readonly snapshotsBuilt: number;
  /** The group's clock is stopped here: it is idle (see `RaftGroupOptions.quiesce`). */
  readonly quiescent: boolean;
  /** Why this node stopped driving the group (a failed write or apply, a lost log). */
  readonly failure?: string;
}

/**
 * Read contexts are unique across restarts too: a leader's answer to a read asked before a
 * restart must not satisfy a new read that happens to reuse its sequence number.
 */
const readEpoch = randomBytes(6).toString("hex");
/**
 * A ReadIndex request not answered after this many ticks is asked again, with the same
 * context. The core sends it once, and a follower's request, the leader's heartbeats or its
 * answer can be lost (a link reconnecting after a restart, a follower that knew no leader):
 * without asking again such a read would wait out its whole timeout. (etcd asks again after
 * 500 ms.) Whichever answer comes first serves the read.
 */
const READ_RETRY_TICKS = 5;
const enc = new TextEncoder();
const dec = new TextDecoder();
let readSeq = 0;

/** Every member of a membership: voters and learners, both sides of a joint configuration. */
export function membersOf(c: ConfState): Set<number> {
  return new Set([...c.voters, ...c.learners, ...c.votersOutgoing, ...c.learnersNext]);
}

/**
 * The voter other than the leader (`st`, a leader's status) that holds the most of its log
 * among those `accept` takes, or 0 when none: the one to hand leadership to.
 */
export function mostCaughtUpVoter(
  st: RaftStatus,
  accept: (id: number) => boolean = () => true,
): number {
  let to = 0;
  let best = -1;
  for (const id of st.confState.voters) {
    const match = st.match.get(id) ?? 0;
    if (id !== st.id && match > best && accept(id)) {
      to = id;
      best = match;
    }
  }
  return to;
}

/** A follower's plain answer to a leader's heartbeat or append: on a leader, no news. */
function answersLeader(m: Message, role: RaftStatus["role"]): boolean {
  return role === "leader" && (m.type === "heartbeat_resp" || (m.type === "app_resp" && !m.reject));
}

/** True when every message is of type `type` (such a batch may carry a quiescence mark). */
function onlyOf(messages: readonly Message[], type: Message["type"]): boolean {
  for (const m of messages) if (m.type !== type) return false;
  return true;
}

/** What a leader may send before its own write of the same Ready is durable. */
const REPLICATION: ReadonlySet<Message["type"]> = new Set(["app", "heartbeat", "snap"]);

/**
 * `RaftGroupOptions.commitNoticeMs`: under load the next batch's appends leave soon after a
 * commit (the answers it released come back as new requests) and carry the index. On two
 * shared cores at 64 writes in flight that took longer than 5 ms often enough that 5 ms
 * gained nothing measurable, while 25 ms did (BENCHMARKS.md). At rest a follower applies up
 * to this much later; its heartbeat (every tick) carries the index too.
 */
const DEFAULT_COMMIT_NOTICE_MS = 25;

/** Committed batches queued for the state machine at most before a Ready waits for them. */
const MAX_APPLY_BACKLOG = 8;

/** Ticks a built snapshot is kept after a follower last asked for it or was sent a chunk (about 30 s). */
const BUILT_SNAPSHOT_TICKS = 300;

const EMPTY = new Uint8Array(0);
/** Entries a compaction reads at a time to learn the sizes of the entries it keeps. */
const COMPACTION_READ_CHUNK = 1024;

/**
 * A Raft group driven on this node. One Ready at a time is persisted and sent; its
 * committed entries are applied in order on a queue of their own, so the state machine's
 * writes overlap the log writes instead of adding to them (as etcd's apply loop): those
 * already in stable storage as soon as the Ready is handed out, while its own write is in
 * flight, and those committed meanwhile as soon as a message commits them; the rest once
 * the write is done. A membership change, a snapshot, or a backlog beyond
 * {@link MAX_APPLY_BACKLOG} waits for the queue.
 */
export class RaftGroup<R> {
  readonly id: string;
  private readonly raft: Raft;
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;
  private readonly proposals = new Map<number, PendingProposal<R>>();
  /** The apply queue's tail: resolves once every batch handed to it is applied. */
  private applyQueue: Promise<void> = Promise.resolve();
  private applyBacklog = 0;
  /**
   * ReadIndex requests waiting for their read state, by context; `ticks` counts the ticks
   * since the request was last handed to the core, which asks again every
   * {@link READ_RETRY_TICKS}.
   */
  private readonly reads = new Map<
    string,
    { resolve(): void; reject(e: unknown): void; ticks: number }
  >();
  private snapshotsInstalled = 0;
  private snapshotsSent = 0;
  /** The term and vote last made durable (a Ready that changes either sends nothing early). */
  private durable: { term: number; vote: number };
  /** A hard state whose only change is the commit index, saved with the next synced write. */
  private unsavedHardState: HardState | undefined;
  /** Payload bytes applied since the last compaction (or since open). */
  private appliedBytes = 0;
  /** The last index handed to apply (or the stored snapshot's): memberships are known up to it. */
  private confIndex: number;
  /**
   * The conf changes handed to apply after the stored snapshot, with the membership after
   * each (a restart hands the entries after the snapshot over again, and the state machine
   * skips those it has): what a snapshot or compaction at an index records ({@link confAt}).
   */
  private confChanges: { index: number; conf: ConfState }[] = [];
  /** A snapshot built for followers behind the compacted log, while one may still ask. */
  private built: { metadata: Snapshot["metadata"]; data: SnapshotFile } | undefined;
  /** Snapshot files built here and not removed yet (the core may still be sending them). */
  private files: { index: number; file: SnapshotFile }[] = [];
  private building = false;
  /** The point of the snapshot being read, once its state is fixed. */
  private buildingAt: Snapshot["metadata"] | undefined;
  private snapshotsBuilt = 0;
  private failure: string | undefined;
  /** Ticks before a snapshot is built again after one failed (doubling, up to 30 s). */
  private buildBackoff = 0;
  private lastBackoff = 0;
  /** Ticks since a follower last needed a snapshot. */
  private ticksSinceAsked = 0;
  /** Snapshots received from the leader, not installed (or superseded) yet. */
  private readonly received: SnapshotFile[] = [];
  /** Settles once the snapshot being installed is (reads wait for it). */
  private installing: Promise<void> | undefined;
  /** Consecutive ticks this leader had nothing in flight (see {@link idle}). */
  private quietTicks = 0;
  /** A leader asking its peers to quiesce: those that answered they did. */
  private asking: Set<number> | undefined;
  /** The clock is stopped (`RaftGroupOptions.quiesce`). */
  private quiescent = false;
  /** A quiescent leader's peers (the group's members when it stopped its clock). */
  private quiescentPeers: readonly number[] = [];
  /** Reads of the state machine in progress ({@link reading}), and who waits for none. */
  private readers = 0;
  private readersDone: (() => void) | undefined;
  /** Sends a commit index no append carried yet ({@link noticeCommit}). */
  private commitTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly o: RaftGroupOptions<R>,
    raft: Raft,
    private readonly installDir: string,
  ) {
    this.id = o.id;
    this.raft = raft;
    const hs = o.storage.initialState().hardState;
    this.durable = { term: hs.term, vote: hs.vote };
    this.confIndex = o.storage.snapshot().metadata.index;
  }

  /** Opens (bootstrapping when new and `bootstrapVoters` is given) a group. */
  static async open<R>(o: RaftGroupOptions<R>): Promise<RaftGroup<R>> {
    const storage = o.storage;
    if (
      storage.lastIndex() === 0 &&
      storage.snapshot().metadata.index === 0 &&
      o.bootstrapVoters !== undefined
    ) {
      // Every bootstrap member starts from the same snapshot at index 1: same membership,
      // empty state. The first leader's no-op then sits at index 2 on every replica.
      const voters = [...o.bootstrapVoters].sort((a, b) => a - b);
      const boot: Snapshot = {
        metadata: {
          index: 1,
          term: 1,
          confState: {
            voters,
            learners: [],
            votersOutgoing: [],
            learnersNext: [],
            autoLeave: false,
          },
        },
        data: new Uint8Array(0),
      };
      await storage.save({ snapshot: boot, hardState: { term: 1, vote: 0, commit: 1 } });
    }
    const installDir = o.installDir ?? mkdtempSync(join(tmpdir(), "raft-install-"));
    try {
      return await RaftGroup.openIn(o, installDir);
    } catch (err) {
      // A temporary directory of its own goes with a group that did not open (as on close).
      if (o.installDir === undefined) rmSync(installDir, { recursive: true, force: true });
      throw err;
    }
  }

  /** The rest of `open`, receiving snapshots into `installDir`. */
  private static async openIn<R>(
    o: RaftGroupOptions<R>,
    installDir: string,
  ): Promise<RaftGroup<R>> {
    const storage = o.storage;
    await finishInstall(o, installDir);
    // A state machine behind the stored snapshot (a crash during install) restores it.
    const snap = storage.snapshot();
    if (snap.metadata.index > o.stateMachine.appliedIndex()) {
      if (snap.data.byteLength > 0) await o.stateMachine.restore(snap.data, snap.metadata.index);
      else if (snap.metadata.index > 1) {
        // The log was compacted behind state this state machine no longer has (index 1 is
        // the bootstrap snapshot: the empty state).
        throw new DataPlaneError(
          "internal",
          `raft group ${o.id}: the log is compacted to index ${snap.metadata.index} but the shard's data ends at ${o.stateMachine.appliedIndex()}; its data was lost or replaced`,
        );
      }
    }
    let group: RaftGroup<R> | undefined;
    const raft = createRaft({
      id: o.nodeId,
      storage,
      // Deterministic per node and group, different across them.
      random: createPrng(hashString(`${o.id}#${o.nodeId}#${Date.now()}`)),
      electionTick: o.electionTick ?? 10,
      heartbeatTick: o.heartbeatTick ?? 1,
      snapshotChunkSize: o.snapshotChunkSize ?? 64 * 1024,
      snapshotSource: () => group?.sendableSnapshot(),
      snapshotReceiver: {
        begin: (metadata) => {
          const name = `${encodeURIComponent(o.id)}+${metadata.index}-${randomBytes(4).toString("hex")}.part`;
          const sink = SnapshotFile.receive(join(installDir, name));
          return {
            append: (bytes) => sink.append(bytes),
            discard: () => sink.discard(),
            finish: () => {
              const file = sink.finish();
              group?.received.push(file);
              return file;
            },
          };
        },
      },
      ...(o.readOnlyOption === undefined ? {} : { readOnlyOption: o.readOnlyOption }),
      deferCommitAppends: (o.commitNoticeMs ?? DEFAULT_COMMIT_NOTICE_MS) > 0,
    });
    if (o.advanceElection === true) {
      for (let i = 1; i < (o.electionTick ?? 10); i++) raft.tick();
    }
    group = new RaftGroup(o, raft, installDir);
    group.kick();
    return group;
  }

  /** Advances the group's logical clock by one tick. */
  tick(): void {
    if (this.closed) return;
    if (this.built !== undefined && ++this.ticksSinceAsked > BUILT_SNAPSHOT_TICKS) {
      this.built = undefined;
    }
    if (this.files.length > (this.built === undefined ? 0 : 1)) this.removeUnsentFiles();
    if (this.buildBackoff > 0) this.buildBackoff--;
    let askedAgain = false;
    for (const [ctx, r] of this.reads) {
      if (++r.ticks < READ_RETRY_TICKS) continue;
      r.ticks = 0;
      askedAgain = true;
      try {
        this.raft.readIndex(enc.encode(ctx));
      } catch {
        // Refused now: asked again on a later tick, until the read's timeout.
      }
    }
    if (askedAgain) this.kick();
    if (this.quiescent) {
      // Woken by a silent node: a follower's leader (it elects a new one if need be), or one
      // of a leader's peers (heartbeating again, the leader sees it back, or it stays awake).
      const silent = this.o.peerSilent;
      if (silent === undefined) return;
      const woken =
        this.raft.role === "leader" ? this.quiescentPeers.some(silent) : silent(this.raft.lead);
      if (!woken) return;
      this.wake();
    }
    if (this.o.quiesce === true && this.raft.role === "leader") {
      if (!this.idle()) {
        this.quietTicks = 0;
        this.asking = undefined;
      } else if (this.asking !== undefined && this.answeredAll()) {
        this.asking = undefined;
        this.quiescent = true;
        this.quiescentPeers = this.peers();
        // Its clock stops: a lease counted in ticks would never run out.
        this.raft.expireLease();
        return;
      } else if (++this.quietTicks >= (this.o.electionTick ?? 10)) {
        this.asking ??= new Set();
      }
    }
    this.raft.tick();
    this.kick();
  }

  /** True on a leader with nothing in flight here or in the core (`Raft.isQuiet`). */
  private idle(): boolean {
    return (
      this.running === undefined &&
      this.proposals.size === 0 &&
      this.reads.size === 0 &&
      this.applyBacklog === 0 &&
      this.installing === undefined &&
      !this.building &&
      this.raft.isQuiet()
    );
  }

  /** Every peer of the group answered this leader's quiescence mark. */
  private answeredAll(): boolean {
    return this.peers().every((id) => this.asking?.has(id) === true);
  }

  /** The group's members but this node (voters, learners, both sides of a joint config). */
  private peers(): number[] {
    const ids = membersOf(this.raft.status().confState);
    ids.delete(this.o.nodeId);
    return [...ids];
  }

  /** Starts the clock again (anything that happens in the group). */
  private wake(): void {
    this.quiescent = false;
    this.asking = undefined;
    this.quietTicks = 0;
  }

  /**
   * Delivers a message from a peer; a message the core refuses is reported and dropped.
   * `quiesce`: its envelope's mark (a leader's heartbeat asking to quiesce, or a follower's
   * answer that it did); any other message wakes the group here, but a leader's answers to
   * its heartbeats and appends (nothing happened).
   */
  step(m: Message, quiesce = false): void {
    if (this.closed) return;
    if (!quiesce && !answersLeader(m, this.raft.role)) this.wake();
    try {
      this.raft.step(m);
    } catch (err) {
      // This replica's storage lost acknowledged entries: going on would let the leader
      // count it toward quorums. Stopped, and reported once, until it is removed and re-added.
      if (isRaftError(err) && err.code === "log_lost") this.fail(err, "storage");
      else this.o.onError?.(err, `message ${m.type} from node ${m.from}`);
      return;
    }
    if (quiesce) this.quiesceMarked(m);
    // What this message committed is applied now, not after the log write in flight.
    const taken = this.raft.takeCommitted();
    if (taken.length > 0) this.enqueueApply(taken);
    this.kick();
  }

  /** A marked heartbeat quiesces a caught-up follower; a marked answer counts for its leader. */
  private quiesceMarked(m: Message): void {
    const r = this.raft;
    if (m.term !== r.term) return;
    if (m.type === "heartbeat" && r.role === "follower" && r.lead === m.from) {
      // Its whole log committed: nothing a later leader would have to decide for it.
      if (r.log.committed === r.log.lastIndex()) this.quiescent = true;
    } else if (m.type === "heartbeat_resp" && r.role === "leader") {
      this.asking?.add(m.from);
    }
  }

  /** Starts an election now (a single-voter group elects itself at once). */
  campaign(): void {
    if (this.closed) return;
    this.wake();
    this.raft.campaign();
    this.kick();
  }

  /** Tells the core a peer could not be reached (speeds up retries). */
  reportUnreachable(nodeId: number): void {
    if (!this.closed) this.raft.reportUnreachable(nodeId);
  }

  /** The node this group currently follows (0: unknown). */
  get leader(): number {
    return this.raft.lead;
  }

  get isLeader(): boolean {
    return this.raft.role === "leader";
  }

  /** A proposal made here waits for its entry to be applied (its client waits too). */
  get proposing(): boolean {
    return this.proposals.size > 0;
  }

  status(): RaftGroupStatus {
    const st = this.raft.status();
    return {
      ...st,
      // What reads see: the state machine may still be applying what the core counts as applied.
      applied: Math.min(st.applied, this.o.stateMachine.appliedIndex()),
      group: this.id,
      lastSnapshotIndex: this.o.storage.snapshot().metadata.index,
      snapshotsInstalled: this.snapshotsInstalled,
      snapshotsSent: this.snapshotsSent,
      snapshotsBuilt: this.snapshotsBuilt,
      quiescent: this.quiescent,
      ...(this.failure === undefined ? {} : { failure: this.failure }),
    };
  }

  /**
   * The snapshot for a follower behind the compacted log (the core's snapshot source), or
   * undefined while one is being built. A stored snapshot with data (installed here and not
   * yet dropped, or written by an older version) serves as it is.
   */
  private sendableSnapshot(): Snapshot | undefined {
    this.ticksSinceAsked = 0;
    const floor = this.o.storage.firstIndex() - 1;
    if (this.built !== undefined && this.built.metadata.index >= floor) return this.built;
    const stored = this.o.storage.snapshot();
    if (stored.data.byteLength > 0 && stored.metadata.index >= floor) return stored;
    this.buildSnapshot();
    return undefined;
  }

  /**
   * Builds a snapshot of the state machine (once at a time): its state is fixed between two
   * applies, and read while the next ones go on (a large shard takes long to read).
   */
  private buildSnapshot(): void {
    if (this.building || this.closed || this.buildBackoff > 0) return;
    this.building = true;
    const failed = (err: unknown): void => {
      this.building = false;
      this.buildingAt = undefined;
      // Tried again at a follower's ask once the backoff has passed, not at every ask (each
      // heartbeat answer) while the cause (a full disk, say) lasts.
      this.lastBackoff = Math.min(BUILT_SNAPSHOT_TICKS, Math.max(10, this.lastBackoff * 2));
      this.buildBackoff = this.lastBackoff;
      this.o.onError?.(err, "building a snapshot");
    };
    this.applyQueue = this.applyQueue.then(async () => {
      if (this.closed) {
        this.building = false;
        return;
      }
      const index = this.o.stateMachine.appliedIndex();
      if (this.confIndex < index) {
        // After a restart, until the entries the state machine has are handed over again,
        // the membership at its index is not known here: asked again at the next answer.
        this.building = false;
        return;
      }
      let metadata: Snapshot["metadata"];
      let read: () => AsyncIterable<Uint8Array>;
      try {
        metadata = { index, term: this.o.storage.term(index), confState: this.confAt(index) };
        read = await this.o.stateMachine.snapshot();
        this.buildingAt = metadata;
      } catch (err) {
        failed(err);
        return;
      }
      const dir = this.o.snapshotDir ?? tmpdir();
      SnapshotFile.write(dir, `${this.id}-${index}`, read()).then((file) => {
        this.building = false;
        this.buildingAt = undefined;
        if (this.closed) {
          file.remove();
          return;
        }
        this.built = { metadata, data: file };
        this.files.push({ index, file });
        this.lastBackoff = 0;
        this.snapshotsBuilt++;
        this.ticksSinceAsked = 0;
      }, failed);
    });
  }

  /**
   * Proposes `data` on the leader and resolves with the state machine's result once the
   * entry is applied here. Throws `not_leader` (with the leader's id) on a follower. An
   * entry overwritten by a later leader rejects with `unavailable` (it was not applied).
   */
  propose(data: Uint8Array): Promise<ProposalResult<R>> {
    if (this.closed) return Promise.reject(groupClosed(this.id));
    if (this.raft.role !== "leader") return Promise.reject(notLeader(this.id, this.leader));
    this.wake();
    try {
      this.raft.propose(data);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.awaitProposal();
  }

  /** The outcome of the entry just appended: the log's last (read without copying status()). */
  private awaitProposal(): Promise<ProposalResult<R>> {
    const index = this.raft.log.lastIndex();
    const term = this.raft.term;
    return new Promise((resolve, reject) => {
      this.proposals.set(index, { term, resolve, reject });
      this.kick();
    });
  }

  /** Proposes a membership change (leader only); resolves once applied here. */
  proposeConfChange(cc: ConfChange): Promise<ProposalResult<R>> {
    if (this.closed) return Promise.reject(groupClosed(this.id));
    if (this.raft.role !== "leader") return Promise.reject(notLeader(this.id, this.leader));
    this.wake();
    try {
      this.raft.proposeConfChange(cc);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.awaitProposal();
  }

  /** Asks the leader to hand over leadership to `nodeId`. */
  transferLeader(nodeId: number): void {
    if (this.raft.role !== "leader") throw notLeader(this.id, this.leader);
    this.wake();
    this.raft.transferLeader(nodeId);
    this.kick();
  }

  /**
   * Resolves once this node has applied everything committed when the read was asked
   * (ReadIndex, confirmed by a quorum heartbeat round): a read after it is linearizable.
   */
  readIndex(timeoutMs = 10_000): Promise<void> {
    if (this.closed) return Promise.reject(groupClosed(this.id));
    const ctx = `${this.o.nodeId}:${readEpoch}:${++readSeq}`;
    this.wake();
    try {
      this.raft.readIndex(enc.encode(ctx));
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.reads.delete(ctx);
        reject(
          new DataPlaneError(
            "unavailable",
            `group ${this.id} could not confirm a read within ${timeoutMs} ms (no quorum reachable); retry`,
          ),
        );
      }, timeoutMs);
      this.reads.set(ctx, {
        ticks: 0,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.kick();
    });
  }

  /**
   * The membership handed to apply last (or the stored snapshot's), and the log index of the
   * configuration it came from (the snapshot's index when no later one was applied).
   */
  appliedConf(): { index: number; conf: ConfState } {
    const last = this.confChanges[this.confChanges.length - 1];
    if (last !== undefined) return last;
    const snap = this.o.storage.snapshot().metadata;
    return { index: snap.index, conf: snap.confState };
  }

  /**
   * True while this node leads with a valid lease: a lease-based read may be served now. A
   * group read this way is not idle: it keeps its heartbeats, which the lease needs, instead
   * of quiescing (a quiescent leader's lease has ended, so it answers false and the read
   * takes a quorum round, which wakes the group).
   */
  leaseRead(): boolean {
    if (this.raft.role !== "leader" || !this.raft.leaseValid()) return false;
    this.wake(); // not quiescent (its lease would have ended): restarts the idle count
    return true;
  }

  /**
   * Runs `run`, a read of the state machine, while no snapshot is being installed into it: a
   * read asked during an install waits for it, and an install waits for the reads in progress
   * (a state machine may install in several writes, which no read must see half done).
   */
  async reading<T>(run: () => Promise<T>): Promise<T> {
    while (this.installing !== undefined) await this.installing.catch(() => undefined);
    this.readers++;
    try {
      return await run();
    } finally {
      if (--this.readers === 0) this.readersDone?.();
    }
  }

  /**
   * Restores a snapshot into the state machine and makes it durable. One received into a
   * file is first made durable under the name {@link finishInstall} looks for, so that an
   * install cut short is done again at the next open; it is removed once installed.
   */
  private async install(data: SnapshotBytes, index: number): Promise<void> {
    const file = data instanceof SnapshotFile ? data : undefined;
    if (file !== undefined)
      await file.persistAs(join(this.installDir, installName(this.id, index)));
    if (this.readers > 0) {
      await new Promise<void>((resolve) => {
        this.readersDone = resolve;
      });
      this.readersDone = undefined;
    }
    try {
      await this.o.stateMachine.restore(data, index);
    } catch (err) {
      // Refused whole, nothing written: not a snapshot to install again at the next open
      // (the log never recorded it; the leader sends one again).
      if (file !== undefined && isMalformed(err)) {
        file.remove();
        await syncDir(this.installDir);
      }
      throw err;
    }
    await this.o.stateMachine.persist();
    // Superseded transfers, and this one: none is needed any more.
    for (const f of this.received.splice(0)) f.remove();
    if (file !== undefined) {
      file.remove();
      await syncDir(this.installDir);
    }
  }

  /** Stops driving the group; pending proposals and reads fail with `unavailable`. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.commitTimer);
    await this.running;
    await this.applyQueue;
    const err = groupClosed(this.id);
    for (const p of this.proposals.values()) p.reject(err);
    this.proposals.clear();
    for (const r of this.reads.values()) r.reject(err);
    this.reads.clear();
    this.built = undefined;
    for (const f of this.files.splice(0)) f.file.remove();
    for (const f of this.received.splice(0)) {
      // A snapshot being installed stays for the next open to finish.
      if (f.path.endsWith(".install")) f.close();
      else f.remove();
    }
    if (this.o.installDir === undefined) rmSync(this.installDir, { recursive: true, force: true });
    await this.o.storage.close();
  }

  /** Removes the snapshot files other than the one kept that the core is not sending. */
  private removeUnsentFiles(): void {
    const sending = new Set(this.raft.status().sendingSnapshot.values());
    this.files = this.files.filter((f) => {
      if (f.file === this.built?.data || sending.has(f.index)) return true;
      f.file.remove();
      return false;
    });
  }

  /** Fails pending reads (e.g. a client deadline): the caller's promise is rejected. */
  abandonReads(err: unknown): void {
    for (const r of this.reads.values()) r.reject(err);
    this.reads.clear();
  }

  /**
   * Starts a drain of the core's next Ready unless one runs (another follows it) or there is
   * nothing to do. A drain starts at the end of the event loop's turn ({@link atEndOfTurn}): what
   * arrives in one turn (requests read from many sockets, every follower's answer to the
   * last batch, a leader's appends) goes out in one Ready and one log write.
   */
  private kick(): void {
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    if (!this.raft.hasReady()) {
      this.noticeCommit();
      return;
    }
    // Started from inside the end-of-turn pass (not a microtask after it), so the appends
    // and the log write this Ready defers leave in the same pass (turn.ts).
    const drained = new Promise<void>((resolve, reject) => {
      atEndOfTurn(() => {
        this.drain().then(resolve, reject);
      });
    });
    this.running = drained.finally(() => {
      this.running = undefined;
      if (this.again && !this.closed) {
        this.again = false;
        this.kick();
      }
    });
  }

  /**
   * Persists, sends and applies one Ready, then has {@link kick} start the next at the end
   * of the turn: what the write just made durable may commit entries (on a leader, entries a
   * follower acknowledged already), applied now; the next Ready, whose log write and
   * messages would leave at the end of the turn anyway, takes what the rest of the turn
   * brings. Fewer, larger Readys (BENCHMARKS.md, 2026-11-29 15:00).
   */
  private async drain(): Promise<void> {
    if (this.closed || !this.raft.hasReady()) return;
    const rd = this.raft.ready();
    try {
      await this.handle(rd);
    } catch (err) {
      this.fail(err);
      return;
    }
    this.raft.advance();
    if (this.closed) return;
    const taken = this.raft.takeCommitted();
    if (taken.length > 0) this.enqueueApply(taken);
    this.again = true;
  }

  /**
   * On a leader some of whose followers were not told of its latest commit index: tells
   * them in `commitNoticeMs`, unless the appends of a next batch did so first.
   */
  private noticeCommit(): void {
    if (this.commitTimer !== undefined || this.closed || !this.raft.hasUnsentCommit()) return;
    this.commitTimer = setTimeout(() => {
      this.commitTimer = undefined;
      if (this.closed) return;
      try {
        this.raft.sendCommit();
      } catch (err) {
        // Its log could not be read (a storage failure): the next heartbeat carries the index.
        this.o.onError?.(err, "commit notice");
        return;
      }
      this.kick();
    }, this.o.commitNoticeMs ?? DEFAULT_COMMIT_NOTICE_MS);
  }

  /** A failed disk write or apply cannot be skipped: stops driving this group. */
  private fail(err: unknown, what = "ready"): void {
    if (this.closed && this.proposals.size === 0 && this.reads.size === 0) return;
    this.o.onError?.(err, what);
    if (!this.closed) this.handOff();
    this.closed = true;
    this.failure ??= err instanceof Error ? err.message : String(err);
    for (const p of this.proposals.values()) p.reject(err);
    this.proposals.clear();
    for (const r of this.reads.values()) r.reject(err);
    this.reads.clear();
  }

  /**
   * On a leader that stops driving the group: asks the voter that holds most of the log to
   * campaign at once (TimeoutNow, as a transfer does), rather than leave the others to notice
   * — which quiescent followers of a node that goes on running would not.
   */
  private handOff(): void {
    if (this.raft.role !== "leader") return;
    const to = mostCaughtUpVoter(this.raft.status());
    if (to === 0) return;
    this.o.send(this.id, [
      createMessage({ type: "timeout_now", from: this.o.nodeId, to, term: this.raft.term }),
    ]);
  }

  /** Queues `entries` for the state machine behind every batch queued before. */
  private enqueueApply(entries: readonly Entry[]): void {
    this.applyBacklog++;
    this.applyQueue = this.applyQueue
      .then(() => (this.closed ? undefined : this.apply(entries)))
      .then(
        () => {
          this.applyBacklog--;
        },
        (err: unknown) => {
          this.applyBacklog--;
          this.fail(err);
        },
      );
  }

  private async handle(rd: Ready): Promise<void> {
    if (rd.softState !== undefined) this.o.onSoftState?.(rd.softState.role, rd.softState.lead);
    // `mustSync` (entries, a snapshot, or a new term or vote) is written and synced before
    // what depends on it leaves the node or is applied. A hard state that only moves the
    // commit index is not synced on its own (as etcd): a restarted node learns the commit
    // index again from the leader, and entries already applied are skipped by the applied
    // index stored with the data; it is saved with the next synced write instead.
    const hs = rd.hardState ?? this.unsavedHardState;
    const termOrVote =
      rd.hardState !== undefined &&
      (rd.hardState.term !== this.durable.term || rd.hardState.vote !== this.durable.vote);
    // The leader replicates while its own write is in flight (raft-log's contract, thesis
    // §10.2.1; it counts itself toward the quorum only after advance), unless this Ready
    // changes its term or vote. Everything else waits for the write.
    const early = termOrVote ? [] : rd.messages.filter((m) => REPLICATION.has(m.type));
    const late =
      early.length === 0 ? rd.messages : rd.messages.filter((m) => !REPLICATION.has(m.type));
    for (const m of rd.messages) {
      if (m.type !== "snap") continue;
      this.snapshotsSent++;
      // A snapshot still being sent is kept for other followers as if asked for again.
      this.ticksSinceAsked = 0;
    }
    if (early.length > 0)
      this.o.send(this.id, early, this.asking !== undefined && onlyOf(early, "heartbeat"));
    const committed = rd.committedEntries;
    const stable = stablyCommitted(rd);
    if (stable > 0)
      this.enqueueApply(stable === committed.length ? committed : committed.slice(0, stable));
    if (rd.snapshot !== undefined) {
      // Installed and made durable in the state machine before the log records it, so the
      // log never holds a copy of the data. A crash in between leaves the state machine
      // ahead of the log: it skips the entries it has, and the leader sends the snapshot again.
      await this.applyQueue;
      const { metadata, data } = rd.snapshot;
      this.installing = this.install(data, metadata.index);
      try {
        await this.installing;
      } finally {
        this.installing = undefined;
      }
      this.confIndex = metadata.index;
      this.confChanges = [];
      this.built = undefined;
    }
    if (rd.mustSync) {
      await this.o.storage.save({
        entries: rd.entries,
        ...(hs !== undefined ? { hardState: hs } : {}),
        ...(rd.snapshot !== undefined
          ? { snapshot: { metadata: rd.snapshot.metadata, data: EMPTY } }
          : {}),
      });
      if (hs !== undefined) this.durable = { term: hs.term, vote: hs.vote };
      this.unsavedHardState = undefined;
    } else if (rd.hardState !== undefined) {
      this.unsavedHardState = rd.hardState;
    }
    if (rd.snapshot !== undefined) {
      this.snapshotsInstalled++;
      this.appliedBytes = 0;
      // Proposals at or below the snapshot were decided elsewhere: their outcome is unknown here.
      for (const [index, p] of this.proposals) {
        if (index <= rd.snapshot.metadata.index) {
          this.proposals.delete(index);
          p.reject(outcomeUnknown(this.id));
        }
      }
    }
    if (late.length > 0)
      this.o.send(this.id, late, this.quiescent && onlyOf(late, "heartbeat_resp"));
    if (stable < committed.length)
      this.enqueueApply(stable === 0 ? committed : committed.slice(stable));
    if (
      rd.confState !== undefined ||
      committed.some((e) => e.type === "conf_change") ||
      this.applyBacklog > MAX_APPLY_BACKLOG
    ) {
      await this.applyQueue;
    }
    if (rd.confState !== undefined) this.o.onConfState?.(rd.confState);
    if (rd.readStates.length > 0) {
      // The core hands out a read once its index is committed and handed to apply; it is
      // answered once the apply queue has reached it.
      const ready = rd.readStates;
      void this.applyQueue.then(() => {
        for (const rs of ready) {
          const ctx = dec.decode(rs.context);
          const r = this.reads.get(ctx);
          if (r !== undefined) {
            this.reads.delete(ctx);
            r.resolve();
          }
        }
      });
    }
  }

  private async apply(entries: readonly Entry[]): Promise<void> {
    const sm = this.o.stateMachine;
    // The memberships first: the state machine may ask for the one before an entry it applies.
    for (const e of entries) {
      this.appliedBytes += e.data.byteLength;
      if (e.index <= this.confIndex) continue;
      if (e.type === "conf_change") {
        this.confChanges.push({ index: e.index, conf: nextConf(this.confAt(e.index), e) });
      }
      this.confIndex = e.index;
    }
    const fresh = entries.filter((e) => e.index > sm.appliedIndex());
    const results = fresh.length === 0 ? [] : await sm.apply(fresh, (i) => this.confAt(i));
    for (const [i, e] of fresh.entries()) {
      const p = this.proposals.get(e.index);
      if (p === undefined) continue;
      this.proposals.delete(e.index);
      if (p.term === e.term) p.resolve({ index: e.index, result: results[i] as R });
      else p.reject(overwritten(this.id, e.index));
    }
    const last = entries[entries.length - 1] as Entry;
    // Proposals below what was just applied that never showed up were cut off by a snapshot.
    for (const [index, p] of this.proposals) {
      if (index <= last.index) {
        this.proposals.delete(index);
        p.reject(overwritten(this.id, index));
      }
    }
    await this.maybeCompact(last.index);
  }

  private async maybeCompact(applied: number): Promise<void> {
    const storage = this.o.storage;
    const first = storage.firstIndex();
    const compactAfter = this.o.compactAfter ?? 100_000;
    const compactAfterBytes = this.o.compactAfterBytes ?? 64 * 1024 * 1024;
    const byCount = applied - first + 1 >= compactAfter;
    const byBytes = this.appliedBytes >= compactAfterBytes;
    if (!(byCount || byBytes) || applied > storage.lastIndex()) return;
    // Not past a snapshot being read or kept for followers: they need the entries after it,
    // and a large shard that takes longer to read than the log to fill up again would
    // otherwise never be sent. (Checked first: until it is dropped, every apply asks again.)
    const pinned = (this.built?.metadata ?? this.buildingAt)?.index ?? applied;
    if (pinned < first) return;
    const liveMatches: number[] = [];
    if (this.isLeader) {
      const st = this.raft.status();
      for (const id of st.responsive) {
        if (id !== this.o.nodeId) liveMatches.push(st.match.get(id) ?? 0);
      }
    }
    // The planner asks for sizes from `applied` down to where it stops keeping, usually the
    // catch-up tail: read that many, a chunk at a time, not the whole log it may keep (read
    // on this thread, and mostly from RocksDB: 50,000 entries took 90 ms of the leader's
    // event loop at every compaction).
    let chunk: readonly Entry[] = [];
    let chunkFrom = applied + 1;
    const plan = planRetention({
      applied,
      first,
      liveMatches,
      catchUpEntries: this.o.catchUpEntries ?? 5_000,
      maxKeptEntries: Math.floor(compactAfter / 2),
      maxKeptBytes: Math.floor(compactAfterBytes / 2),
      bytesAt: (index) => {
        if (index < chunkFrom) {
          const lo = Math.max(first, index + 1 - COMPACTION_READ_CHUNK);
          chunk = storage.entries(lo, index + 1);
          chunkFrom = lo;
        }
        return (chunk[index - chunkFrom] as Entry).data.byteLength;
      },
    });
    const index = Math.min(plan.compactTo, pinned);
    if (index < first) return;
    const metadata = { index, term: storage.term(index), confState: this.confAt(index) };
    // The log keeps the point it is compacted to, not a copy of the state: the state machine
    // makes what it applied durable first, and a follower that needs a snapshot gets one
    // built then (sendableSnapshot).
    await this.o.stateMachine.persist();
    await storage.compact(metadata.index, { metadata, data: EMPTY });
    this.confChanges = this.confChanges.filter((c) => c.index > metadata.index);
    // What stays in the log counts toward the next compaction by bytes.
    this.appliedBytes = index === plan.compactTo ? plan.keptBytes : 0;
  }

  /** The membership as of `index` (at or after the stored snapshot, at most {@link confIndex}). */
  private confAt(index: number): ConfState {
    let conf = this.o.storage.snapshot().metadata.confState;
    for (const c of this.confChanges) {
      if (c.index > index) break;
      conf = c.conf;
    }
    return conf;
  }
}

/** The membership after a committed conf-change entry (a refused change is a no-op, as in the core). */
function nextConf(conf: ConfState, e: Entry): ConfState {
  try {
    return applyConfChange(conf, jsonConfChangeCodec.decode(e.data));
  } catch {
    return conf;
  }
}

function hashString(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** This node does not lead the group; `leader` is the node it follows (0: unknown). */
export function notLeader(group: string, leader: number): DataPlaneError {
  return new DataPlaneError(
    "not_leader",
    `this node is not the leader of group ${group}${leader === 0 ? " and no leader is known" : ""}`,
    leader === 0 ? {} : { leaderHint: String(leader) },
  );
}

function groupClosed(group: string): DataPlaneError {
  return new DataPlaneError("unavailable", `raft group ${group} is closed on this node`);
}

function overwritten(group: string, index: number): DataPlaneError {
  return new DataPlaneError(
    "unavailable",
    `the proposal at index ${index} of group ${group} was replaced by a new leader's log and not applied; retry`,
  );
}

function outcomeUnknown(group: string): DataPlaneError {
  return new DataPlaneError(
    "unavailable",
    `leadership of group ${group} changed before the proposal was seen applied here; its outcome is unknown`,
  );
}

/** The name a snapshot being installed into group `id` at `index` has in the install directory. */
function installName(id: string, index: number): string {
  return `${encodeURIComponent(id)}@${index}.install`;
}

/**
 * Finishes an install of a snapshot into the group's state machine that the process did not
 * live to complete (its file is still in `dir`), then removes what was being received for
 * the group when it stopped.
 */
async function finishInstall<R>(o: RaftGroupOptions<R>, dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  const prefix = encodeURIComponent(o.id);
  for (const name of readdirSync(dir)) {
    if (name.startsWith(`${prefix}+`) && name.endsWith(".part")) {
      rmSync(join(dir, name), { force: true });
      continue;
    }
    const m = name.startsWith(`${prefix}@`) ? /^[^@]*@(\d+)\.install$/.exec(name) : null;
    if (m === null) continue;
    o.onInstallResumed?.(Number(m[1]));
    const file = SnapshotFile.open(join(dir, name));
    try {
      await o.stateMachine.restore(file, Number(m[1]));
      await o.stateMachine.persist();
    } catch (err) {
      if (isMalformed(err)) {
        // Refused whole, nothing written: the group opens on the state it has.
        o.onError?.(err, `the snapshot at index ${m[1]} left to install`);
      } else {
        // Kept: the group does not open, and the next open tries again.
        file.close();
        throw err;
      }
    }
    file.remove();
    await syncDir(dir);
  }
}

/** A restore's refusal of malformed bytes, before it changed anything. */
function isMalformed(err: unknown): boolean {
  return (err as { code?: unknown } | undefined)?.code === "invalid_argument";
}
