import type { ConfState, Snapshot } from "../types.js";
import {
  type JointConfig,
  jointCommitted,
  jointIds,
  jointVote,
  type VoteResult,
} from "./quorum.js";

/** Replication state of one follower as seen by the leader. */
export type ProgressState = "probe" | "replicate" | "snapshot";

/**
 * The leader's view of one peer: how far its log matches (`match`), the next index to send
 * (`next`), and the flow-control state. Probe: one message per heartbeat until a match is
 * found. Replicate: optimistic pipelining bounded by `maxInflight`. Snapshot: waiting for a
 * (chunked) snapshot to land.
 */
export class Progress {
  match = 0;
  next = 1;
  state: ProgressState = "probe";
  /** Probe state: a message was sent and no answer arrived yet. */
  probeSent = false;
  /** Snapshot state: index of the snapshot being sent. */
  pendingSnapshot = 0;
  /** Snapshot state: the snapshot being sent (held so every chunk comes from one snapshot). */
  snapshot: Snapshot | undefined = undefined;
  /** Snapshot state: highest offset the follower acknowledged (it has every byte before). */
  snapOffset = 0;
  /** Snapshot state: offset of the next chunk to send. */
  snapNext = 0;
  /** Snapshot state: the last chunk was sent (since the last resend). */
  snapDone = false;
  /** Snapshot state: the offset in the follower's latest answer (lower after its restart). */
  snapReported = 0;
  /**
   * Snapshot state: a chunk went out or was acknowledged since the last heartbeat answer.
   * A heartbeat answer resends the current chunk only when the transfer was idle for a whole
   * round (its chunk or the answer was lost), so every transfer has at most one chunk chain.
   */
  snapActive = false;
  /**
   * Highest commit index the peer reported in an answer (`app_resp`, `heartbeat_resp`): the
   * peer has learnt that everything up to it is committed. A removed leader waits for a
   * quorum of the new configuration to report its commit before stepping down.
   */
  commitKnown = 0;
  /**
   * Highest commit index a message sent to the peer could let it reach (the index an append
   * carried, capped at its last entry; a heartbeat's): see `RaftOptions.deferCommitAppends`.
   */
  sentCommit = 0;
  /** Heard from since the last check-quorum round. */
  recentActive = false;
  /** Leader tick at which the peer last answered (for leases). */
  lastHeardTick: number = Number.NEGATIVE_INFINITY;
  isLearner = false;
  /** Last indexes of in-flight append messages (replicate state). */
  inflights: number[] = [];

  constructor(
    next: number,
    private readonly maxInflight: number,
  ) {
    this.next = next;
  }

  private resetState(state: ProgressState): void {
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.snapshot = undefined;
    this.snapOffset = 0;
    this.snapNext = 0;
    this.snapDone = false;
    this.snapReported = 0;
    this.snapActive = false;
    this.state = state;
    this.inflights = [];
  }

  becomeProbe(): void {
    if (this.state === "snapshot") {
      const pending = this.pendingSnapshot;
      this.resetState("probe");
      this.next = Math.max(this.match + 1, pending + 1);
    } else {
      this.resetState("probe");
      this.next = this.match + 1;
    }
  }

  becomeReplicate(): void {
    this.resetState("replicate");
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshot: Snapshot): void {
    this.resetState("snapshot");
    this.pendingSnapshot = snapshot.metadata.index;
    this.snapshot = snapshot;
    this.snapActive = true;
  }

  /** Updates match/next from an acknowledgement; false when the ack is stale. */
  maybeUpdate(n: number): boolean {
    let updated = false;
    if (this.match < n) {
      this.match = n;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, n + 1);
    return updated;
  }

  /**
   * Handles a rejection of the append at `rejected`, moving `next` back to at most
   * `matchHint + 1` (fast back-off). False when the rejection is stale.
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === "replicate") {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1, 1);
    this.probeSent = false;
    return true;
  }

  /** Records that entries up to `lastIndex` (or none) were just sent. */
  sentEntries(count: number, lastIndex: number): void {
    if (this.state === "replicate") {
      if (count > 0) {
        this.next = lastIndex + 1;
        this.inflights.push(lastIndex);
      }
    } else if (this.state === "probe") {
      this.probeSent = true;
    }
  }

  /** Frees in-flight slots acknowledged up to `index`. */
  freeInflightsTo(index: number): void {
    this.inflights = this.inflights.filter((i) => i > index);
  }

