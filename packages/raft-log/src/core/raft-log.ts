import type { LogStore } from "../storage-port.js";
import type { Entry, Snapshot } from "../types.js";
import { RaftError } from "./raft-error.js";

/** The read side of a {@link LogStore}: what the core needs to see of stable storage. */
export type LogReader = Pick<
  LogStore,
  "initialState" | "entries" | "term" | "firstIndex" | "lastIndex" | "snapshot"
>;

function entryBytes(e: Entry): number {
  return e.data.byteLength + 16;
}

/**
 * The node's log: stable storage (what the driver persisted, read through {@link LogReader})
 * plus the unstable tail (entries and possibly a snapshot handed out in a Ready but not yet
 * acknowledged by `advance()`). Tracks `committed` and `applied`.
 */
export class RaftLog {
  /** Unstable snapshot (received from a leader, not yet persisted). */
  unstableSnapshot: Snapshot | undefined = undefined;
  /** Unstable entries; `unstable[0]` has index `offset`. */
  unstable: Entry[] = [];
  offset: number;
  committed: number;
  applied: number;

  constructor(
    readonly storage: LogReader,
    applied = 0,
  ) {
    const first = storage.firstIndex();
    const last = storage.lastIndex();
    this.offset = last + 1;
    this.committed = first - 1;
    this.applied = Math.max(first - 1, applied);
  }

  firstIndex(): number {
    if (this.unstableSnapshot !== undefined) return this.unstableSnapshot.metadata.index + 1;
    return this.storage.firstIndex();
  }

  lastIndex(): number {
    if (this.unstable.length > 0) return this.offset + this.unstable.length - 1;
    // With an unstable snapshot, entries it kept may already be durable (an earlier Ready's
    // `advance()` moved them out of the unstable tail): the log then ends at `offset - 1`,
    // which is the snapshot index when nothing was kept.
    if (this.unstableSnapshot !== undefined) return this.offset - 1;
    return this.storage.lastIndex();
  }

  lastTerm(): number {
    return this.term(this.lastIndex());
  }

  /** Term at `i`; 0 when `i` is outside the retained range (compacted or beyond the end). */
  term(i: number): number {
    const r = this.termOrError(i);
    return typeof r === "number" ? r : 0;
  }

  /** Term at `i`, or the error code explaining why it is unknown. */
  termOrError(i: number): number | "compacted" | "unavailable" {
    if (i === 0) return 0;
    if (this.unstable.length > 0 && i >= this.offset) {
      const e = this.unstable[i - this.offset];
      return e === undefined ? "unavailable" : e.term;
    }
    const snap = this.unstableSnapshot;
    if (snap !== undefined) {
      if (i === snap.metadata.index) return snap.metadata.term;
      if (i < snap.metadata.index) return "compacted";
      if (i >= this.offset) return "unavailable";
      // snapshot < i < offset: an entry the snapshot kept (it matched the log) that an
      // earlier Ready made durable while the snapshot itself is still being written. Storage
      // holds it (under its old floor), and it is part of the log (bug C: answering
      // "unavailable" here made a duplicate append truncate acknowledged entries).
      return this.storage.term(i);
    }
    const dummy = this.storage.firstIndex() - 1;
    if (i < dummy) return "compacted";
    if (i > this.storage.lastIndex()) return "unavailable";
    if (i === dummy) {
      const s = this.storage.snapshot();
      if (s.metadata.index === dummy) return s.metadata.term;
      return this.storage.term(i);
    }
    return this.storage.term(i);
  }

  matchTerm(i: number, t: number): boolean {
    const r = this.termOrError(i);
    return typeof r === "number" && r === t;
  }

