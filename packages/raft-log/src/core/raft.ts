import type { PersistBatch } from "../storage-port.js";
import type {
  ConfChange,
  ConfState,
  Entry,
  HardState,
  Snapshot,
  SnapshotBytes,
  SnapshotMetadata,
  SnapshotReceiver,
  SnapshotSink,
} from "../types.js";
import { coalesceMessages } from "./coalesce.js";
import { applyConfChange, type ConfChangeCodec, jsonConfChangeCodec } from "./conf-change.js";
import { createMessage, type Message, type MessageType } from "./message.js";
import { createPrng } from "./prng.js";
import { type Progress, ProgressTracker } from "./progress.js";
import { RaftError } from "./raft-error.js";
import { type LogReader, RaftLog } from "./raft-log.js";
import { ReadOnly, type ReadState } from "./read-only.js";

/** Role of a node. */
export type RaftRole = "follower" | "pre_candidate" | "candidate" | "leader";

/** How ReadIndex requests are confirmed. */
export type ReadOnlyOption =
  /** Confirm leadership with a quorum heartbeat round per request (thesis §6.4). */
  | "safe"
  /** Trust the leader lease (needs check-quorum; fails closed once the lease ran out). */
  | "lease_based";

/** Options of {@link createRaft}. */
export interface RaftOptions {
  /** This node's id (a positive integer). */
  readonly id: number;
  /** Stable storage, read side. The driver persists every Ready into it before `advance()`. */
  readonly storage: LogReader;
  /**
   * Election timeout T in ticks; each node draws its timeout from [T, 2T). Default 10.
   * Must exceed `heartbeatTick`.
   */
  readonly electionTick?: number;
  /** Ticks between leader heartbeats. Default 1. */
  readonly heartbeatTick?: number;
  /**
   * Random source in [0, 1) for election timeouts. Default: a PRNG seeded with `id`, so runs
   * are deterministic; the simulator passes one PRNG per seed.
   */
  readonly random?: () => number;
  /** Run a pre-vote round before incrementing the term (thesis §9.6). Default true. */
  readonly preVote?: boolean;
  /**
   * Leader steps down when it hears from no quorum within an election timeout, and followers
   * that heard from a leader recently ignore vote requests. Default true.
   */
  readonly checkQuorum?: boolean;
  /** Last applied index on restart (entries after it are delivered again). Default: snapshot index. */
  readonly applied?: number;
  /** Max payload bytes per AppendEntries (at least one entry is always sent). Default 1 MiB. */
  readonly maxSizePerMsg?: number;
  /** Max in-flight AppendEntries per follower in replicate state. Default 256. */
  readonly maxInflightMsgs?: number;
  /** Snapshot data bytes per `snap` message (chunked install). Default 1 MiB. */
  readonly snapshotChunkSize?: number;
  /**
   * The snapshot a leader sends a follower that needs entries the log no longer holds, or
   * `undefined` while none is ready (the leader asks again at the follower's next answer,
   * as etcd does on `ErrSnapshotTemporarilyUnavailable`). Its index must be at least the
   * log's compacted index and its entries after it still in the log. For applications that
   * compact the log behind their own durable state and build a snapshot only when one is
   * needed, instead of keeping one in the log store. Default: the log store's snapshot.
   */
  readonly snapshotSource?: () => Snapshot | undefined;
  /**
   * Where a follower keeps a snapshot's chunks while it receives them; the Ready that
   * installs it carries what the sink's `finish` returned. Default: in memory.
   */
  readonly snapshotReceiver?: SnapshotReceiver;
  /** How ReadIndex is confirmed. Default "safe". */
  readonly readOnlyOption?: ReadOnlyOption;
  /**
   * Followers reject proposals with `not_leader` (and a leader hint) instead of forwarding
   * them. Default false (forward).
   */
  readonly disableProposalForwarding?: boolean;
  /** Payload codec of conf-change entries. Default: canonical JSON. */
  readonly confChangeCodec?: ConfChangeCodec;
  /**
   * A leader removed (or demoted) by an applied conf change steps down — once a quorum of the
   * new configuration reported knowing that its whole log is committed, handing leadership
   * to an up-to-date voter (until then it refuses proposals). Default true. With false it
   * keeps leading without proposals (etcd's default) until the application moves leadership.
   */
  readonly stepDownOnRemoval?: boolean;
  /**
   * A leader whose commit index moves sends appends only to followers that have entries to
   * receive, not an empty append to every follower just to carry the new index (etcd's
   * behaviour, the default: false). The others learn it from their next append, the next
   * heartbeat, or {@link Raft.sendCommit}, which the driver calls soon after
   * {@link Raft.hasUnsentCommit} turns true. Under load the index rides on the next batch's
   * appends, which saves each follower a message, a Ready and an answer per commit; a
   * follower then applies up to the driver's delay later.
   */
  readonly deferCommitAppends?: boolean;
}

/** Volatile state that the application may want to observe. */
export interface SoftState {
  readonly lead: number;
  readonly role: RaftRole;
}

/**
 * What the driver must do next, in order: (1) persist `snapshot`, `entries` and `hardState`
 * as one synced write (a `Ready` is a valid {@link PersistBatch}); (2) send `messages`;
 * (3) install `snapshot` and apply `committedEntries` in order, serve `readStates`;
 * (4) call `advance()`.
 *
 * Messages normally wait for (1). The one exception (thesis §10.2.1): when this Ready does
 * not change term or vote, a leader's `app`, `heartbeat` and `snap` messages may be sent
 * while (1) is in flight — the leader only counts its own copy towards the commit quorum
 * after `advance()`. Votes, vote answers and acknowledgements always wait for (1).
 *
 * Applies may start before (1) as well, for the first {@link stablyCommitted} entries of
 * `committedEntries`: the rest wait for (1).
 */
export interface Ready {
  /** Set when leader or role changed. */
  readonly softState?: SoftState;
  /** Set when term, vote or commit changed. */
  readonly hardState?: HardState;
  /** Entries to persist (may overwrite a conflicting suffix). */
  readonly entries: readonly Entry[];
  /** A complete snapshot to persist and install (never a partial chunked transfer). */
  readonly snapshot?: Snapshot;
  /** Committed entries to apply, in index order. */
  readonly committedEntries: readonly Entry[];
  /** Messages to send (see the ordering rule above). */
  readonly messages: readonly Message[];
  /** Linearizable reads that may be served now (applied ≥ index is already guaranteed). */
  readonly readStates: readonly ReadState[];
  /** Set when the configuration changed (after a snapshot or an applied conf change). */
  readonly confState?: ConfState;
  /** The write in (1) must be synced (entries or term/vote changed). */
  readonly mustSync: boolean;
}

/**
 * How many of `rd.committedEntries` (from the first) may be applied while the Ready's write
 * is in flight: those the node already holds in stable storage, below the first entry the
 * Ready writes, up to the first membership change (applied with the Ready's configuration,
 * after the write). Committed on a quorum and durable here, nothing the write does can
 * change them (etcd's server applies them the same way). On a leader that is every
 * committed entry, since it counts its own copy towards the quorum only after `advance()`.
 * None with a snapshot, which is installed first.
 */