  /**
   * Frees the oldest in-flight slot (etcd: on a heartbeat answer while the window is full).
   * Without it a follower whose whole window of appends (or their answers) was lost is
   * never sent anything again: only acknowledgements free slots (bug A).
   */
  freeFirstInflight(): void {
    this.inflights = this.inflights.slice(1);
  }

  /** Replicate state with a full in-flight window. */
  inflightsFull(): boolean {
    return this.state === "replicate" && this.inflights.length >= this.maxInflight;
  }

  /** No more appends may go out right now. */
  isPaused(): boolean {
    switch (this.state) {
      case "probe":
        return this.probeSent;
      case "replicate":
        return this.inflights.length >= this.maxInflight;
      default:
        return true;
    }
  }
}

/** Membership plus replication progress of every peer, as tracked by each node. */
export class ProgressTracker {
  voters: JointConfig = { incoming: new Set(), outgoing: new Set() };
  learners: Set<number> = new Set();
  learnersNext: Set<number> = new Set();
  autoLeave = false;
  progress: Map<number, Progress> = new Map();
  votes: Map<number, boolean> = new Map();

  constructor(private readonly maxInflight: number) {}

  /** Replaces the configuration, keeping progress of peers that stay. */
  applyConfState(cs: ConfState, nextIndex: number): void {
    this.voters = { incoming: new Set(cs.voters), outgoing: new Set(cs.votersOutgoing) };
    this.learners = new Set(cs.learners);
    this.learnersNext = new Set(cs.learnersNext);
    this.autoLeave = cs.autoLeave;
    const ids = new Set([...jointIds(this.voters), ...this.learners, ...this.learnersNext]);
    for (const id of [...this.progress.keys()]) if (!ids.has(id)) this.progress.delete(id);
    for (const id of [...ids].sort((a, b) => a - b)) {
      let pr = this.progress.get(id);
      if (pr === undefined) {
        pr = new Progress(nextIndex, this.maxInflight);
        // A new peer counts as active so that adding it cannot make check-quorum fire at once.
        pr.recentActive = true;
        this.progress.set(id, pr);
      }
      pr.isLearner = this.learners.has(id) || (this.learnersNext.has(id) && !this.isVoter(id));
    }
  }

  /** The configuration as a {@link ConfState}. */
  confState(): ConfState {
    const sorted = (s: ReadonlySet<number>): number[] => [...s].sort((a, b) => a - b);
    return {
      voters: sorted(this.voters.incoming),
      learners: sorted(this.learners),
      votersOutgoing: sorted(this.voters.outgoing),
      learnersNext: sorted(this.learnersNext),
      autoLeave: this.autoLeave,
    };
  }

  isJoint(): boolean {
    return this.voters.outgoing.size > 0;
  }

  isVoter(id: number): boolean {
    return this.voters.incoming.has(id) || this.voters.outgoing.has(id);
  }

  /** All voters, ascending. */
  voterIds(): number[] {
    return jointIds(this.voters);
  }

  /** All peers (voters and learners), ascending. */
  ids(): number[] {
    return [...this.progress.keys()].sort((a, b) => a - b);
  }

  /** Largest index acknowledged by a (joint) quorum of voters. */
  committed(): number {
    return jointCommitted(this.voters, (id) => this.progress.get(id)?.match);
  }

  /** Largest commit index that a (joint) quorum of voters reported knowing. */
  commitKnownByQuorum(): number {
    return jointCommitted(this.voters, (id) => this.progress.get(id)?.commitKnown);
  }

  resetVotes(): void {
    this.votes = new Map();
  }

  recordVote(id: number, granted: boolean): void {
    if (!this.votes.has(id)) this.votes.set(id, granted);
  }

  tallyVotes(): VoteResult {
    return jointVote(this.voters, (id) => this.votes.get(id));
  }

  /** Vote result for an arbitrary set of acknowledging ids (ReadIndex, quorum checks). */
  quorumOf(acks: ReadonlySet<number>): VoteResult {
    return jointVote(this.voters, (id) => (acks.has(id) ? true : undefined));
  }

  /** True when a quorum of voters was recently active (the leader counts itself). */
  quorumActive(self: number): boolean {
    const active = new Set<number>();
    for (const [id, pr] of this.progress) if (id === self || pr.recentActive) active.add(id);
    return this.quorumOf(active) === "won";
  }
}
