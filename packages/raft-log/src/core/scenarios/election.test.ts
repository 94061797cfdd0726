import { describe, expect, it } from "vitest";
import { createPrng } from "../prng.js";
import { createRaft, type Raft } from "../raft.js";
import { electLeader, ents, msg, newHarness, take } from "../testing/harness.js";
import { Network } from "../testing/network.js";
import { TestStorage } from "../testing/test-storage.js";

const noPre = { preVote: false, checkQuorum: false } as const;

function storageAt(
  term: number,
  vote: number,
  voters: number[],
  terms: number[] = [],
): TestStorage {
  const s = TestStorage.withTerms(terms, voters);
  s.hard = { term, vote, commit: 0 };
  s.sync();
  return s;
}

describe("terms and basic RPCs (§5.1)", () => {
  it("scenario 1: higher term wins (follower, candidate, pre-candidate, leader)", () => {
    const makers: Array<[string, () => Raft]> = [
      ["follower", () => newHarness(1, [1, 2, 3], noPre).raft],
      [
        "candidate",
        () => {
          const h = newHarness(1, [1, 2, 3], noPre);
          h.raft.campaign();
          take(h);
          return h.raft;
        },
      ],
      [
        "pre_candidate",
        () => {
          const h = newHarness(1, [1, 2, 3]);
          h.raft.campaign();
          take(h);
          return h.raft;
        },
      ],
      [
        "leader",
        () => {
          const h = newHarness(1, [1, 2, 3], noPre);
          electLeader(h);
          return h.raft;
        },
      ],
    ];
    for (const [role, make] of makers) {
      for (const type of ["app", "heartbeat", "vote_resp", "app_resp"] as const) {
        const r = make();
        expect(r.role).toBe(role);
        r.step(msg({ type, from: 2, to: 1, term: 5 }));
        expect(r.term, `${role}/${type}`).toBe(5);
        expect(r.vote).toBe(0);
        expect(r.role).toBe("follower");
      }
    }
  });

  it("scenario 2: stale AppendEntries rejected without any state change", () => {
    const h = newHarness(1, [1, 2, 3], { storage: storageAt(5, 0, [1, 2, 3], [1, 2]) });
    h.raft.step(msg({ type: "heartbeat", from: 2, to: 1, term: 5, commit: 1 }));
    take(h);
    h.raft.tick();
    h.raft.tick();
    const before = h.raft.status();
    h.raft.step(
      msg({
        type: "app",
        from: 3,
        to: 1,
        term: 3,
        index: 2,
        logTerm: 2,
        entries: ents(3, [3]),
        commit: 3,
      }),
    );
    const out = take(h);
    const after = h.raft.status();
    expect(after.lastIndex).toBe(before.lastIndex);
    expect(after.commit).toBe(1);
    expect(after.lead).toBe(2);
    expect(after.electionElapsed).toBe(before.electionElapsed); // timer not reset
    expect(out).toEqual([
      expect.objectContaining({ type: "app_resp", to: 3, term: 5, reject: true }),
    ]);
  });

  it("scenario 3: stale RequestVote rejected, vote unchanged, reply carries current term", () => {
    const h = newHarness(1, [1, 2, 3], { storage: storageAt(5, 2, [1, 2, 3]) });
    h.raft.step(msg({ type: "vote", from: 3, to: 1, term: 3, index: 10, logTerm: 3 }));
    const out = take(h);
    expect(h.raft.vote).toBe(2);
    expect(h.raft.term).toBe(5);
    expect(out).toEqual([
      expect.objectContaining({ type: "vote_resp", to: 3, term: 5, reject: true }),
    ]);
  });
});