export function stablyCommitted(rd: Ready): number {
  if (rd.snapshot !== undefined) return 0;
  const firstWritten = rd.entries.length > 0 ? (rd.entries[0] as Entry).index : Infinity;
  const committed = rd.committedEntries;
  let n = 0;
  while (n < committed.length) {
    const e = committed[n] as Entry;
    if (e.index >= firstWritten || e.type === "conf_change") break;
    n++;
  }
  return n;
}

/** A snapshot of the node's state for tests, metrics and the invariant checker. */
export interface RaftStatus {
  readonly id: number;
  readonly role: RaftRole;
  readonly term: number;
  readonly vote: number;
  readonly lead: number;
  readonly commit: number;
  readonly applied: number;
  readonly firstIndex: number;
  readonly lastIndex: number;
  readonly leadTransferee: number;
  /** Ticks since the last valid leader contact (follower) or since the last quorum check (leader). */
  readonly electionElapsed: number;
  /** This node's current randomized election timeout, in ticks. */
  readonly electionTimeout: number;
  readonly confState: ConfState;
  /** Leader only: match index per peer. */
  readonly match: ReadonlyMap<number, number>;
  /**
   * Leader only: the peers that answered a heartbeat sent within the last election timeout
   * (the horizon {@link Raft.leaseValid} uses): the ones a leadership transfer can reach.
   */
  readonly responsive: ReadonlySet<number>;
  /** Leader only: the peers a snapshot is being sent to, with that snapshot's index. */
  readonly sendingSnapshot: ReadonlyMap<number, number>;
}

type CampaignType = "pre_election" | "election" | "transfer";

const TRANSFER_CONTEXT = new TextEncoder().encode("raft:transfer");
const EMPTY = new Uint8Array(0);

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

interface SnapshotBuffer {
  index: number;
  term: number;
  total: number;
  /** Bytes received in order (the next offset expected). */
  size: number;
  /** Where the bytes received in order go. */
  sink: SnapshotSink;
  /** Chunks that arrived ahead of `size` (reordered), by offset. */
  ahead: Map<number, Uint8Array>;
}

/**
 * The default {@link SnapshotReceiver}: the chunks in memory, concatenated at the end (not
 * sized up front from the peer's announced total, which one malformed chunk could inflate).
 */
const memoryReceiver: SnapshotReceiver = {
  begin(_metadata: SnapshotMetadata, total: number): SnapshotSink {
    let parts: Uint8Array[] = [];
    let size = 0;
    return {
      append(bytes) {
        if (size + bytes.byteLength > total) {
          throw new RaftError("invalid_argument", "snapshot chunk past the announced size");
        }
        parts.push(bytes);
        size += bytes.byteLength;
      },
      finish(): SnapshotBytes {
        const data = new Uint8Array(size);
        let at = 0;
        for (const p of parts) {
          data.set(p, at);
          at += p.byteLength;
        }
        parts = [];
        return data;
      },
      discard() {
        parts = [];
      },
    };
  },
};

/**
 * Snapshot chunks a leader keeps in flight per follower (a window, so that a transfer of
 * many small chunks does not take one round trip per chunk).
 */
const SNAPSHOT_CHUNK_WINDOW = 4;

/**
 * The pure, deterministic Raft state machine (etcd/raft design): feed it ticks, messages and
 * proposals; collect {@link Ready} batches; persist, send, apply, `advance()`.
 */
export class Raft {
  /** This node's id. */
  readonly id: number;
  /** Current term (read-only for callers). */
  term = 0;
  /** Node voted for in `term` (0 = none). */
  vote = 0;
  /** Known leader (0 = none). */
  lead = 0;
  /** Current role. */
  role: RaftRole = "follower";
  /** The log (stable view + unstable tail); exposed for inspection, do not mutate. */
  readonly log: RaftLog;
  /** Membership and per-peer progress; exposed for inspection, do not mutate. */
  readonly trk: ProgressTracker;
  /** Leader: transfer target (0 when none). */
  leadTransferee = 0;
  /** Leader: index of the latest conf-change entry appended (blocks the next change until applied). */
  pendingConfIndex = 0;

  private msgs: Message[] = [];
  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout = 0;
  private ticks = 0;
  private readonly electionTimeout: number;
  private readonly heartbeatTimeout: number;
  private readonly random: () => number;
  private readonly preVote: boolean;
  private readonly checkQuorum: boolean;
  private readonly maxSizePerMsg: number;
  private readonly chunkSize: number;
  private readonly snapshotSource: (() => Snapshot | undefined) | undefined;
  private readonly snapshotReceiver: SnapshotReceiver;
  private readonly readOnlyOption: ReadOnlyOption;
  private readonly forwardProposals: boolean;
  private readonly codec: ConfChangeCodec;
  private readonly stepDownOnRemoval: boolean;
  private readonly deferCommitAppends: boolean;
  private readonly readOnly = new ReadOnly();
  /** Leader: ReadIndex requests waiting for an own-term commit. */
  private pendingReadIndex: Message[] = [];
  /** Reads confirmed but not yet applied far enough. */
  private pendingReadStates: ReadState[] = [];
  private snapBuffer: SnapshotBuffer | undefined = undefined;

  private prevSoft: SoftState;
  private prevHard: HardState;
  private confChanged = false;
  private readyOut:
    | {
        lastEntry: Entry | undefined;
        snapIndex: number;
        committed: readonly Entry[];
        /** Some of `committed` (or a snapshot) wait for the Ready's write: no take before it. */
        waits: boolean;
      }
    | undefined = undefined;
  /** The last index {@link takeCommitted} handed out (applied at the next advance). */
  private taken = 0;

  constructor(o: RaftOptions) {
    if (!Number.isSafeInteger(o.id) || o.id <= 0) {
      throw new RaftError("invalid_argument", `node id must be a positive integer, got ${o.id}`);
    }
    this.id = o.id;
    this.electionTimeout = o.electionTick ?? 10;
    this.heartbeatTimeout = o.heartbeatTick ?? 1;
    if (this.heartbeatTimeout <= 0 || this.electionTimeout <= this.heartbeatTimeout) {
      throw new RaftError(
        "invalid_argument",
        "electionTick must be greater than heartbeatTick > 0",
      );
    }
    this.random = o.random ?? createPrng(o.id);
    this.preVote = o.preVote ?? true;
    this.checkQuorum = o.checkQuorum ?? true;
    this.maxSizePerMsg = o.maxSizePerMsg ?? 1 << 20;
    this.chunkSize = Math.max(1, o.snapshotChunkSize ?? 1 << 20);
    this.snapshotSource = o.snapshotSource;
    this.snapshotReceiver = o.snapshotReceiver ?? memoryReceiver;
    this.readOnlyOption = o.readOnlyOption ?? "safe";
    if (this.readOnlyOption === "lease_based" && !this.checkQuorum) {
      throw new RaftError("invalid_argument", "lease_based reads need checkQuorum");
    }
    this.forwardProposals = !(o.disableProposalForwarding ?? false);
    this.codec = o.confChangeCodec ?? jsonConfChangeCodec;
    this.stepDownOnRemoval = o.stepDownOnRemoval ?? true;
    this.deferCommitAppends = o.deferCommitAppends ?? false;
    this.trk = new ProgressTracker(o.maxInflightMsgs ?? 256);

    const { hardState, confState } = o.storage.initialState();
    this.log = new RaftLog(o.storage, o.applied ?? 0);
    this.trk.applyConfState(confState, this.log.lastIndex() + 1);
    if (hardState.commit > 0) {
      if (hardState.commit > this.log.lastIndex()) {
        throw new RaftError("invalid_state", `commit ${hardState.commit} beyond last index`);
      }
      this.log.commitTo(hardState.commit);
    }
    if (this.log.applied > this.log.committed) this.log.applied = this.log.committed;
    this.term = hardState.term;
    this.vote = hardState.vote;
    this.becomeFollower(this.term, 0);
    this.prevSoft = { lead: this.lead, role: this.role };
    this.prevHard = this.hardState();
  }

