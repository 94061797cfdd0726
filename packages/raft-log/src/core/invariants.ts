import type { Entry } from "../types.js";
import type { RaftStatus } from "./raft.js";
import { RaftError } from "./raft-error.js";

/** What the checker needs from a node (a {@link Raft} satisfies it). */
export interface InvariantSubject {
  status(): RaftStatus;
  /** Entry at `index`, undefined when compacted or beyond the end. */
  entryAt(index: number): Entry | undefined;
}

interface Seen {
  term: number;
  vote: number;
  commit: number;
  applied: number;
}

function sameEntry(a: Entry, b: Entry): boolean {
  if (a.term !== b.term || a.type !== b.type || a.data.byteLength !== b.data.byteLength) {
    return false;
  }
  for (let i = 0; i < a.data.byteLength; i++) if (a.data[i] !== b.data[i]) return false;
  return true;
}

function fail(message: string): never {
  throw new RaftError("invariant_violation", message);
}

/**
 * Checks the Raft safety properties (scenario 28) over a set of nodes, across calls:
 * election safety, leader append-only, log matching, leader completeness, state-machine
 * safety, and monotonic term / vote / commit / applied. Throws `invariant_violation`.
 *
 * @example
 * ```ts
 * const checker = createInvariantChecker();
 * // after every simulated step:
 * checker.check(nodes);
 * // when a node applies entries:
 * checker.recordApplied(id, entries);
 * ```
 */
export class InvariantChecker {
  private readonly leaders = new Map<number, number>();
  /** Leader log (terms from index 1) last seen, keyed by `${id}@${term}`. */
  private readonly leaderLogs = new Map<string, { first: number; terms: number[] }>();
  /** Committed entries seen on any node, with the lowest observer term. */
  private readonly committed = new Map<number, { entry: Entry; term: number }>();
  private readonly applied = new Map<number, Entry>();
  private readonly seen = new Map<number, Seen>();
  /** Number of `check` calls so far. */
  checks = 0;

  /** Checks every property over `nodes`. */
  check(nodes: readonly InvariantSubject[]): void {
    this.checks++;
    const views = nodes.map((n) => {
      const st = n.status();
      const entries: (Entry | undefined)[] = [];
      for (let i = st.firstIndex; i <= st.lastIndex; i++) entries.push(n.entryAt(i));
      return { st, entries };
    });
    const at = (v: (typeof views)[number], i: number): Entry | undefined =>
      i < v.st.firstIndex ? undefined : v.entries[i - v.st.firstIndex];

    for (const { st, entries } of views) {
      // Monotonicity.
      const prev = this.seen.get(st.id);
      if (prev !== undefined) {
        if (st.term < prev.term) fail(`node ${st.id}: term went back ${prev.term} → ${st.term}`);
        if (st.term === prev.term && prev.vote !== 0 && st.vote !== prev.vote) {
          fail(`node ${st.id}: vote changed within term ${st.term}`);
        }
        if (st.commit < prev.commit) fail(`node ${st.id}: commit went back`);
        if (st.applied < prev.applied) fail(`node ${st.id}: applied went back`);
      }
      this.seen.set(st.id, {
        term: st.term,
        vote: st.vote,
        commit: st.commit,
        applied: st.applied,
      });
      // Election safety.
      if (st.role === "leader") {
        const l = this.leaders.get(st.term);
        if (l !== undefined && l !== st.id) fail(`two leaders in term ${st.term}: ${l}, ${st.id}`);
        this.leaders.set(st.term, st.id);
        // Leader append-only.
        const key = `${st.id}@${st.term}`;
        const old = this.leaderLogs.get(key);
        const terms = entries.map((e) => e?.term ?? -1);
        if (old !== undefined) {
          const oldLast = old.first + old.terms.length - 1;
          if (st.lastIndex < oldLast) fail(`leader ${st.id} log shrank in term ${st.term}`);
          for (let i = Math.max(old.first, st.firstIndex); i <= oldLast; i++) {
            if (old.terms[i - old.first] !== terms[i - st.firstIndex]) {
              fail(`leader ${st.id} overwrote index ${i} in term ${st.term}`);
            }
          }
        }
        this.leaderLogs.set(key, { first: st.firstIndex, terms });
      }
      // Committed entries agree across nodes.
      for (let i = Math.max(st.firstIndex, 1); i <= st.commit; i++) {
        const e = entries[i - st.firstIndex];
        if (e === undefined) continue;
        const c = this.committed.get(i);
        if (c === undefined) this.committed.set(i, { entry: e, term: st.term });
        else {
          if (!sameEntry(c.entry, e)) fail(`index ${i} committed differently on node ${st.id}`);
          if (st.term < c.term) c.term = st.term;
        }
      }
    }

    // Leader completeness: leaders of later terms hold every committed entry.
    for (const v of views) {
      if (v.st.role !== "leader") continue;
      for (const [i, c] of this.committed) {
        if (v.st.term <= c.term || i < v.st.firstIndex) continue;
        const e = at(v, i);
        if (e === undefined || !sameEntry(e, c.entry)) {
          fail(`leader ${v.st.id} (term ${v.st.term}) lacks committed index ${i}`);
        }
      }
    }

    // Log matching: same index and term ⇒ identical prefixes.
    for (let a = 0; a < views.length; a++) {
      for (let b = a + 1; b < views.length; b++) {
        const va = views[a] as (typeof views)[number];
        const vb = views[b] as (typeof views)[number];
        const lo = Math.max(va.st.firstIndex, vb.st.firstIndex);
        const hi = Math.min(va.st.lastIndex, vb.st.lastIndex);
        let top = 0;
        for (let i = hi; i >= lo; i--) {
          if (at(va, i)?.term === at(vb, i)?.term) {
            top = i;
            break;
          }
        }
        for (let i = lo; i <= top; i++) {
          const ea = at(va, i);
          const eb = at(vb, i);
          if (ea === undefined || eb === undefined || !sameEntry(ea, eb)) {
            fail(`log matching broken between ${va.st.id} and ${vb.st.id} at ${i} (≤ ${top})`);
          }
        }
      }
    }
  }

  /** Records entries a node applied (state-machine safety across nodes). */
  recordApplied(id: number, entries: readonly Entry[]): void {
    for (const e of entries) {
      const prev = this.applied.get(e.index);
      if (prev === undefined) this.applied.set(e.index, e);
      else if (!sameEntry(prev, e)) fail(`node ${id} applied a different entry at ${e.index}`);
    }
  }

  /**
   * A node restarted: its volatile commit and applied restart from durable state, so their
   * monotonicity is checked afresh (term and vote must still never go back).
   */
  restarted(id: number): void {
    const s = this.seen.get(id);
    if (s !== undefined) {
      s.commit = 0;
      s.applied = 0;
    }
  }
}

/** Creates an {@link InvariantChecker}. */
export function createInvariantChecker(): InvariantChecker {
  return new InvariantChecker();
}
