// One conformance suite for every LogStore implementation (memory, RocksDB, RocksDB through
// the group committer). Each implementation's test file calls runLogStoreConformance.
import { afterEach, describe, expect, it } from "vitest";
import { isRaftError } from "../src/core/raft-error.js";
import type { LogStore } from "../src/storage-port.js";
import type { ConfState, Entry, HardState, Snapshot } from "../src/types.js";

/** How the suite creates, restarts and crashes stores of one implementation. */
export interface LogStoreHarness {
  /** A fresh, empty store. */
  create(): Promise<LogStore>;
  /**
   * Closes `store` and opens the same durable state again (a clean restart). Omit when the
   * implementation has no durable state; the reopen cases are then skipped.
   */
  reopen?(store: LogStore): Promise<LogStore>;
  /**
   * Crash simulation. `create` returns a store whose writes become durable some time after
   * `save()` is called (the promise resolves then); `crash` kills it at once — anything
   * not yet durable may be lost — and returns the restarted store.
   */
  crash?: {
    create(): Promise<LogStore>;
    crash(store: LogStore): Promise<LogStore>;
  };
  /** Called after each case (e.g. to close databases and delete temp dirs). */
  cleanup?(): Promise<void>;
}

const enc = new TextEncoder();

/** Entry helper: index, term, optional payload text. */
export function ent(index: number, term: number, data = `e${index}t${term}`): Entry {
  return { index, term, type: "normal", data: enc.encode(data) };
}

/** Entries lo..hi (inclusive) all of `term`. */
export function run(lo: number, hi: number, term: number): Entry[] {
  const out: Entry[] = [];
  for (let i = lo; i <= hi; i++) out.push(ent(i, term));
  return out;
}

const conf: ConfState = {
  voters: [1, 2, 3],
  learners: [4],
  votersOutgoing: [],
  learnersNext: [],
  autoLeave: false,
};

function snap(index: number, term: number, c: ConfState = conf, data = `snap@${index}`): Snapshot {
  return { metadata: { index, term, confState: c }, data: enc.encode(data) };
}

function terms(s: LogStore): number[] {
  const out: number[] = [];
  for (let i = s.firstIndex(); i <= s.lastIndex(); i++) out.push(s.term(i));
  return out;
}

function all(s: LogStore): Entry[] {
  return s.entries(s.firstIndex(), s.lastIndex() + 1);
}

function expectCode(f: () => unknown, code: "compacted" | "unavailable" | "invalid_argument") {
  let err: unknown;
  try {
    f();
  } catch (e) {
    err = e;
  }
  expect(isRaftError(err, code), `expected RaftError ${code}, got ${String(err)}`).toBe(true);
}

async function expectRejects(
  p: Promise<unknown>,
  code: "compacted" | "unavailable" | "invalid_argument",
) {
  let err: unknown;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  expect(isRaftError(err, code), `expected RaftError ${code}, got ${String(err)}`).toBe(true);
}