  // ---------------------------------------------------------------- public API

  /** Advances the logical clock by one tick. */
  tick(): void {
    this.ticks++;
    if (this.role === "leader") this.tickHeartbeat();
    else this.tickElection();
  }

  /** Starts an election now (as if the election timeout fired). */
  campaign(): void {
    this.stepLocal("hup");
  }

  /**
   * Proposes `data` as a normal entry. On the leader it is appended; on a follower it is
   * forwarded to the leader (or rejected with `not_leader` when forwarding is disabled).
   * Throws `no_leader` when no leader is known, `transfer_in_progress` during a leader
   * transfer, `proposal_dropped` when this leader was removed.
   */
  propose(data: Uint8Array): void {
    this.proposeEntry("normal", data);
  }

  /**
   * Proposes a membership change (single-server, or joint when several changes or a joint
   * transition). Throws `conf_change_pending` on a leader whose previous change is not
   * applied yet or when the change is invalid in the current configuration.
   */
  proposeConfChange(cc: ConfChange): void {
    if (this.role === "leader") {
      if (this.pendingConfIndex > this.log.applied) {
        throw new RaftError(
          "conf_change_pending",
          `conf change at ${this.pendingConfIndex} not applied yet (applied ${this.log.applied})`,
        );
      }
      applyConfChange(this.trk.confState(), cc); // validates; throws conf_change_pending
    }
    this.proposeEntry("conf_change", this.codec.encode(cc));
  }

  /**
   * Asks for a linearizable read. The answer arrives as a {@link ReadState} in a later Ready,
   * once leadership was confirmed in the current term (and, with leases, while the lease holds)
   * and applied ≥ its index. Throws `no_leader` when no leader is known, `lease_expired` on a
   * lease-based leader whose lease ran out.
   */
  readIndex(context: Uint8Array): void {
    if (this.role === "leader") {
      if (this.readOnlyOption === "lease_based" && !this.leaseValid()) {
        throw new RaftError("lease_expired", "leader lease expired; read refused");
      }
    } else if (this.lead === 0) {
      throw new RaftError("no_leader", "no leader known for read");
    }
    this.step(createMessage({ type: "read_index", from: this.id, context }));
  }

  /** Asks the leader to hand leadership to `transferee`. */
  transferLeader(transferee: number): void {
    if (this.role !== "leader" && this.lead === 0) {
      throw new RaftError("no_leader", "no leader known for transfer");
    }
    this.step(createMessage({ type: "transfer_leader", from: transferee, to: this.id }));
  }

  /** Tells the leader that a snapshot send to `id` finished (`ok`) or failed. */
  reportSnapshot(id: number, ok: boolean): void {
    this.step(createMessage({ type: "snap_status", from: id, reject: !ok }));
  }

  /** Tells the leader that `id` could not be reached (it falls back to probing). */
  reportUnreachable(id: number): void {
    this.step(createMessage({ type: "unreachable", from: id }));
  }

  /** Current state. */
  status(): RaftStatus {
    const match = new Map<number, number>();
    const responsive = new Set<number>();
    const sendingSnapshot = new Map<number, number>();
    if (this.role === "leader") {
      const horizon = this.ticks - this.electionTimeout + 1;
      for (const [id, pr] of this.trk.progress) {
        match.set(id, pr.match);
        if (id !== this.id && pr.lastHeardTick >= horizon) responsive.add(id);
        if (pr.snapshot !== undefined) sendingSnapshot.set(id, pr.snapshot.metadata.index);
      }
    }
    return {
      id: this.id,
      role: this.role,
      term: this.term,
      vote: this.vote,
      lead: this.lead,
      commit: this.log.committed,
      applied: this.log.applied,
      firstIndex: this.log.firstIndex(),
      lastIndex: this.log.lastIndex(),
      leadTransferee: this.leadTransferee,
      electionElapsed: this.electionElapsed,
      electionTimeout: this.randomizedElectionTimeout,
      confState: this.trk.confState(),
      match,
      responsive,
      sendingSnapshot,
    };
  }

  /** The entry at `index`, or undefined when compacted or beyond the end. */
  entryAt(index: number): Entry | undefined {
    if (index < this.log.firstIndex() || index > this.log.lastIndex()) return undefined;
    return this.log.slice(index, index + 1)[0];
  }

  /**
   * True when the leader's lease is valid: it committed in its term and a quorum answered
   * heartbeats sent within the last `electionTick - 1` ticks (followers refuse votes for a
   * full election timeout after such a heartbeat). Assumes bounded clock drift between nodes
   * and followers that do not restart within the lease.
   */
  leaseValid(): boolean {
    if (this.role !== "leader" || !this.committedInCurrentTerm()) return false;
    const horizon = this.ticks - this.electionTimeout + 1;
    const active = new Set<number>([this.id]);
    for (const [id, pr] of this.trk.progress) if (pr.lastHeardTick >= horizon) active.add(id);
    return this.trk.quorumOf(active) === "won";
  }

  /**
   * Leader only: true when nothing is in flight — every entry is committed and applied, every
   * peer (voters and learners) holds the whole log and answered a heartbeat within the last
   * election timeout, and no read, conf change, transfer or snapshot is pending. Such a group
   * may stop ticking (quiesce) until something happens: see {@link expireLease}.
   */
  isQuiet(): boolean {
    if (this.role !== "leader" || this.leadTransferee !== 0) return false;
    const last = this.log.lastIndex();
    if (this.log.committed !== last || this.log.applied !== last) return false;
    if (this.pendingConfIndex > this.log.applied || this.readOnly.size() > 0) return false;
    if (this.pendingReadStates.length > 0 || this.readyOut !== undefined || this.hasReady()) {
      return false;
    }
    const horizon = this.ticks - this.electionTimeout + 1;
    for (const [id, pr] of this.trk.progress) {
      if (id === this.id) continue;
      // A probing follower that holds the whole log is caught up too (it probes after a
      // failed send until an append succeeds, and an idle leader sends none).
      if (pr.match !== last || pr.state === "snapshot" || pr.lastHeardTick < horizon) {
        return false;
      }
    }
    return true;
  }

  /**
   * Forgets when each peer last answered a heartbeat: {@link leaseValid} is false until a
   * quorum answers one sent after this call. For a leader whose clock stops (quiescence): the
   * lease counts ticks, and with none passing it would otherwise never run out.
   */
  expireLease(): void {
    for (const pr of this.trk.progress.values()) pr.lastHeardTick = Number.NEGATIVE_INFINITY;
  }

  /**
   * Leader only: some follower that may be sent an append now holds entries it has not been
   * told are committed — it was sent no message carrying the commit index since (with
   * `deferCommitAppends`, until the driver calls {@link sendCommit}, the next batch's
   * appends go out, or a heartbeat).
   */
  hasUnsentCommit(): boolean {
    if (this.role !== "leader") return false;
    for (const [id, pr] of this.trk.progress) {
      if (id !== this.id && this.commitUnsent(pr)) return true;
    }
    return false;
  }