  /** §5.4.1: (lastTerm, lastIndex) of a candidate is at least as up to date as ours. */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const myTerm = this.lastTerm();
    return lastTerm > myTerm || (lastTerm === myTerm && lastIndex >= this.lastIndex());
  }

  /**
   * Index of the first entry of `ents` that conflicts with (or is beyond) the log, 0 when all
   * of them already match.
   */
  findConflict(ents: readonly Entry[]): number {
    for (const e of ents) if (!this.matchTerm(e.index, e.term)) return e.index;
    return 0;
  }

  /**
   * The largest index ≤ `index` whose term is ≤ `term` (fast back-off: skips a whole term
   * per round trip).
   */
  findConflictByTerm(index: number, term: number): number {
    let i = Math.min(index, this.lastIndex());
    for (; i > 0; i--) {
      const t = this.termOrError(i);
      if (typeof t !== "number") return i; // compacted: stop here, the leader will snapshot
      if (t <= term) return i;
    }
    return 0;
  }

  /**
   * §5.3 receiver rule: if the log has `prevTerm` at `prevIndex`, appends `ents` (truncating only
   * from the first real conflict), advances commit to min(`commit`, last new index) and returns
   * the last new index; otherwise returns undefined.
   */
  maybeAppend(
    prevIndex: number,
    prevTerm: number,
    commit: number,
    ents: readonly Entry[],
  ): number | undefined {
    if (!this.matchTerm(prevIndex, prevTerm)) return undefined;
    const lastNew = prevIndex + ents.length;
    const ci = this.findConflict(ents);
    if (ci !== 0) {
      if (ci <= this.committed) {
        throw new RaftError(
          "invariant_violation",
          `entry ${ci} conflicts with committed entry (committed ${this.committed})`,
        );
      }
      this.append(ents.slice(ci - (prevIndex + 1)));
    }
    this.commitTo(Math.min(commit, lastNew));
    return lastNew;
  }

  /** Appends entries to the unstable tail, truncating any suffix from the first index. */
  append(ents: readonly Entry[]): number {
    const first = ents[0];
    if (first === undefined) return this.lastIndex();
    if (first.index - 1 < this.committed) {
      throw new RaftError("invariant_violation", `truncating committed index ${first.index}`);
    }
    const after = first.index;
    if (after === this.offset + this.unstable.length) {
      this.unstable.push(...ents);
    } else if (after <= this.offset) {
      // Replace the whole unstable tail (and shadow the stable suffix from `after`).
      this.offset = after;
      this.unstable = [...ents];
    } else {
      this.unstable = [...this.unstable.slice(0, after - this.offset), ...ents];
    }
    return this.lastIndex();
  }

  /** Entries in [lo, hi), limited to `maxBytes` (always at least one). */
  slice(lo: number, hi: number, maxBytes: number = Number.POSITIVE_INFINITY): Entry[] {
    if (lo >= hi) return [];
    const first = this.firstIndex();
    if (lo < first) throw new RaftError("compacted", `index ${lo} is compacted (first ${first})`);
    const last = this.lastIndex();
    if (hi > last + 1) throw new RaftError("unavailable", `index ${hi - 1} > last ${last}`);
    const out: Entry[] = [];
    if (lo < this.offset) {
      const stableHi = Math.min(hi, this.offset);
      out.push(...this.storage.entries(lo, stableHi));
    }
    if (hi > this.offset) {
      const ulo = Math.max(lo, this.offset);
      out.push(...this.unstable.slice(ulo - this.offset, hi - this.offset));
    }
    if (out.length !== hi - lo) {
      // The stable view and the unstable tail do not meet (a store holding entries the core
      // truncated): fail loudly instead of handing out a short batch — an empty committed
      // batch made drivers loop on `hasReady()` forever.
      throw new RaftError(
        "invariant_violation",
        `log view has a gap: ${out.length} of entries [${lo}, ${hi}) found (offset ${this.offset})`,
      );
    }
    let size = 0;
    for (let i = 0; i < out.length; i++) {
      const e = out[i] as Entry;
      size += entryBytes(e);
      if (i > 0 && size > maxBytes) return out.slice(0, i);
    }
    return out;
  }

  /** Entries from `lo` to the end, or an error code when `lo` is compacted. */
  entriesFrom(lo: number, maxBytes?: number): Entry[] {
    return this.slice(lo, this.lastIndex() + 1, maxBytes);
  }

  commitTo(c: number): void {
    if (c > this.committed) {
      if (c > this.lastIndex()) {
        throw new RaftError("invariant_violation", `commit ${c} beyond last index`);
      }
      this.committed = c;
    }
  }

  /** Leader rule (§5.4.2): commit `maxIndex` only if it carries the current term. */
  maybeCommit(maxIndex: number, term: number): boolean {
    if (maxIndex > this.committed && this.term(maxIndex) === term) {
      this.commitTo(maxIndex);
      return true;
    }
    return false;
  }

  appliedTo(i: number): void {
    if (i === 0) return;
    if (i > this.committed || i < this.applied) {
      throw new RaftError(
        "invalid_state",
        `applied ${i} out of range [${this.applied}, ${this.committed}]`,
      );
    }
    this.applied = i;
  }

  /** Committed entries not yet applied. */
  nextCommitted(maxBytes?: number): Entry[] {
    const lo = Math.max(this.applied + 1, this.firstIndex());
    if (this.committed + 1 > lo) return this.slice(lo, this.committed + 1, maxBytes);
    return [];
  }

  hasNextCommitted(): boolean {
    return this.committed > Math.max(this.applied, this.firstIndex() - 1);
  }

  /** The driver persisted entries up to `i` (with term `t`): drop them from the unstable tail. */
  stableTo(i: number, t: number): void {
    if (this.unstable.length === 0 || i < this.offset) return;
    const e = this.unstable[i - this.offset];
    if (e === undefined || e.term !== t) return; // truncated since the Ready was handed out
    this.unstable = this.unstable.slice(i + 1 - this.offset);
    this.offset = i + 1;
  }

  stableSnapTo(i: number): void {
    if (this.unstableSnapshot !== undefined && this.unstableSnapshot.metadata.index === i) {
      this.unstableSnapshot = undefined;
    }
  }

  /** Last index that is durable and part of the current log. */
  persistedIndex(): number {
    if (this.unstableSnapshot !== undefined) return 0;
    if (this.unstable.length > 0) return Math.min(this.offset - 1, this.storage.lastIndex());
    return this.storage.lastIndex();
  }

  /** Latest snapshot (unstable first). */
  snapshot(): Snapshot {
    return this.unstableSnapshot ?? this.storage.snapshot();
  }

  /**
   * Installs `s`: entries ≤ its index are dropped, entries after it in `keep` are kept (they
   * matched at the snapshot's index and term), commit moves to the snapshot index.
   */
  restore(s: Snapshot, keep: readonly Entry[]): void {
    this.unstableSnapshot = s;
    this.offset = s.metadata.index + 1;
    this.unstable = [...keep];
    this.committed = s.metadata.index;
  }
}