describe("leader election (§5.2)", () => {
  it("scenario 4: new and restarted nodes start as followers keeping term, vote and log", () => {
    const fresh = newHarness(1, [1, 2, 3]).raft;
    expect(fresh.role).toBe("follower");
    expect(fresh.term).toBe(0);
    const s = storageAt(7, 2, [1, 2, 3], [1, 3, 7]);
    const restarted = createRaft({ id: 1, storage: s });
    expect(restarted.role).toBe("follower");
    expect(restarted.term).toBe(7);
    expect(restarted.vote).toBe(2);
    expect(restarted.status().lastIndex).toBe(3);
    expect(restarted.entryAt(3)?.term).toBe(7);
  });

  it("scenario 5: a leader heartbeats every peer each interval, carrying the commit index", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    nt.propose(1, "a");
    const r = nt.raft(1);
    expect(r.role).toBe("leader");
    r.tick(); // heartbeatTick = 1
    const rd = r.ready();
    r.advance();
    const hbs = rd.messages.filter((m) => m.type === "heartbeat");
    expect(hbs.map((m) => m.to).sort()).toEqual([2, 3]);
    for (const m of hbs) {
      expect(m.entries).toEqual([]);
      expect(m.commit).toBe(r.status().commit);
      expect(m.commit).toBe(2);
    }
  });

  it("scenario 6: timeout starts an election, persisting the self-vote before RequestVotes", () => {
    const h = newHarness(1, [1, 2, 3], { ...noPre, storage: storageAt(1, 0, [1, 2, 3], [1]) });
    const timeout = h.raft.status().electionTimeout;
    for (let i = 0; i < timeout - 1; i++) h.raft.tick();
    expect(h.raft.role).toBe("follower");
    h.raft.tick();
    expect(h.raft.role).toBe("candidate");
    expect(h.raft.term).toBe(2);
    const rd = h.raft.ready();
    expect(rd.hardState).toEqual({ term: 2, vote: 1, commit: 0 });
    expect(rd.mustSync).toBe(true);
    // The requests travel in the same Ready, i.e. only after the hard state is durable.
    const votes = rd.messages.filter((m) => m.type === "vote");
    expect(votes.map((m) => m.to).sort()).toEqual([2, 3]);
    for (const m of votes) expect(m).toMatchObject({ term: 2, index: 1, logTerm: 1 });
    h.raft.advance();
  });

  it("scenario 7: a candidate that has not won starts a new election at term+1", () => {
    const h = newHarness(1, [1, 2, 3], noPre);
    h.raft.campaign();
    take(h);
    expect(h.raft.term).toBe(1);
    for (let i = 0; i < 20; i++) h.raft.tick();
    expect(h.raft.role).toBe("candidate");
    expect(h.raft.term).toBe(2);
  });

  it("scenario 8: one-round election outcomes (13 cases)", () => {
    const cases: Array<[number, Record<number, boolean>, string]> = [
      [1, {}, "leader"],
      [3, { 2: true, 3: true }, "leader"],
      [3, { 2: true }, "leader"],
      [5, { 2: true, 3: true, 4: true, 5: true }, "leader"],
      [5, { 2: true, 3: true, 4: true }, "leader"],
      [5, { 2: true, 3: true }, "leader"],
      [3, { 2: false, 3: false }, "follower"],
      [5, { 2: false, 3: false, 4: false, 5: false }, "follower"],
      [5, { 2: true, 3: false, 4: false, 5: false }, "follower"],
      [3, {}, "candidate"],
      [5, { 2: true }, "candidate"],
      [5, { 2: false, 3: false }, "candidate"],
      [5, {}, "candidate"],
    ];
    for (const [size, votes, want] of cases) {
      const ids = Array.from({ length: size }, (_, i) => i + 1);
      const h = newHarness(1, ids, noPre);
      h.raft.campaign();
      take(h);
      for (const [id, granted] of Object.entries(votes)) {
        h.raft.step(msg({ type: "vote_resp", from: Number(id), to: 1, term: 1, reject: !granted }));
      }
      expect(h.raft.role, `${size} ${JSON.stringify(votes)}`).toBe(want);
      expect(h.raft.term).toBe(1);
    }
  });

  it("scenario 9: one vote per term, first come first served; a repeat is granted again", () => {
    const cases: Array<[number, number, boolean]> = [
      [0, 2, false],
      [0, 3, false],
      [2, 2, false],
      [3, 3, false],
      [2, 3, true],
      [3, 2, true],
    ];
    for (const [vote, from, reject] of cases) {
      const h = newHarness(1, [1, 2, 3], { storage: storageAt(1, vote, [1, 2, 3]) });
      h.raft.step(msg({ type: "vote", from, to: 1, term: 1, index: 0, logTerm: 0 }));
      const out = take(h);
      expect(out).toEqual([expect.objectContaining({ type: "vote_resp", to: from, reject })]);
      expect(h.raft.vote).toBe(vote === 0 ? from : vote);
    }
    // first come first served within one term
    const h = newHarness(1, [1, 2, 3], noPre);
    h.raft.step(msg({ type: "vote", from: 2, to: 1, term: 4 }));
    h.raft.step(msg({ type: "vote", from: 3, to: 1, term: 4 }));
    h.raft.step(msg({ type: "vote", from: 2, to: 1, term: 4 }));
    expect(take(h).map((m) => [m.to, m.reject])).toEqual([
      [2, false],
      [3, true],
      [2, false],
    ]);
  });

  it("scenario 10: a vote survives a crash", () => {
    const nt = new Network([1, 2, 3], { raft: noPre });
    nt.raft(1).step(msg({ type: "vote", from: 2, to: 1, term: 7 }));
    nt.drain(1);
    nt.restart(1);
    const r = nt.raft(1);
    expect(r.term).toBe(7);
    expect(r.vote).toBe(2);
    r.step(msg({ type: "vote", from: 3, to: 1, term: 7 }));
    const out = nt.drain(1);
    expect(out).toEqual([expect.objectContaining({ type: "vote_resp", to: 3, reject: true })]);
  });

  it("scenario 11: a candidate defers to a leader with term ≥ its own", () => {
    for (const term of [1, 2]) {
      const h = newHarness(1, [1, 2, 3], noPre);
      h.raft.campaign();
      take(h);
      h.raft.step(msg({ type: "app", from: 2, to: 1, term }));
      expect(h.raft.role).toBe("follower");
      expect(h.raft.lead).toBe(2);
      expect(h.raft.term).toBe(term);
    }
  });

  it("scenario 12: randomized timeouts in [T, 2T) rarely conflict (≤ 30% over 1,000 trials)", () => {
    const T = 10;
    const master = createPrng(12);
    let conflicts = 0;
    const trials = 1000;
    for (let t = 0; t < trials; t++) {
      const nodes = [1, 2, 3, 4, 5].map((id) =>
        createRaft({
          id,
          storage: new TestStorage({ voters: [1, 2, 3, 4, 5] }),
          electionTick: T,
          random: createPrng(Math.floor(master() * 2 ** 32)),
        }),
      );
      for (const n of nodes) {
        const to = n.status().electionTimeout;
        expect(to).toBeGreaterThanOrEqual(T);
        expect(to).toBeLessThan(2 * T);
      }
      for (let tick = 0; tick < 2 * T; tick++) {
        for (const n of nodes) n.tick();
        const fired = nodes.filter((n) => n.role !== "follower").length;
        if (fired > 0) {
          if (fired > 1) conflicts++;
          break;
        }
      }
    }
    expect(conflicts / trials).toBeLessThanOrEqual(0.3);
  }, 30_000);

  it("scenario 13: dueling candidates yield exactly one leader; a cut-off candidate concedes", () => {
    const nt = new Network([1, 2, 3], { raft: noPre });
    nt.cutLink(1, 3);
    nt.campaign(1);
    nt.campaign(3);
    expect(nt.raft(1).role).toBe("leader");
    expect(nt.raft(3).role).toBe("candidate");
    nt.recover();
    // 3 campaigns again at a higher term but its log is behind: nobody grants.
    nt.campaign(3);
    expect(nt.raft(3).role).toBe("follower");
    expect(nt.raft(1).role).toBe("follower");
    expect(nt.raft(1).term).toBe(2);
    for (let i = 0; i < 40 && nt.leaders().length === 0; i++) nt.tickAll();
    expect(nt.leaders()).toHaveLength(1);
    expect(nt.leaders()[0]).not.toBe(3);

    // CandidateConcede: an isolated candidate rejoins as follower of the new leader.
    const n2 = new Network([1, 2, 3], { raft: noPre });
    n2.isolate(3);
    n2.campaign(3);
    expect(n2.raft(3).role).toBe("candidate");
    n2.recover();
    n2.campaign(1);
    expect(n2.raft(1).role).toBe("leader");
    n2.propose(1, "x");
    expect(n2.raft(3).role).toBe("follower");
    expect(n2.raft(3).lead).toBe(1);
    expect(n2.raft(3).status().commit).toBe(n2.raft(1).status().commit);

    // With pre-vote (default) an isolated node never becomes leader nor bumps its term.
    const n3 = new Network([1, 2, 3]);
    n3.campaign(1);
    n3.isolate(3);
    const term = n3.raft(3).term;
    for (let i = 0; i < 100; i++) n3.tick(3);
    expect(n3.raft(3).role).not.toBe("leader");
    expect(n3.raft(3).term).toBe(term);
  });
});