  /**
   * Leader only: sends the commit index, in an append (empty when there is nothing new), to
   * every follower that {@link hasUnsentCommit} counts and that may be sent one now.
   */
  sendCommit(): void {
    if (this.role !== "leader") return;
    for (const [id, pr] of this.trk.progress) {
      if (id !== this.id && this.commitUnsent(pr)) this.sendAppend(id);
    }
  }

  // ---------------------------------------------------------------- Ready

  /** True when {@link ready} would return something to do. */
  hasReady(): boolean {
    if (this.readyOut !== undefined) return false;
    if (this.softChanged() || this.hardChanged()) return true;
    if (this.log.unstableSnapshot !== undefined || this.log.unstable.length > 0) return true;
    if (this.msgs.length > 0 || this.confChanged) return true;
    if (this.log.hasNextCommitted()) return true;
    return this.pendingReadStates.some((r) => r.index <= this.log.applied);
  }

  /** Collects the next batch of work. Call {@link advance} once it is done. */
  ready(): Ready {
    if (this.readyOut !== undefined) {
      throw new RaftError("invalid_state", "ready() called again before advance()");
    }
    const entries = [...this.log.unstable];
    const snapshot = this.log.unstableSnapshot;
    const committedEntries = this.log.nextCommitted(this.maxSizePerMsg * 4);
    const messages = coalesceMessages(this.msgs, this.maxSizePerMsg);
    this.msgs = [];
    const readStates = this.pendingReadStates.filter((r) => r.index <= this.log.applied);
    this.pendingReadStates = this.pendingReadStates.filter((r) => r.index > this.log.applied);
    const hs = this.hardState();
    const hardChanged = this.hardChanged();
    const soft: SoftState = { lead: this.lead, role: this.role };
    const softChanged = this.softChanged();
    const mustSync =
      entries.length > 0 ||
      snapshot !== undefined ||
      hs.term !== this.prevHard.term ||
      hs.vote !== this.prevHard.vote;
    this.prevHard = hs;
    this.prevSoft = soft;
    const confState = this.confChanged ? this.trk.confState() : undefined;
    this.confChanged = false;
    const rd: Ready = {
      entries,
      committedEntries,
      messages,
      readStates,
      mustSync,
      ...(softChanged ? { softState: soft } : {}),
      ...(hardChanged ? { hardState: hs } : {}),
      ...(snapshot !== undefined ? { snapshot } : {}),
      ...(confState !== undefined ? { confState } : {}),
    };
    this.readyOut = {
      lastEntry: entries[entries.length - 1],
      snapIndex: snapshot?.metadata.index ?? 0,
      committed: committedEntries,
      waits: snapshot !== undefined || stablyCommitted(rd) < committedEntries.length,
    };
    return rd;
  }

  /**
   * While a Ready is out (between {@link ready} and {@link advance}): the entries committed
   * since, in stable storage, that nothing handed out yet — up to a membership change, at
   * most 4 × `maxSizePerMsg` bytes — for the driver to apply after the Ready's own
   * committed entries without waiting for its write. They count as applied at the next
   * `advance()`. Empty when no Ready is out (its next Ready holds them) or while some of the
   * outstanding Ready's committed entries wait for its write ({@link stablyCommitted}).
   */
  takeCommitted(): Entry[] {
    const out = this.readyOut;
    if (out === undefined || out.waits) return [];
    const handedOut = out.committed[out.committed.length - 1]?.index ?? 0;
    const lo = Math.max(this.log.applied, handedOut, this.taken) + 1;
    const hi = Math.min(this.log.committed, this.log.persistedIndex());
    if (hi < lo || lo < this.log.firstIndex()) return [];
    const es = this.log.slice(lo, hi + 1, this.maxSizePerMsg * 4);
    let n = 0;
    while (n < es.length && (es[n] as Entry).type !== "conf_change") n++;
    const taken = n === es.length ? es : es.slice(0, n);
    if (n > 0) this.taken = (taken[n - 1] as Entry).index;
    return taken;
  }

  /**
   * Acknowledges the last Ready: its snapshot and entries are durable (the store's read view
   * has them) and its committed entries, and those taken since ({@link takeCommitted}), are
   * applied. A leader counts itself towards the commit quorum only from here (its own fsync
   * is done).
   */
  advance(): void {
    const out = this.readyOut;
    if (out === undefined) throw new RaftError("invalid_state", "advance() without ready()");
    this.readyOut = undefined;
    if (out.snapIndex > 0) {
      this.log.stableSnapTo(out.snapIndex);
      if (out.snapIndex > this.log.applied) this.log.applied = out.snapIndex;
    }
    if (out.lastEntry !== undefined) this.log.stableTo(out.lastEntry.index, out.lastEntry.term);
    const last = out.committed[out.committed.length - 1];
    if (last !== undefined) {
      for (const e of out.committed) {
        if (e.type === "conf_change") this.applyConfEntry(e);
      }
    }
    const applied = Math.max(last?.index ?? 0, this.taken);
    if (applied > this.log.applied) this.log.appliedTo(applied);
    if (this.role === "leader") {
      const self = this.trk.progress.get(this.id);
      if (self !== undefined) self.maybeUpdate(this.log.persistedIndex());
      if (this.maybeCommit()) this.bcastCommit();
      this.maybeAutoLeave();
    }
  }

  // ---------------------------------------------------------------- step

  /** Processes one message (from the network, or a local one such as `hup`). */
  step(m: Message): void {
    if (m.term === 0) {
      // local message or forwarded proposal/read
    } else if (m.term > this.term) {
      if (m.type === "vote" || m.type === "pre_vote") {
        const force = sameBytes(m.context, TRANSFER_CONTEXT);
        const inLease =
          this.checkQuorum && this.lead !== 0 && this.electionElapsed < this.electionTimeout;
        if (!force && inLease) return; // leader stickiness (thesis §4.2.3)
      }
      if (m.type === "pre_vote") {
        // a pre-vote never changes our term
      } else if (m.type === "pre_vote_resp" && !m.reject) {
        // the term is bumped once the pre-vote wins
      } else if (m.type === "app" || m.type === "heartbeat" || m.type === "snap") {
        this.becomeFollower(m.term, m.from);
      } else {
        this.becomeFollower(m.term, 0);
      }
    } else if (m.term < this.term) {
      if (m.type === "app" || m.type === "heartbeat") {
        // Tell the stale leader about our term (frees stuck candidates under check-quorum).
        this.send(createMessage({ type: "app_resp", to: m.from, reject: true, index: m.index }));
      } else if (m.type === "pre_vote" || m.type === "vote") {
        this.send(
          createMessage({
            type: m.type === "vote" ? "vote_resp" : "pre_vote_resp",
            to: m.from,
            term: this.term,
            reject: true,
          }),
        );
      }
      return;
    }

    switch (m.type) {
      case "hup":
        this.hup(this.preVote ? "pre_election" : "election");
        return;
      case "vote":
      case "pre_vote": {
        const canVote =
          this.vote === m.from ||
          (this.vote === 0 && this.lead === 0) ||
          (m.type === "pre_vote" && m.term > this.term);
        const respType = m.type === "vote" ? "vote_resp" : "pre_vote_resp";
        if (canVote && this.log.isUpToDate(m.index, m.logTerm)) {
          this.send(createMessage({ type: respType, to: m.from, term: m.term }));
          if (m.type === "vote") {
            this.electionElapsed = 0;
            this.vote = m.from;
          }
        } else {
          this.send(createMessage({ type: respType, to: m.from, term: this.term, reject: true }));
        }
        return;
      }
      default:
        break;
    }
    if (this.role === "leader") this.stepLeader(m);
    else if (this.role === "follower") this.stepFollower(m);
    else this.stepCandidate(m);
  }

