import { RaftError } from "../core/raft-error.js";
import type { PersistBatch } from "../storage-port.js";
import type { ConfState, Entry, HardState, Snapshot } from "../types.js";
import { EMPTY_HARD_STATE } from "../types.js";

/** Membership of a brand-new group. */
export const EMPTY_CONF_STATE: ConfState = Object.freeze({
  voters: [],
  learners: [],
  votersOutgoing: [],
  learnersNext: [],
  autoLeave: false,
});

/** The snapshot of a brand-new group (index 0, term 0, no data). */
export const EMPTY_SNAPSHOT: Snapshot = Object.freeze({
  metadata: Object.freeze({ index: 0, term: 0, confState: EMPTY_CONF_STATE }),
  data: new Uint8Array(0),
});

/** What one accepted write changed, for a durable store to turn into one write batch. */
export interface LogDelta {
  hardState?: HardState;
  snapshot?: Snapshot;
  /** New log floor (index and term of the last compacted entry). */
  floor?: { index: number; term: number };
  /** Inclusive index ranges whose entries were removed. */
  readonly deleted: [number, number][];
  /** Entries written (after the removals). */
  readonly put: Entry[];
}

/** Options of {@link LogState}. */
export interface LogStateOptions {
  /**
   * Keep the payload of at most this many of the newest entries in memory; older entries
   * are read back through `load`. Default: unlimited (everything stays in memory).
   */
  readonly cacheEntries?: number;
  /** Reads entries [lo, hi) that fell out of the cache (required with `cacheEntries`). */
  readonly load?: (lo: number, hi: number) => Entry[];
}

/**
 * The accepted view of one Raft group's log: floor (last compacted index and term), the
 * terms of every retained entry, a cache of entry payloads, the hard state and the
 * snapshot. Both log stores keep one; the RocksDB store also writes each delta to disk.
 */
export class LogState {
  floorIndex = 0;
  floorTerm = 0;
  /** `terms[i]` is the term of entry `floorIndex + 1 + i`. */
  terms: number[] = [];
  /** Same indexing as `terms`; `undefined` once evicted from the cache. */
  cache: (Entry | undefined)[] = [];
  hardState: HardState = EMPTY_HARD_STATE;
  snapshot: Snapshot = EMPTY_SNAPSHOT;
  private readonly cacheEntries: number;
  private readonly load: ((lo: number, hi: number) => Entry[]) | undefined;

  constructor(options: LogStateOptions = {}) {
    this.cacheEntries = options.cacheEntries ?? Number.POSITIVE_INFINITY;
    this.load = options.load;
  }

  firstIndex(): number {
    return this.floorIndex + 1;
  }

  lastIndex(): number {
    return this.floorIndex + this.terms.length;
  }

  term(index: number): number {
    if (index === this.floorIndex) return this.floorTerm;
    if (index < this.floorIndex) {
      throw new RaftError("compacted", `index ${index} is compacted (first ${this.firstIndex()})`);
    }
    const t = this.terms[index - this.floorIndex - 1];
    if (t === undefined) {
      throw new RaftError("unavailable", `index ${index} > last ${this.lastIndex()}`);
    }
    return t;
  }

  entries(lo: number, hi: number, maxBytes: number = Number.POSITIVE_INFINITY): Entry[] {
    if (!Number.isInteger(lo) || !Number.isInteger(hi) || lo > hi) {
      throw new RaftError("invalid_argument", `bad entry range [${lo}, ${hi})`);
    }
    if (lo <= this.floorIndex) {
      throw new RaftError("compacted", `index ${lo} is compacted (first ${this.firstIndex()})`);
    }
    if (hi > this.lastIndex() + 1) {
      throw new RaftError("unavailable", `index ${hi - 1} > last ${this.lastIndex()}`);
    }
    const out: Entry[] = [];
    let bytes = 0;
    let i = lo;
    while (i < hi) {
      const e = this.cache[i - this.floorIndex - 1];
      if (e === undefined) {
        // Evicted: read the whole uncached run at once (bounded by the cache boundary).
        let j = i + 1;
        while (j < hi && this.cache[j - this.floorIndex - 1] === undefined) j++;
        if (this.load === undefined) throw new RaftError("invalid_state", `entry ${i} missing`);
        const loaded = this.load(i, j);
        let stop = false;
        for (const le of loaded) {
          bytes += le.data.byteLength;
          if (out.length > 0 && bytes > maxBytes) {
            stop = true;
            break;
          }
          out.push(le);
        }
        if (stop || loaded.length < j - i) return out;
        i = j;
        continue;
      }
      bytes += e.data.byteLength;
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(e);
      i++;
    }
    return out;
  }

