import type { LogStore, PersistBatch } from "../../storage-port.js";
import type { ConfState, Entry, HardState, Snapshot } from "../../types.js";
import { RaftError } from "../raft-error.js";

/**
 * A minimal synchronous in-memory stable storage for core tests and the simulator: the read
 * side of {@link LogStore} plus a synchronous `apply(batch)`. `crash()` models a lost page
 * cache: everything applied since the last `sync()` is dropped.
 */
export class TestStorage
  implements
    Pick<LogStore, "initialState" | "entries" | "term" | "firstIndex" | "lastIndex" | "snapshot">
{
  hard: HardState = { term: 0, vote: 0, commit: 0 };
  snap: Snapshot;
  /** Entries after the snapshot index. */
  ents: Entry[] = [];
  private durable: { hard: HardState; snap: Snapshot; ents: Entry[] };

  constructor(confState: Partial<ConfState> = {}) {
    this.snap = {
      metadata: {
        index: 0,
        term: 0,
        confState: {
          voters: confState.voters ?? [],
          learners: confState.learners ?? [],
          votersOutgoing: confState.votersOutgoing ?? [],
          learnersNext: confState.learnersNext ?? [],
          autoLeave: confState.autoLeave ?? false,
        },
      },
      data: new Uint8Array(0),
    };
    this.durable = { hard: this.hard, snap: this.snap, ents: [] };
  }

  /** Builds a storage holding `terms[i]` at index i+1 (for scenario tables). */
  static withTerms(terms: readonly number[], voters: readonly number[]): TestStorage {
    const s = new TestStorage({ voters });
    s.ents = terms.map((term, i) => ({
      index: i + 1,
      term,
      type: "normal" as const,
      data: new Uint8Array(0),
    }));
    s.sync();
    return s;
  }

  initialState(): { hardState: HardState; confState: ConfState } {
    return { hardState: this.hard, confState: this.snap.metadata.confState };
  }

  firstIndex(): number {
    return this.snap.metadata.index + 1;
  }

  lastIndex(): number {
    return this.snap.metadata.index + this.ents.length;
  }

  term(index: number): number {
    const si = this.snap.metadata.index;
    if (index === si) return this.snap.metadata.term;
    if (index < si) throw new RaftError("compacted", `index ${index} compacted`);
    const e = this.ents[index - si - 1];
    if (e === undefined) throw new RaftError("unavailable", `index ${index} unavailable`);
    return e.term;
  }

  entries(lo: number, hi: number): Entry[] {
    const si = this.snap.metadata.index;
    if (lo <= si) throw new RaftError("compacted", `index ${lo} compacted`);
    if (hi > this.lastIndex() + 1) throw new RaftError("unavailable", `index ${hi} unavailable`);
    return this.ents.slice(lo - si - 1, hi - si - 1);
  }

  snapshot(): Snapshot {
    return this.snap;
  }

  /** Applies a Ready's persist part (snapshot, entries with truncation, hard state). */
  apply(b: PersistBatch): void {
    if (b.snapshot !== undefined) {
      this.snap = b.snapshot;
      this.ents = [];
    }
    const first = b.entries?.[0];
    if (b.entries !== undefined && first !== undefined) {
      const si = this.snap.metadata.index;
      this.ents = [...this.ents.slice(0, first.index - si - 1), ...b.entries];
    }
    if (b.hardState !== undefined) this.hard = b.hardState;
  }

  /** Marks everything applied so far as durable. */
  sync(): void {
    this.durable = { hard: this.hard, snap: this.snap, ents: [...this.ents] };
  }

  /** Loses everything not synced. */
  crash(): void {
    this.hard = this.durable.hard;
    this.snap = this.durable.snap;
    this.ents = [...this.durable.ents];
  }

  /** Compacts the log up to `index` into a snapshot with `data` and `confState`. */
  compact(index: number, data: Uint8Array, confState: ConfState): void {
    const term = this.term(index);
    const si = this.snap.metadata.index;
    this.ents = this.ents.slice(index - si);
    this.snap = { metadata: { index, term, confState }, data };
    this.sync();
  }
}