  // ---------------------------------------------------------------- roles

  private stepLocal(type: MessageType): void {
    this.step(createMessage({ type, from: this.id }));
  }

  private promotable(): boolean {
    const pr = this.trk.progress.get(this.id);
    return (
      pr !== undefined &&
      !pr.isLearner &&
      this.trk.isVoter(this.id) &&
      this.log.unstableSnapshot === undefined
    );
  }

  private reset(term: number): void {
    if (this.term !== term) {
      this.term = term;
      this.vote = 0;
      this.dropSnapshotBuffer();
    }
    this.lead = 0;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.randomizedElectionTimeout =
      this.electionTimeout + Math.floor(this.random() * this.electionTimeout);
    this.leadTransferee = 0;
    this.trk.resetVotes();
    const last = this.log.lastIndex();
    for (const [id, pr] of this.trk.progress) {
      pr.match = 0;
      pr.becomeProbe();
      pr.next = last + 1;
      pr.recentActive = false;
      pr.lastHeardTick = Number.NEGATIVE_INFINITY;
      pr.commitKnown = 0;
      pr.sentCommit = 0;
      if (id === this.id) pr.match = this.log.persistedIndex();
    }
    this.pendingConfIndex = 0;
    this.readOnly.clear();
    this.pendingReadIndex = [];
  }

  private becomeFollower(term: number, lead: number): void {
    this.reset(term);
    this.role = "follower";
    this.lead = lead;
  }

  private becomePreCandidate(): void {
    this.role = "pre_candidate";
    this.trk.resetVotes();
    this.lead = 0;
  }

  private becomeCandidate(): void {
    this.reset(this.term + 1);
    this.vote = this.id;
    this.role = "candidate";
  }

  private becomeLeader(): void {
    this.reset(this.term);
    this.lead = this.id;
    this.role = "leader";
    const self = this.trk.progress.get(this.id);
    if (self !== undefined) {
      self.becomeReplicate();
      self.match = this.log.persistedIndex();
      self.recentActive = true;
    }
    // Inherited uncommitted entries may hold a conf change: block new ones until applied.
    this.pendingConfIndex = this.log.lastIndex();
    this.appendEntries([{ index: 0, term: 0, type: "normal", data: EMPTY }]);
  }

  private hup(t: CampaignType): void {
    if (this.role === "leader") return;
    if (!this.promotable()) return;
    // A committed but unapplied conf change may change whether we are a voter.
    for (const e of this.log.nextCommitted()) if (e.type === "conf_change") return;
    this.campaign2(t);
  }

  private campaign2(t: CampaignType): void {
    let term: number;
    let type: "vote" | "pre_vote";
    if (t === "pre_election") {
      this.becomePreCandidate();
      type = "pre_vote";
      term = this.term + 1;
    } else {
      this.becomeCandidate();
      type = "vote";
      term = this.term;
    }
    this.trk.recordVote(this.id, true);
    if (this.tally(t === "pre_election")) return;
    for (const id of this.trk.voterIds()) {
      if (id === this.id) continue;
      this.send(
        createMessage({
          type,
          to: id,
          term,
          index: this.log.lastIndex(),
          logTerm: this.log.lastTerm(),
          context: t === "transfer" ? TRANSFER_CONTEXT : EMPTY,
        }),
      );
    }
  }

  /** Acts on the vote tally; true when the election was decided. */
  private tally(pre: boolean): boolean {
    const r = this.trk.tallyVotes();
    if (r === "won") {
      if (pre) this.campaign2("election");
      else {
        this.becomeLeader();
        this.bcastAppend();
      }
      return true;
    }
    if (r === "lost") {
      this.becomeFollower(this.term, 0);
      return true;
    }
    return false;
  }