/** Registers the conformance cases (about 45) for one implementation. */
export function runLogStoreConformance(name: string, h: LogStoreHarness): void {
  describe(`LogStore conformance: ${name}`, () => {
    afterEach(async () => {
      await h.cleanup?.();
    });

    describe("empty store", () => {
      it("starts with an empty log, zero hard state and an empty snapshot", async () => {
        const s = await h.create();
        expect(s.firstIndex()).toBe(1);
        expect(s.lastIndex()).toBe(0);
        expect(s.term(0)).toBe(0);
        expect(s.entries(1, 1)).toEqual([]);
        expect(s.initialState().hardState).toEqual({ term: 0, vote: 0, commit: 0 });
        expect(s.initialState().confState.voters).toEqual([]);
        expect(s.snapshot().metadata.index).toBe(0);
      });

      it("answers unavailable past the end", async () => {
        const s = await h.create();
        expectCode(() => s.term(1), "unavailable");
        expectCode(() => s.entries(1, 2), "unavailable");
      });

      it("accepts an empty save", async () => {
        const s = await h.create();
        await s.save({});
        await s.save({ entries: [] });
        expect(s.lastIndex()).toBe(0);
      });
    });

    describe("append", () => {
      it("appends entries and reads them back", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 5, 1) });
        expect(s.firstIndex()).toBe(1);
        expect(s.lastIndex()).toBe(5);
        expect(all(s)).toEqual(run(1, 5, 1));
      });

      it("answers term() for every index", async () => {
        const s = await h.create();
        await s.save({ entries: [ent(1, 1), ent(2, 1), ent(3, 2), ent(4, 3)] });
        expect([0, 1, 2, 3, 4].map((i) => s.term(i))).toEqual([0, 1, 1, 2, 3]);
      });

      it("returns sub-ranges [lo, hi)", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 5, 1) });
        expect(s.entries(2, 4)).toEqual([ent(2, 1), ent(3, 1)]);
        expect(s.entries(5, 6)).toEqual([ent(5, 1)]);
        expect(s.entries(3, 3)).toEqual([]);
        expectCode(() => s.entries(4, 7), "unavailable");
      });

      it("continues the log across saves", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 3, 1) });
        await s.save({ entries: run(4, 6, 2) });
        expect(terms(s)).toEqual([1, 1, 1, 2, 2, 2]);
      });

      it("keeps payload bytes and entry type", async () => {
        const s = await h.create();
        const e: Entry = {
          index: 1,
          term: 1,
          type: "conf_change",
          data: new Uint8Array([0, 255, 7]),
        };
        const empty: Entry = { index: 2, term: 1, type: "normal", data: new Uint8Array() };
        await s.save({ entries: [e, empty] });
        expect(s.entries(1, 3)).toEqual([e, empty]);
      });

      it("rejects a gap after the last index and changes nothing", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 2, 1) });
        await expectRejects(s.save({ entries: [ent(4, 1)] }), "invalid_argument");
        expect(s.lastIndex()).toBe(2);
      });

      it("rejects non-consecutive entries in one save", async () => {
        const s = await h.create();
        await expectRejects(s.save({ entries: [ent(1, 1), ent(3, 1)] }), "invalid_argument");
        expect(s.lastIndex()).toBe(0);
      });
    });

    describe("truncation", () => {
      it("truncates a conflicting suffix", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 5, 1) });
        await s.save({ entries: [ent(3, 2), ent(4, 2)] });
        expect(s.lastIndex()).toBe(4);
        expect(terms(s)).toEqual([1, 1, 2, 2]);
        expect(s.entries(3, 5)).toEqual([ent(3, 2), ent(4, 2)]);
      });

      it("truncates at the first conflict inside the batch", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 5, 1) });
        await s.save({ entries: [ent(4, 1), ent(5, 2), ent(6, 2)] });
        expect(terms(s)).toEqual([1, 1, 1, 1, 2, 2]);
        expect(s.entries(4, 5)).toEqual([ent(4, 1)]);
      });

      it("does NOT truncate when an older, shorter matching batch is re-delivered", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 5, 1) });
        await s.save({ entries: [ent(2, 1), ent(3, 1)] });
        expect(s.lastIndex()).toBe(5);
        expect(all(s)).toEqual(run(1, 5, 1));
      });

      it("appends the new tail of a batch whose head matches", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 5, 1) });
        await s.save({ entries: run(4, 7, 1) });
        expect(s.lastIndex()).toBe(7);
        expect(all(s)).toEqual(run(1, 7, 1));
      });

      it("replaces the whole log when the first entry conflicts", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 3, 1) });
        await s.save({ entries: [ent(1, 2)] });
        expect(all(s)).toEqual([ent(1, 2)]);
      });

      it("truncates then appends a longer replacement", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 4, 1) });
        await s.save({ entries: run(2, 8, 3) });
        expect(terms(s)).toEqual([1, 3, 3, 3, 3, 3, 3, 3]);
      });
    });

    describe("maxBytes", () => {
      const sized = (i: number) => ({
        index: i,
        term: 1,
        type: "normal" as const,
        data: new Uint8Array(10),
      });
      it("limits the payload bytes returned", async () => {
        const s = await h.create();
        await s.save({ entries: [1, 2, 3, 4].map(sized) });
        expect(s.entries(1, 5, 25).map((e) => e.index)).toEqual([1, 2]);
        expect(s.entries(1, 5, 20).map((e) => e.index)).toEqual([1, 2]);
        expect(s.entries(2, 5, 1000).map((e) => e.index)).toEqual([2, 3, 4]);
      });

      it("always returns at least one entry", async () => {
        const s = await h.create();
        await s.save({ entries: [1, 2].map(sized) });
        expect(s.entries(1, 3, 0).map((e) => e.index)).toEqual([1]);
        expect(s.entries(2, 3, 1).map((e) => e.index)).toEqual([2]);
      });
    });

    describe("hard state", () => {
      it("is returned by initialState after a save", async () => {
        const s = await h.create();
        const hs: HardState = { term: 3, vote: 2, commit: 0 };
        await s.save({ hardState: hs });
        expect(s.initialState().hardState).toEqual(hs);
      });

      it("is overwritten by a later save", async () => {
        const s = await h.create();
        await s.save({ hardState: { term: 1, vote: 1, commit: 0 } });
        await s.save({ hardState: { term: 2, vote: 0, commit: 0 } });
        expect(s.initialState().hardState).toEqual({ term: 2, vote: 0, commit: 0 });
      });

      it("is saved together with entries in one save", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 3, 2), hardState: { term: 2, vote: 1, commit: 3 } });
        expect(s.initialState().hardState.commit).toBe(3);
        expect(s.lastIndex()).toBe(3);
      });
    });

    describe("compaction", () => {
      it("drops entries up to the index and answers the boundary term", async () => {
        const s = await h.create();
        await s.save({ entries: [ent(1, 1), ent(2, 1), ent(3, 2), ent(4, 2), ent(5, 3)] });
        await s.compact(3, snap(3, 2));
        expect(s.firstIndex()).toBe(4);
        expect(s.lastIndex()).toBe(5);
        expect(s.term(3)).toBe(2);
        expect(s.entries(4, 6)).toEqual([ent(4, 2), ent(5, 3)]);
        expect(s.snapshot().metadata).toEqual({ index: 3, term: 2, confState: conf });
      });

      it("answers compacted below the first index", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 5, 1) });
        await s.compact(3, snap(3, 1));
        expectCode(() => s.term(2), "compacted");
        expectCode(() => s.entries(3, 5), "compacted");
        expectCode(() => s.entries(1, 2), "compacted");
      });

      it("refuses to compact past the last index", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 3, 1) });
        await expectRejects(s.compact(4, snap(4, 1)), "unavailable");
        expect(s.firstIndex()).toBe(1);
      });

      it("refuses to compact below the current floor", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 5, 1) });
        await s.compact(3, snap(3, 1));
        await expectRejects(s.compact(2, snap(2, 1)), "compacted");
        expect(s.firstIndex()).toBe(4);
      });

      it("can compact the whole log", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 4, 2) });
        await s.compact(4, snap(4, 2));
        expect(s.firstIndex()).toBe(5);
        expect(s.lastIndex()).toBe(4);
        expect(s.term(4)).toBe(2);
        expect(s.entries(5, 5)).toEqual([]);
      });

      it("keeps appending after compaction, skipping already-compacted entries", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 5, 1) });
        await s.compact(3, snap(3, 1));
        await s.save({ entries: run(2, 7, 1) });
        expect(s.firstIndex()).toBe(4);
        expect(s.lastIndex()).toBe(7);
        expect(terms(s)).toEqual([1, 1, 1, 1]);
      });

      it("keeps a stored snapshot newer than the one a compaction records", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 5, 1) });
        await s.compact(4, snap(5, 1));
        await s.compact(4, snap(4, 1));
        expect(s.snapshot()).toEqual(snap(5, 1));
        expect(s.firstIndex()).toBe(5);
      });

      it("truncates a conflicting suffix after compaction", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 6, 1) });
        await s.compact(2, snap(2, 1));
        await s.save({ entries: [ent(4, 2)] });
        expect(s.lastIndex()).toBe(4);
        expect(terms(s)).toEqual([1, 2]);
      });
    });

    describe("snapshot apply", () => {
      it("installs a snapshot on an empty store", async () => {
        const s = await h.create();
        await s.save({ snapshot: snap(10, 3), hardState: { term: 3, vote: 0, commit: 10 } });
        expect(s.firstIndex()).toBe(11);
        expect(s.lastIndex()).toBe(10);
        expect(s.term(10)).toBe(3);
        expectCode(() => s.term(9), "compacted");
        expect(s.initialState().confState).toEqual(conf);
        expect(s.snapshot()).toEqual(snap(10, 3));
      });

      it("drops covered entries and keeps later matching ones", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 10, 1) });
        await s.save({ snapshot: snap(5, 1) });
        expect(s.firstIndex()).toBe(6);
        expect(s.lastIndex()).toBe(10);
        expect(all(s)).toEqual(run(6, 10, 1));
      });

      it("drops the whole log when the snapshot's term does not match", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 10, 1) });
        await s.save({ snapshot: snap(5, 2) });
        expect(s.firstIndex()).toBe(6);
        expect(s.lastIndex()).toBe(5);
        expect(s.term(5)).toBe(2);
      });

      it("drops the whole log for a snapshot beyond it", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 3, 1) });
        await s.save({ snapshot: snap(20, 4) });
        expect(s.firstIndex()).toBe(21);
        expect(s.lastIndex()).toBe(20);
      });

      it("ignores a snapshot older than the current one", async () => {
        const s = await h.create();
        await s.save({ snapshot: snap(10, 2), entries: run(11, 12, 2) });
        await s.save({ snapshot: snap(8, 2) });
        expect(s.snapshot().metadata.index).toBe(10);
        expect(s.firstIndex()).toBe(11);
        expect(s.lastIndex()).toBe(12);
      });

      it("applies the snapshot before the entries of the same save", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 3, 1) });
        await s.save({ snapshot: snap(5, 2), entries: run(6, 7, 2) });
        expect(s.firstIndex()).toBe(6);
        expect(terms(s)).toEqual([2, 2]);
      });

      it("keeps the snapshot's data and a joint configuration exactly", async () => {
        const s = await h.create();
        const joint: ConfState = {
          voters: [1, 2, 4],
          learners: [],
          votersOutgoing: [1, 2, 3],
          learnersNext: [3],
          autoLeave: true,
        };
        const sn = snap(7, 5, joint, "x".repeat(1000));
        await s.save({ snapshot: sn });
        expect(s.snapshot()).toEqual(sn);
        expect(s.initialState().confState).toEqual(joint);
      });
    });

    describe.runIf(h.reopen !== undefined)("reopen", () => {
      const reopen = (s: LogStore) => (h.reopen as (s: LogStore) => Promise<LogStore>)(s);

      it("returns exactly what was saved", async () => {
        const s = await h.create();
        const conf1: Entry = { index: 3, term: 2, type: "conf_change", data: new Uint8Array([9]) };
        await s.save({
          entries: [ent(1, 1), ent(2, 1), conf1],
          hardState: { term: 2, vote: 1, commit: 2 },
        });
        const r = await reopen(s);
        expect(r.firstIndex()).toBe(1);
        expect(r.lastIndex()).toBe(3);
        expect(r.entries(1, 4)).toEqual([ent(1, 1), ent(2, 1), conf1]);
        expect(r.initialState().hardState).toEqual({ term: 2, vote: 1, commit: 2 });
      });

      it("returns the truncated log after a conflict", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 6, 1) });
        await s.save({ entries: [ent(3, 2)] });
        const r = await reopen(s);
        expect(terms(r)).toEqual([1, 1, 2]);
        expect(r.entries(3, 4)).toEqual([ent(3, 2)]);
      });

      it("returns the compacted log and its snapshot", async () => {
        const s = await h.create();
        await s.save({ entries: [ent(1, 1), ent(2, 1), ent(3, 2), ent(4, 2)] });
        await s.compact(3, snap(3, 2));
        const r = await reopen(s);
        expect(r.firstIndex()).toBe(4);
        expect(r.lastIndex()).toBe(4);
        expect(r.term(3)).toBe(2);
        expect(r.snapshot()).toEqual(snap(3, 2));
        expect(r.entries(4, 5)).toEqual([ent(4, 2)]);
      });

      it("returns an installed snapshot with the matching tail", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 8, 1) });
        await s.save({ snapshot: snap(5, 1), hardState: { term: 1, vote: 0, commit: 5 } });
        const r = await reopen(s);
        expect(r.firstIndex()).toBe(6);
        expect(all(r)).toEqual(run(6, 8, 1));
        expect(r.initialState().confState).toEqual(conf);
        expect(r.initialState().hardState.commit).toBe(5);
      });

      it("keeps working after reopen (append, truncate, compact)", async () => {
        const s = await h.create();
        await s.save({ entries: run(1, 3, 1) });
        const r = await reopen(s);
        await r.save({ entries: [ent(3, 2), ent(4, 2)] });
        await r.compact(2, snap(2, 1));
        const r2 = await reopen(r);
        expect(r2.firstIndex()).toBe(3);
        expect(terms(r2)).toEqual([2, 2]);
      });

      it("reads a long log back in order", async () => {
        const s = await h.create();
        const expected: Entry[] = [];
        for (let b = 0; b < 10; b++) {
          const batch = run(b * 50 + 1, b * 50 + 50, 1 + b);
          expected.push(...batch);
          await s.save({ entries: batch });
        }
        const r = await reopen(s);
        expect(r.lastIndex()).toBe(500);
        expect(r.entries(1, 501)).toEqual(expected);
        // Payloads are 6 bytes ("e120t3"): 30 bytes hold exactly five.
        expect(r.entries(120, 130, 30).length).toBe(5);
      });
    });

    describe.runIf(h.crash !== undefined)("crash between write and sync", () => {
      const c = h.crash as NonNullable<LogStoreHarness["crash"]>;

      it("loses no acknowledged save and no promised vote", async () => {
        const s = await c.create();
        await s.save({ entries: run(1, 3, 1), hardState: { term: 1, vote: 0, commit: 0 } });
        // A vote promised: the reply may go out only after this resolves.
        await s.save({ hardState: { term: 2, vote: 3, commit: 0 } });
        let acked = false;
        const pending = s.save({
          entries: [ent(4, 3)],
          hardState: { term: 3, vote: 2, commit: 0 },
        });
        pending.then(
          () => {
            acked = true;
          },
          () => undefined,
        );
        const ackedBeforeCrash = acked;
        const r = await c.crash(s);
        const hs = r.initialState().hardState;
        expect(all(r).slice(0, 3)).toEqual(run(1, 3, 1));
        if (ackedBeforeCrash) {
          expect(hs).toEqual({ term: 3, vote: 2, commit: 0 });
          expect(r.lastIndex()).toBe(4);
        } else {
          // Either the unacknowledged write survived whole or not at all; never the vote lost.
          expect([2, 3]).toContain(hs.term);
          if (hs.term === 2) expect(hs.vote).toBe(3);
          expect([3, 4]).toContain(r.lastIndex());
        }
      });

      it("keeps every acknowledged save of a long run", async () => {
        const s = await c.create();
        const acked: number[] = [];
        const all: Promise<void>[] = [];
        for (let i = 1; i <= 20; i++) {
          const p = s.save({
            entries: [ent(i, 1)],
            hardState: { term: 1, vote: 1, commit: i - 1 },
          });
          all.push(p.then(() => void acked.push(i)));
          if (i % 5 === 0) await p;
        }
        const ackedBeforeCrash = [...acked];
        const r = await c.crash(s);
        await Promise.allSettled(all);
        const top = Math.max(0, ...ackedBeforeCrash);
        expect(top).toBeGreaterThanOrEqual(20 - 4); // the awaited ones at least
        expect(r.lastIndex()).toBeGreaterThanOrEqual(top);
        expect(r.initialState().hardState.commit).toBeGreaterThanOrEqual(top - 1);
        expect(terms(r).every((t) => t === 1)).toBe(true);
      });

      it("survives a crash right after a compaction", async () => {
        const s = await c.create();
        await s.save({ entries: run(1, 5, 1) });
        await s.compact(3, snap(3, 1));
        const r = await c.crash(s);
        expect(r.firstIndex()).toBe(4);
        expect(r.term(3)).toBe(1);
        expect(all(r)).toEqual(run(4, 5, 1));
      });
    });

    it("refuses use after close", async () => {
      const s = await h.create();
      await s.close();
      expect(() => s.lastIndex()).toThrow(/closed/);
      await expect(s.save({ entries: [ent(1, 1)] })).rejects.toThrow(/closed/);
    });
  });
}