  /** Applies one Ready's persistable part: snapshot, then entries, then hard state. */
  applyBatch(batch: PersistBatch): LogDelta {
    this.validate(batch); // all checks first: an invalid batch changes nothing
    const delta: LogDelta = { deleted: [], put: [] };
    if (batch.snapshot !== undefined) this.applySnapshot(batch.snapshot, delta);
    if (batch.entries !== undefined && batch.entries.length > 0) {
      this.appendEntries(batch.entries, delta);
    }
    if (batch.hardState !== undefined) {
      this.hardState = batch.hardState;
      delta.hardState = batch.hardState;
    }
    return delta;
  }

  /**
   * Drops entries up to and including `index` and records `snapshot` (unless the stored one
   * is newer).
   */
  compact(index: number, snapshot: Snapshot): LogDelta {
    const delta: LogDelta = { deleted: [], put: [] };
    if (index < this.floorIndex) {
      throw new RaftError("compacted", `index ${index} is already compacted`);
    }
    if (index > this.lastIndex()) {
      throw new RaftError("unavailable", `compact ${index} > last ${this.lastIndex()}`);
    }
    const si = snapshot.metadata.index;
    if (si < index || si > this.lastIndex()) {
      throw new RaftError(
        "invalid_argument",
        `snapshot index ${si} must lie in [compact index ${index}, last ${this.lastIndex()}]`,
      );
    }
    if (si > this.snapshot.metadata.index) {
      this.snapshot = snapshot;
      delta.snapshot = snapshot;
    }
    if (index > this.floorIndex) {
      const term = this.term(index);
      const n = index - this.floorIndex;
      delta.deleted.push([this.floorIndex + 1, index]);
      this.terms.splice(0, n);
      this.cache.splice(0, n);
      this.floorIndex = index;
      this.floorTerm = term;
      delta.floor = { index, term };
    }
    return delta;
  }

  private applySnapshot(snap: Snapshot, delta: LogDelta): void {
    const { index, term } = snap.metadata;
    if (index <= this.snapshot.metadata.index || index < this.floorIndex) return; // stale
    const last = this.lastIndex();
    let keepsTail = false;
    if (index === this.floorIndex) keepsTail = this.floorTerm === term;
    else if (index <= last) keepsTail = this.term(index) === term;
    if (keepsTail && index > this.floorIndex) {
      const n = index - this.floorIndex;
      delta.deleted.push([this.floorIndex + 1, index]);
      this.terms.splice(0, n);
      this.cache.splice(0, n);
    } else if (!keepsTail && last > this.floorIndex) {
      delta.deleted.push([this.floorIndex + 1, last]);
      this.terms = [];
      this.cache = [];
    }
    this.floorIndex = index;
    this.floorTerm = term;
    this.snapshot = snap;
    delta.snapshot = snap;
    delta.floor = { index, term };
  }

  private validate(batch: PersistBatch): void {
    const entries = batch.entries;
    if (entries === undefined || entries.length === 0) return;
    const first = (entries[0] as Entry).index;
    for (let i = 1; i < entries.length; i++) {
      if ((entries[i] as Entry).index !== first + i) {
        throw new RaftError("invalid_argument", "entries must have consecutive indices");
      }
    }
    // The last index once the batch's snapshot (if any) is applied.
    let last = this.lastIndex();
    const snap = batch.snapshot?.metadata;
    if (
      snap !== undefined &&
      snap.index > this.snapshot.metadata.index &&
      snap.index >= this.floorIndex
    ) {
      const keepsTail = snap.index <= last && this.term(snap.index) === snap.term;
      if (!keepsTail) last = snap.index;
    }
    if (first > last + 1) {
      throw new RaftError("invalid_argument", `entry ${first} leaves a gap after last ${last}`);
    }
  }

  private appendEntries(entries: readonly Entry[], delta: LogDelta): void {
    const first = (entries[0] as Entry).index;
    const last = this.lastIndex();
    // Skip what is already compacted, then whatever matches the existing log. Only a term
    // conflict truncates: re-delivering an older, shorter matching batch must not cut a
    // longer matching log.
    let k = Math.max(0, this.floorIndex + 1 - first);
    while (k < entries.length) {
      const e = entries[k] as Entry;
      if (e.index > last) break;
      if (this.terms[e.index - this.floorIndex - 1] !== e.term) {
        delta.deleted.push([e.index, last]);
        const keep = e.index - this.floorIndex - 1;
        this.terms.length = keep;
        this.cache.length = keep;
        break;
      }
      k++;
    }
    for (; k < entries.length; k++) {
      const e = entries[k] as Entry;
      this.terms.push(e.term);
      this.cache.push(e);
      delta.put.push(e);
    }
    this.evict();
  }

  private evict(): void {
    const drop = this.cache.length - this.cacheEntries;
    for (let i = drop - 1; i >= 0 && this.cache[i] !== undefined; i--) this.cache[i] = undefined;
  }
}