  private tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.stepLocal("hup");
    }
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.electionTimeout) {
      this.electionElapsed = 0;
      if (this.checkQuorum) this.stepLocal("check_quorum");
      if (this.role === "leader" && this.leadTransferee !== 0) this.leadTransferee = 0;
    }
    if (this.role !== "leader") return;
    if (this.heartbeatElapsed >= this.heartbeatTimeout) {
      this.heartbeatElapsed = 0;
      this.stepLocal("beat");
    }
  }

  // ---------------------------------------------------------------- sending

  private send(m: Message): void {
    let term = m.term;
    if (m.type === "prop" || m.type === "read_index") term = 0;
    else if (
      m.type !== "vote" &&
      m.type !== "vote_resp" &&
      m.type !== "pre_vote" &&
      m.type !== "pre_vote_resp"
    ) {
      term = this.term;
    }
    this.msgs.push({ ...m, from: m.from === 0 ? this.id : m.from, term });
  }

  private sendAppend(to: number, sendIfEmpty = true): boolean {
    const pr = this.trk.progress.get(to);
    if (pr === undefined || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.termOrError(prevIndex);
    if (prevTerm === "compacted") return this.sendSnapshot(to, pr);
    if (prevTerm === "unavailable") {
      pr.next = this.log.lastIndex() + 1;
      return false;
    }
    let ents: Entry[];
    try {
      ents = this.log.entriesFrom(pr.next, this.maxSizePerMsg);
    } catch {
      return this.sendSnapshot(to, pr);
    }
    if (ents.length === 0 && !sendIfEmpty) return false;
    this.send(
      createMessage({
        type: "app",
        to,
        index: prevIndex,
        logTerm: prevTerm,
        entries: ents,
        commit: this.log.committed,
      }),
    );
    const lastEnt = ents[ents.length - 1];
    const sentTo = lastEnt === undefined ? prevIndex : lastEnt.index;
    pr.sentEntries(ents.length, sentTo);
    // The follower commits up to the last entry this append vouches for (etcd's rule).
    pr.sentCommit = Math.max(pr.sentCommit, Math.min(this.log.committed, sentTo));
    return true;
  }

  private sendSnapshot(to: number, pr: Progress): boolean {
    const snap = this.snapshotSource === undefined ? this.log.snapshot() : this.snapshotSource();
    // A source's snapshot older than the compacted log could not bring the follower up to it.
    if (snap === undefined || snap.metadata.index === 0) return false;
    if (snap.metadata.index < this.log.firstIndex() - 1) return false;
    pr.becomeSnapshot(snap);
    this.sendChunks(to, pr);
    return true;
  }

  /**
   * Sends the chunks of `pr.snapshot` from `pr.snapNext` while fewer than
   * {@link SNAPSHOT_CHUNK_WINDOW} chunks past the acknowledged offset are in flight.
   */
  private sendChunks(to: number, pr: Progress): void {
    const snap = pr.snapshot;
    if (snap === undefined) return;
    const total = snap.data.byteLength;
    while (!pr.snapDone && pr.snapNext - pr.snapOffset < SNAPSHOT_CHUNK_WINDOW * this.chunkSize) {
      const off = Math.min(pr.snapNext, total);
      const end = Math.min(total, off + this.chunkSize);
      let data: Uint8Array;
      try {
        data = snap.data.subarray(off, end);
      } catch {
        // The source could not read it: give the transfer up, as a failed report does; the
        // next probe that finds the log compacted asks the source again.
        pr.becomeProbe();
        pr.probeSent = true;
        return;
      }
      this.send(
        createMessage({
          type: "snap",
          to,
          snapshot: { metadata: snap.metadata, data },
          chunkOffset: off,
          chunkTotal: total,
        }),
      );
      pr.snapNext = end;
      if (end >= total) pr.snapDone = true;
    }
  }

  private bcastAppend(): void {
    for (const id of this.trk.ids()) if (id !== this.id) this.sendAppend(id);
  }

  /** After the commit index moved: see {@link RaftOptions.deferCommitAppends}. */
  private bcastCommit(): void {
    if (!this.deferCommitAppends) {
      this.bcastAppend();
      return;
    }
    for (const id of this.trk.ids()) if (id !== this.id) this.sendAppend(id, false);
  }

  /**
   * `pr` was sent entries committed here that no message sent to it said were (etcd's
   * `CanBumpCommit`: what an append at `next` could tell it), and may be sent an append now
   * (a paused follower learns the index from the next heartbeat: no driver timer spins on it).
   */
  private commitUnsent(pr: Progress): boolean {
    return !pr.isPaused() && Math.min(pr.next - 1, this.log.committed) > pr.sentCommit;
  }

  private bcastHeartbeat(context: Uint8Array = EMPTY): void {
    for (const id of this.trk.ids()) {
      if (id === this.id) continue;
      const pr = this.trk.progress.get(id) as Progress;
      const commit = Math.min(pr.match, this.log.committed);
      this.send(
        createMessage({
          type: "heartbeat",
          to: id,
          // The send tick, echoed by the answer: leases count from when the follower could
          // at the earliest have reset its election timer, never from when the ack arrived.
          index: this.ticks,
          commit,
          context,
        }),
      );
      pr.sentCommit = Math.max(pr.sentCommit, commit);
    }
  }

  // ---------------------------------------------------------------- leader

  private appendEntries(es: readonly Entry[]): boolean {
    let li = this.log.lastIndex();
    const stamped = es.map((e) => {
      li++;
      return { index: li, term: this.term, type: e.type, data: e.data };
    });
    this.log.append(stamped);
    return true;
  }

  private committedInCurrentTerm(): boolean {
    return this.log.term(this.log.committed) === this.term;
  }

  private maybeCommit(): boolean {
    const before = this.log.committed;
    const ok = this.log.maybeCommit(this.trk.committed(), this.term);
    if (ok && this.log.term(before) !== this.term && this.committedInCurrentTerm()) {
      // First commit in this term: serve the ReadIndex requests held back until now.
      const held = this.pendingReadIndex;
      this.pendingReadIndex = [];
      for (const r of held) this.handleReadIndex(r);
    }
    return ok;
  }

  private proposeEntry(type: Entry["type"], data: Uint8Array): void {
    if (this.role === "leader") {
      if (this.leadTransferee !== 0) {
        throw new RaftError(
          "transfer_in_progress",
          `leadership is moving to ${this.leadTransferee}`,
          { leaderHint: this.leadTransferee },
        );
      }
      if (!this.trk.isVoter(this.id)) {
        throw new RaftError("proposal_dropped", "this leader is no longer a voter");
      }
    } else if (this.lead === 0) {
      throw new RaftError("no_leader", "no leader known; proposal not accepted");
    } else if (this.role === "follower" && !this.forwardProposals) {
      throw new RaftError("not_leader", `node ${this.id} is not the leader`, {
        leaderHint: this.lead,
      });
    }
    this.step(
      createMessage({
        type: "prop",
        from: this.id,
        entries: [{ index: 0, term: 0, type, data }],
      }),
    );
  }

  private stepLeader(m: Message): void {
    switch (m.type) {
      case "beat":
        this.bcastHeartbeat(this.readOnly.lastPendingContext() ?? EMPTY);
        return;
      case "check_quorum":
        if (!this.trk.quorumActive(this.id)) {
          this.becomeFollower(this.term, 0);
          return;
        }
        for (const [id, pr] of this.trk.progress) if (id !== this.id) pr.recentActive = false;
        return;
      case "prop": {
        if (!this.trk.isVoter(this.id) || this.leadTransferee !== 0) return; // dropped
        const ents = m.entries.map((e): Entry => {
          if (e.type !== "conf_change") return e;
          let refused = this.pendingConfIndex > this.log.applied;
          if (!refused) {
            try {
              applyConfChange(this.trk.confState(), this.codec.decode(e.data));
            } catch {
              refused = true;
            }
          }
          return refused ? { ...e, type: "normal", data: EMPTY } : e;
        });
        const first = this.log.lastIndex() + 1;
        ents.forEach((e, i) => {
          if (e.type === "conf_change") this.pendingConfIndex = first + i;
        });
        this.appendEntries(ents);
        this.bcastAppend();
        return;
      }
      case "read_index":
        if (!this.committedInCurrentTerm()) {
          this.pendingReadIndex.push(m);
          return;
        }
        this.handleReadIndex(m);
        return;
      case "transfer_leader":
        this.handleTransferLeader(m.from);
        return;
      default:
        break;
    }
    const pr = this.trk.progress.get(m.from);
    if (pr === undefined) return;
    switch (m.type) {
      case "app_resp":
        pr.recentActive = true;
        if (!m.reject) pr.commitKnown = Math.max(pr.commitKnown, m.commit);
        this.handleAppendResponse(m, pr);
        this.maybeStepDownRemoved();
        return;
      case "heartbeat_resp": {
        pr.recentActive = true;
        pr.lastHeardTick = Math.max(pr.lastHeardTick, Math.min(m.index, this.ticks));
        pr.probeSent = false;
        pr.commitKnown = Math.max(pr.commitKnown, m.commit);
        if (pr.state === "snapshot") {
          // Resend only when the transfer made no progress for a whole heartbeat round (a
          // chunk or its answer was lost silently): go back to the follower's last reported
          // offset (it may have restarted and lost its buffer) and refill the window. Never
          // a second chain of chunks next to a live one.
          if (!pr.snapActive) {
            pr.snapOffset = Math.min(pr.snapOffset, pr.snapReported);
            pr.snapNext = pr.snapOffset;
            pr.snapDone = false;
            this.sendChunks(m.from, pr);
          }
          pr.snapActive = false;
        } else {
          // A full window whose appends (or answers) were all lost would never be freed:
          // free one slot per heartbeat answer so that one append goes out (etcd).
          if (pr.inflightsFull()) pr.freeFirstInflight();
          if (pr.match < this.log.lastIndex()) this.sendAppend(m.from);
        }
        if (this.maybeStepDownRemoved()) return;
        if (this.readOnlyOption !== "safe" || m.context.byteLength === 0) return;
        const acks = this.readOnly.recvAck(m.from, m.context);
        if (acks === undefined) return;
        const withSelf = new Set(acks);
        withSelf.add(this.id);
        if (this.trk.quorumOf(withSelf) !== "won") return;
        for (const r of this.readOnly.advance(m.context)) this.answerRead(r.req, r.index);
        return;
      }
      case "snap_resp":
        pr.recentActive = true;
        if (pr.state !== "snapshot" || m.index !== pr.pendingSnapshot) return;
        if (m.reject) return;
        pr.snapReported = m.chunkOffset;
        // Only an answer that moves the acknowledged offset forward sends more (at most
        // the window); duplicates and reordered answers send nothing, so duplicated
        // messages cannot multiply chunk chains (bug B).
        if (m.chunkOffset <= pr.snapOffset) return;
        pr.snapOffset = m.chunkOffset;
        if (pr.snapNext < pr.snapOffset) pr.snapNext = pr.snapOffset;
        pr.snapActive = true;
        this.sendChunks(m.from, pr);
        return;
      case "snap_status":
        if (pr.state !== "snapshot") return;
        if (m.reject) {
          pr.becomeProbe();
          pr.probeSent = true; // wait for the next heartbeat before probing again
        } else {
          pr.becomeProbe();
        }
        return;
      case "unreachable":
        if (pr.state === "replicate") pr.becomeProbe();
        return;
      default:
        return;
    }
  }

  private handleAppendResponse(m: Message, pr: Progress): void {
    if (m.reject) {
      let hint = m.rejectHint;
      if (m.logTerm > 0) hint = this.log.findConflictByTerm(m.rejectHint, m.logTerm);
      if (pr.maybeDecrTo(m.index, hint)) {
        if (pr.state === "replicate") pr.becomeProbe();
        this.sendAppend(m.from);
      }
      return;
    }
    const wasPaused = pr.isPaused();
    if (!pr.maybeUpdate(m.index)) return;
    if (pr.state === "probe") pr.becomeReplicate();
    else if (pr.state === "snapshot" && pr.match + 1 >= this.log.firstIndex()) {
      pr.becomeProbe();
      pr.becomeReplicate();
    } else if (pr.state === "snapshot" && pr.match >= pr.pendingSnapshot) {
      // The snapshot landed but this leader compacted past it meanwhile: probe again, which
      // sends the current snapshot (bug B: it stayed in snapshot state with a stale one).
      pr.becomeProbe();
    } else if (pr.state === "replicate") pr.freeInflightsTo(m.index);
    if (this.maybeCommit()) this.bcastCommit();
    else if (wasPaused) this.sendAppend(m.from);
    while (this.sendAppend(m.from, false)) {
      // keep the pipeline full
    }
    if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) {
      this.send(createMessage({ type: "timeout_now", to: m.from }));
    }
  }

  private handleTransferLeader(transferee: number): void {
    const pr = this.trk.progress.get(transferee);
    if (pr === undefined || pr.isLearner || !this.trk.isVoter(transferee)) return;
    if (this.leadTransferee !== 0) {
      if (this.leadTransferee === transferee) return;
      this.leadTransferee = 0;
    }
    if (transferee === this.id) return;
    // The transfer must finish within one election timeout.
    this.electionElapsed = 0;
    this.leadTransferee = transferee;
    if (pr.match === this.log.lastIndex()) {
      this.send(createMessage({ type: "timeout_now", to: transferee }));
    } else {
      this.sendAppend(transferee);
    }
  }

  private handleReadIndex(m: Message): void {
    if (this.trk.voterIds().length === 1 && this.trk.isVoter(this.id)) {
      this.answerRead(m, this.log.committed);
      return;
    }
    if (this.readOnlyOption === "lease_based") {
      if (this.leaseValid()) this.answerRead(m, this.log.committed);
      else if (m.from !== this.id) {
        this.send(createMessage({ type: "read_index_resp", to: m.from, reject: true }));
      }
      return;
    }
    this.readOnly.add(this.log.committed, m);
    this.readOnly.recvAck(this.id, m.context);
    this.bcastHeartbeat(m.context);
  }

  private answerRead(req: Message, index: number): void {
    if (req.from === this.id || req.from === 0) {
      this.pendingReadStates.push({ index, context: req.context });
    } else {
      this.send(
        createMessage({ type: "read_index_resp", to: req.from, index, context: req.context }),
      );
    }
  }

  // ---------------------------------------------------------------- follower / candidate

  private stepFollower(m: Message): void {
    switch (m.type) {
      case "prop":
        if (this.lead === 0 || !this.forwardProposals) return; // dropped
        this.send({ ...m, to: this.lead });
        return;
      case "app":
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleAppendEntries(m);
        return;
      case "heartbeat":
        // The leader sends the commit index capped at what this node acknowledged having, so
        // a log that ends before it lost acknowledged entries (etcd panics here). Answering
        // would let the leader count this node toward quorums it cannot be part of.
        if (m.commit > this.log.lastIndex()) {
          throw new RaftError(
            "log_lost",
            `node ${this.id}'s log ends at index ${this.log.lastIndex()}, but its leader (node ${m.from}) counts it as holding entries up to ${m.commit}: its storage lost writes it had acknowledged; remove this node from the group and add it back`,
          );
        }
        this.electionElapsed = 0;
        this.lead = m.from;
        this.log.commitTo(m.commit);
        this.send(
          createMessage({
            type: "heartbeat_resp",
            to: m.from,
            index: m.index,
            context: m.context,
            commit: this.log.committed,
          }),
        );
        return;
      case "snap":
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleSnapshot(m);
        return;
      case "transfer_leader":
      case "read_index":
        if (this.lead === 0) return;
        this.send({ ...m, to: this.lead });
        return;
      case "timeout_now":
        this.hup("transfer");
        return;
      case "read_index_resp":
        if (m.reject) return; // fail closed: the read is not answered
        this.pendingReadStates.push({ index: m.index, context: m.context });
        return;
      default:
        return;
    }
  }

  private stepCandidate(m: Message): void {
    const pre = this.role === "pre_candidate";
    switch (m.type) {
      case "app":
        this.becomeFollower(m.term, m.from);
        this.handleAppendEntries(m);
        return;
      case "heartbeat":
        this.becomeFollower(m.term, m.from);
        this.stepFollower(m);
        return;
      case "snap":
        this.becomeFollower(m.term, m.from);
        this.handleSnapshot(m);
        return;
      case "vote_resp":
      case "pre_vote_resp":
        if ((m.type === "pre_vote_resp") !== pre) return;
        this.trk.recordVote(m.from, !m.reject);
        this.tally(pre);
        return;
      default:
        return; // proposals are dropped; timeout_now ignored
    }
  }

  private handleAppendEntries(m: Message): void {
    if (m.index < this.log.committed) {
      this.ackAppend(m.from, this.log.committed);
      return;
    }
    const last = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
    if (last !== undefined) {
      this.ackAppend(m.from, last);
      return;
    }
    let hint = Math.min(m.index, this.log.lastIndex());
    hint = this.log.findConflictByTerm(hint, m.logTerm);
    this.send(
      createMessage({
        type: "app_resp",
        to: m.from,
        index: m.index,
        reject: true,
        rejectHint: hint,
        logTerm: this.log.term(hint),
      }),
    );
  }

  private handleSnapshot(m: Message): void {
    const s = m.snapshot;
    if (s === undefined) return;
    const { index, term } = s.metadata;
    if (index <= this.log.committed) {
      // Stale (scenario 39), or installed already and our answer was lost: say so at once
      // instead of buffering the whole transfer again; the leader moves on from our commit.
      this.dropSnapshotBuffer();
      this.ackAppend(m.from, this.log.committed);
      return;
    }
    let buf = this.snapBuffer;
    if (buf !== undefined && (index < buf.index || (index === buf.index && term !== buf.term))) {
      // A chunk of an older transfer (reordered): say so; the leader ignores it unless that
      // is the snapshot it is sending.
      this.send(createMessage({ type: "snap_resp", to: m.from, index, reject: true }));
      return;
    }
    let data: SnapshotBytes | undefined;
    try {
      if (buf === undefined || index > buf.index) {
        this.dropSnapshotBuffer();
        const sink = this.snapshotReceiver.begin(s.metadata, m.chunkTotal);
        buf = { index, term, total: m.chunkTotal, size: 0, sink, ahead: new Map() };
        this.snapBuffer = buf;
      }
      if (m.chunkOffset === buf.size) {
        buf.sink.append(s.data);
        buf.size += s.data.byteLength;
        for (
          let next = buf.ahead.get(buf.size);
          next !== undefined;
          next = buf.ahead.get(buf.size)
        ) {
          buf.ahead.delete(buf.size);
          buf.sink.append(next);
          buf.size += next.byteLength;
        }
      } else if (m.chunkOffset > buf.size && m.chunkOffset < buf.total) {
        buf.ahead.set(m.chunkOffset, s.data); // reordered: keep it for later
      }
      // else: a duplicate of a chunk already received
      if (buf.size >= buf.total) data = buf.sink.finish();
    } catch {
      // The sink failed (a disk write): give this transfer up; the leader starts it again.
      this.dropSnapshotBuffer();
      this.send(createMessage({ type: "snap_resp", to: m.from, index, reject: true }));
      return;
    }
    if (data === undefined) {
      // Every chunk is answered with the next offset expected (resume point).
      this.send(createMessage({ type: "snap_resp", to: m.from, index, chunkOffset: buf.size }));
      return;
    }
    this.snapBuffer = undefined;
    if (this.restore({ metadata: s.metadata, data })) this.ackAppend(m.from, this.log.lastIndex());
    else this.ackAppend(m.from, this.log.committed);
  }

  /** Gives up the snapshot transfer being received, if any. */
  private dropSnapshotBuffer(): void {
    const buf = this.snapBuffer;
    this.snapBuffer = undefined;
    if (buf === undefined) return;
    try {
      buf.sink.discard();
    } catch {
      // Nothing of it is needed; a sink that cannot clean up is not the core's concern.
    }
  }

  /** Acknowledges the log up to `index`, reporting the commit index this node knows. */
  private ackAppend(to: number, index: number): void {
    this.send(createMessage({ type: "app_resp", to, index, commit: this.log.committed }));
  }

  /**
   * Installs a complete snapshot; false (ignored) when it is not newer than the commit index.
   *
   * A snapshot whose configuration does not include this node is installed too (bug D): a
   * leader only sends to peers of its applied configuration, so such a snapshot predates the
   * conf change that added us, and that change follows in the entries the leader sends next.
   * Until it is applied this node is not promotable (no progress entry of its own), exactly
   * like a node added but not yet caught up. Refusing it (etcd's defensive check) left the
   * node unable to catch up until the application happened to take a newer snapshot.
   */
  private restore(s: Snapshot): boolean {
    const { index, term, confState: cs } = s.metadata;
    if (index <= this.log.committed) return false;
    let keep: Entry[] = [];
    if (this.log.matchTerm(index, term) && index < this.log.lastIndex()) {
      keep = this.log.slice(index + 1, this.log.lastIndex() + 1);
    }
    this.log.restore(s, keep);
    this.trk.progress.clear();
    this.trk.applyConfState(cs, this.log.lastIndex() + 1);
    this.confChanged = true;
    return true;
  }

  // ---------------------------------------------------------------- membership

  private applyConfEntry(e: Entry): void {
    let next: ConfState;
    let cc: ConfChange;
    try {
      cc = this.codec.decode(e.data);
      next = applyConfChange(this.trk.confState(), cc);
    } catch {
      return; // refused changes apply as no-ops on every replica alike
    }
    // A peer this change removes is sent nothing after it: told now of the commit index
    // (which no append may have carried yet), it learns of its removal and closes.
    if (this.deferCommitAppends) this.sendCommit();
    this.trk.applyConfState(next, this.log.lastIndex() + 1);
    this.confChanged = true;
    if (this.role !== "leader") return;
    if (this.leadTransferee !== 0 && !this.trk.isVoter(this.leadTransferee)) {
      this.leadTransferee = 0;
    }
    if (this.maybeCommit()) this.bcastCommit();
    else for (const id of this.trk.ids()) if (id !== this.id) this.sendAppend(id, false);
    this.maybeStepDownRemoved();
  }

  /**
   * A leader that an applied conf change removed (or demoted to learner) steps down only
   * once a quorum of the new configuration has reported knowing that its whole log is
   * committed — so that they applied the change and can elect a leader among themselves —
   * and hands leadership to the most up-to-date of them (TimeoutNow). Stepping down at once
   * (bug E) left the others in the joint configuration when the appends carrying the new
   * commit index were lost: they then needed a C_old majority whose most up-to-date members
   * (the removed leader, demoted learners) never campaign. Until then it keeps replicating
   * and heartbeating but refuses proposals (`proposal_dropped`), so its log cannot grow.
   * True when it stepped down.
   */
  private maybeStepDownRemoved(): boolean {
    if (this.role !== "leader" || !this.stepDownOnRemoval || this.trk.isVoter(this.id)) {
      return false;
    }
    const last = this.log.lastIndex();
    if (this.log.committed < last || this.trk.commitKnownByQuorum() < last) return false;
    // Hand over to a voter that holds the whole log and knows it is committed (lowest id).
    const to = this.trk.voterIds().find((id) => {
      const pr = this.trk.progress.get(id);
      return id !== this.id && pr !== undefined && pr.match === last && pr.commitKnown >= last;
    });
    if (to !== undefined) this.send(createMessage({ type: "timeout_now", to }));
    this.becomeFollower(this.term, 0);
    return true;
  }

  private maybeAutoLeave(): void {
    if (!this.trk.isJoint() || !this.trk.autoLeave) return;
    if (this.pendingConfIndex > this.log.applied || this.leadTransferee !== 0) return;
    const leave: ConfChange = { changes: [], transition: "auto" };
    const idx = this.log.lastIndex() + 1;
    this.appendEntries([
      { index: 0, term: 0, type: "conf_change", data: this.codec.encode(leave) },
    ]);
    this.pendingConfIndex = idx;
    this.bcastAppend();
  }

  // ---------------------------------------------------------------- helpers

  private hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  private hardChanged(): boolean {
    const h = this.prevHard;
    return h.term !== this.term || h.vote !== this.vote || h.commit !== this.log.committed;
  }

  private softChanged(): boolean {
    return this.prevSoft.lead !== this.lead || this.prevSoft.role !== this.role;
  }
}

/**
 * Creates a Raft node.
 *
 * @example
 * ```ts
 * const node = createRaft({ id: 1, storage, electionTick: 10, random: createPrng(7) });
 * node.tick();
 * while (node.hasReady()) {
 *   const rd = node.ready();
 *   await store.save(rd);          // snapshot, entries, hard state — synced
 *   transport.send(rd.messages);   // after the write (leader appends may go earlier)
 *   apply(rd.committedEntries);
 *   node.advance();
 * }
 * ```
 */
export function createRaft(options: RaftOptions): Raft {
  return new Raft(options);
}
