import { describe, expect, it } from "vitest";
import type { Entry } from "../../types.js";
import { createInvariantChecker, type InvariantSubject } from "../invariants.js";
import type { Message } from "../message.js";
import { createPrng } from "../prng.js";
import type { RaftStatus } from "../raft.js";
import { isRaftError } from "../raft-error.js";
import { electLeader, logTerms, msg, newHarness, take } from "../testing/harness.js";
import { appliedData, Network } from "../testing/network.js";
import { TestStorage } from "../testing/test-storage.js";

const noPre = { preVote: false, checkQuorum: false } as const;

function stored(terms: number[], term: number, voters = [1, 2, 3]): TestStorage {
  const s = TestStorage.withTerms(terms, voters);
  s.hard = { term, vote: 0, commit: 0 };
  s.sync();
  return s;
}

function campaignUntilLeader(nt: Network, id: number): void {
  for (let i = 0; i < 5 && nt.raft(id).role !== "leader"; i++) nt.campaign(id);
  expect(nt.raft(id).role).toBe("leader");
}

describe("safety (§5.4)", () => {
  it("scenario 24: election restriction compares last term, then index", () => {
    const cases: Array<[number[], number, number, boolean]> = [
      // [voter log terms, candidate lastTerm, candidate lastIndex, granted]
      [[1], 1, 1, true],
      [[1], 1, 2, true],
      [[1, 1], 1, 1, false],
      [[1], 2, 1, true],
      [[1, 1], 2, 1, true],
      [[2], 1, 1, false],
      [[2, 1], 1, 1, false],
      [[1, 2], 1, 5, false],
      [[1, 2, 2, 2, 2], 2, 5, true],
      [[1, 2, 2, 2, 2], 3, 1, true],
      [[1, 2, 2, 2, 2], 2, 4, false],
    ];
    for (const [terms, lt, li, granted] of cases) {
      const h = newHarness(1, [1, 2, 3], { storage: stored(terms, 3), ...noPre });
      h.raft.step(msg({ type: "vote", from: 2, to: 1, term: 3, logTerm: lt, index: li }));
      const out = take(h);
      expect(out, `${terms} vs (${lt},${li})`).toEqual([
        expect.objectContaining({ type: "vote_resp", reject: !granted }),
      ]);
    }
    // the spec's example: voter (term 2, index 1) denies (term 1, index 5)
    const h = newHarness(1, [1, 2, 3], { storage: stored([2], 2), ...noPre });
    h.raft.step(msg({ type: "pre_vote", from: 2, to: 1, term: 3, logTerm: 1, index: 5 }));
    expect(take(h)[0]).toMatchObject({ type: "pre_vote_resp", reject: true });
  });

  it("scenario 25: no commit by counting old-term entries; the election no-op commits them", () => {
    for (const [ackIndex, wantCommit] of [
      [1, 0],
      [2, 0],
      [3, 3],
    ] as const) {
      const h = newHarness(1, [1, 2, 3], { storage: stored([1, 2], 2), ...noPre });
      electLeader(h);
      expect(h.raft.term).toBe(3);
      expect(h.raft.status().lastIndex).toBe(3); // the no-op
      h.raft.step(msg({ type: "app_resp", from: 2, to: 1, term: 3, index: ackIndex }));
      take(h);
      expect(h.raft.status().commit, `ack ${ackIndex}`).toBe(wantCommit);
    }
    // 5 nodes: the old-term entry sits on a majority, but only the no-op's replication commits.
    const nt = new Network([1, 2, 3, 4, 5], { raft: noPre });
    nt.campaign(1);
    nt.cutLink(1, 4);
    nt.cutLink(1, 5);
    nt.filter = (m) => !(m.type === "app_resp" && m.to === 1); // leader never hears acks
    nt.propose(1, "old");
    expect(nt.raft(1).status().commit).toBe(1);
    nt.recover();
    nt.isolate(1);
    campaignUntilLeader(nt, 2); // 2 has "old" at index 2 (term 1) on 1,2,3
    const l = nt.raft(2);
    expect(l.status().commit).toBeGreaterThanOrEqual(3); // no-op replicated → commits index 2 too
    expect(appliedData(nt.node(3))).toEqual(["old"]);
  });

  function figure8(): Network {
    const nt = new Network([1, 2, 3, 4, 5], { raft: { ...noPre, maxSizePerMsg: 1 } });
    nt.campaign(1); // index 1 committed everywhere
    nt.propose(1, "x1");
    const base = nt.raft(1).status().lastIndex; // 2
    // (a) S1 replicates index base+1 to S2 only.
    for (const p of [3, 4, 5]) nt.cutLink(1, p);
    nt.propose(1, "s1-old");
    expect(nt.raft(2).entryAt(base + 1)?.term).toBe(1);
    // (b) S1 crashes; S5 wins with S3, S4 and writes its own index base+1 (no-op) only locally.
    nt.recover();
    nt.isolate(1);
    nt.cutLink(5, 2);
    nt.filter = (m) => !(m.from === 5 && m.type === "app");
    campaignUntilLeader(nt, 5);
    expect(nt.raft(5).entryAt(base + 1)?.term).toBe(nt.raft(5).term);
    // (c) S5 crashes; S1 returns, wins, re-replicates its old entry to S3 — not its own term yet.
    nt.recover();
    nt.isolate(5);
    const s1Term = (): number => nt.raft(1).term;
    nt.filter = (m) => {
      if (m.type === "app_resp" && m.to === 1 && !m.reject) return false;
      if (m.from === 1 && m.type === "app") {
        return { ...m, entries: m.entries.filter((e) => e.index <= base + 1) };
      }
      return true;
    };
    nt.tick(1); // S1 (still leader of its old term) learns the higher term and steps down
    expect(nt.raft(1).role).toBe("follower");
    campaignUntilLeader(nt, 1);
    nt.tick(1, 3);
    expect(nt.raft(3).entryAt(base + 1)?.term).toBe(1);
    expect(nt.raft(1).status().commit).toBe(base); // the old-term entry is NOT committed
    expect(s1Term()).toBeGreaterThan(nt.raft(5).term);
    return nt;
  }

  it("scenario 26: the full Figure 8 sequence", () => {
    // (d) S1 crashes again: S5 can still win and overwrite index base+1.
    const d = figure8();
    const base = 2;
    d.recover();
    d.isolate(1);
    d.tick(5); // S5, a stale leader, learns the higher term and steps down
    expect(d.raft(5).role).toBe("follower");
    for (let i = 0; i < 6 && d.raft(5).role !== "leader"; i++) d.campaign(5);
    expect(d.raft(5).role).toBe("leader");
    d.propose(5, "s5");
    for (const id of [2, 3, 4]) expect(d.raft(id).entryAt(base + 1)?.term).not.toBe(1);
    // (e) instead, S1 commits an entry of its own term on top: index base+1 is then final.
    const e = figure8();
    e.recover();
    e.isolate(5);
    e.propose(1, "s1-new");
    e.tick(1, 2); // heartbeats unpause the probing followers
    const commit = e.raft(1).status().commit;
    expect(commit).toBeGreaterThan(base + 1);
    e.recover();
    e.tick(5); // stale S5 steps down
    for (let i = 0; i < 6; i++) e.campaign(5);
    expect(e.raft(5).role).not.toBe("leader");
    e.tickAll(60);
    for (const id of [1, 2, 3, 4, 5]) expect(e.raft(id).entryAt(base + 1)?.term).toBe(1);
    expect(appliedData(e.node(5))).toContain("s1-old");
  });

  it("scenario 27: a new leader overwrites followers' newer-term uncommitted junk", () => {
    const nt = new Network([1, 2, 3, 4, 5], {
      raft: noPre,
      storage: (id) => {
        if (id === 1 || id === 2) return stored([1], 1, [1, 2, 3, 4, 5]);
        if (id === 3) return stored([2], 2, [1, 2, 3, 4, 5]);
        return stored([], 2, [1, 2, 3, 4, 5]);
      },
    });
    nt.campaign(1); // term 2: 3 (term 2 voted?) — 4 and 5 grant, 3 denies on log
    if (nt.raft(1).role !== "leader") nt.campaign(1);
    expect(nt.raft(1).role).toBe("leader");
    nt.propose(1, "z");
    for (const id of [2, 3, 4, 5]) expect(logTerms(nt.raft(id))).toEqual(logTerms(nt.raft(1)));
    expect(nt.raft(3).entryAt(1)?.term).toBe(1);
  });

  it("scenario 28: invariants hold after every step of a faulty run, and the checker catches violations", () => {
    for (const seed of [1, 2, 3]) {
      const rnd = createPrng(seed * 101);
      const nt = new Network([1, 2, 3, 4, 5], { seed });
      nt.filter = (): boolean => rnd() > 0.1; // 10% loss
      let proposals = 0;
      for (let step = 0; step < 300; step++) {
        if (step % 50 === 0) {
          nt.recover();
          nt.filter = (): boolean => rnd() > 0.1;
          const victim = 1 + Math.floor(rnd() * 5);
          if (rnd() < 0.5) nt.isolate(victim);
        }
        if (step % 97 === 0) nt.restart(1 + Math.floor(rnd() * 5));
        nt.tickAll();
        const lead = nt.leaders()[0];
        if (lead !== undefined && step % 5 === 0) {
          try {
            nt.propose(lead, `s${seed}-${proposals++}`);
          } catch (e) {
            if (!isRaftError(e)) throw e;
          }
        }
      }
      nt.recover();
      nt.tickAll(60);
      expect(nt.checker.checks).toBeGreaterThan(100);
    }
    // The checker itself must fail on broken histories.
    const fake = (st: Partial<RaftStatus> & { id: number }, log: number[]): InvariantSubject => ({
      status: (): RaftStatus =>
        ({
          role: "follower",
          term: 1,
          vote: 0,
          lead: 0,
          commit: 0,
          applied: 0,
          firstIndex: 1,
          lastIndex: log.length,
          ...st,
        }) as RaftStatus,
      entryAt: (i: number): Entry | undefined => {
        const t = log[i - 1];
        return t === undefined
          ? undefined
          : { index: i, term: t, type: "normal", data: new Uint8Array([i]) };
      },
    });
    const bad: Array<() => void> = [
      () =>
        createInvariantChecker().check([
          fake({ id: 1, role: "leader" }, []),
          fake({ id: 2, role: "leader" }, []),
        ]),
      () => {
        const c = createInvariantChecker();
        c.check([fake({ id: 1, term: 3 }, [])]);
        c.check([fake({ id: 1, term: 2 }, [])]);
      },
      () => {
        const c = createInvariantChecker();
        c.check([fake({ id: 1, commit: 2 }, [1, 1])]);
        c.check([fake({ id: 1, commit: 1 }, [1, 1])]);
      },
      () => {
        const c = createInvariantChecker();
        c.check([fake({ id: 1, term: 2, vote: 1 }, [])]);
        c.check([fake({ id: 1, term: 2, vote: 3 }, [])]);
      },
      () => {
        const c = createInvariantChecker();
        c.check([fake({ id: 1, role: "leader", term: 2 }, [1, 2])]);
        c.check([fake({ id: 1, role: "leader", term: 2 }, [1])]);
      },
      () =>
        createInvariantChecker().check([fake({ id: 1 }, [1, 1, 2]), fake({ id: 2 }, [1, 2, 2])]),
      () =>
        createInvariantChecker().check([
          fake({ id: 1, commit: 2, term: 2 }, [1, 1]),
          fake({ id: 2, role: "leader", term: 3 }, [1, 2, 3]),
        ]),
      () => {
        const c = createInvariantChecker();
        c.recordApplied(1, [{ index: 1, term: 1, type: "normal", data: new Uint8Array([1]) }]);
        c.recordApplied(2, [{ index: 1, term: 1, type: "normal", data: new Uint8Array([2]) }]);
      },
    ];
    for (const f of bad) {
      let err: unknown;
      try {
        f();
      } catch (e) {
        err = e;
      }
      expect(isRaftError(err, "invariant_violation"), String(f)).toBe(true);
    }
    void ({} as Message);
  }, 30_000);
});
