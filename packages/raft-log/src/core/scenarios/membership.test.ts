import { describe, expect, it } from "vitest";
import type { ConfChange } from "../../types.js";
import { jsonConfChangeCodec } from "../conf-change.js";
import { jointCommitted, jointVote } from "../quorum.js";
import { isRaftError } from "../raft-error.js";
import { electLeader, msg, newHarness, take } from "../testing/harness.js";
import { appliedData, bytes, Network } from "../testing/network.js";
import { TestStorage } from "../testing/test-storage.js";

const addLearner = (id: number): ConfChange => ({
  changes: [{ type: "add_learner", nodeId: id }],
  transition: "auto",
});
const addVoter = (id: number): ConfChange => ({
  changes: [{ type: "add_voter", nodeId: id }],
  transition: "auto",
});
const remove = (id: number): ConfChange => ({
  changes: [{ type: "remove", nodeId: id }],
  transition: "auto",
});

function tickUntilLeader(nt: Network, among: number[], max = 200): number {
  for (let i = 0; i < max; i++) {
    const l = nt.leaders().find((id) => among.includes(id));
    if (l !== undefined) return l;
    nt.tickAll();
  }
  throw new Error("no leader");
}

describe("membership (§6)", () => {
  it("scenario 32: one change at a time, also for a new leader inheriting a pending change", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    nt.isolate(2);
    nt.isolate(3);
    nt.raft(1).proposeConfChange(addLearner(4));
    nt.stabilize();
    expect(() => nt.raft(1).proposeConfChange(addLearner(5))).toThrow(/\[conf_change_pending\]/);
    // A forwarded second change is turned into a no-op.
    const before = nt.raft(1).status().lastIndex;
    nt.raft(1).step(
      msg({
        type: "prop",
        from: 2,
        entries: [
          {
            index: 0,
            term: 0,
            type: "conf_change",
            data: jsonConfChangeCodec.encode(addLearner(5)),
          },
        ],
      }),
    );
    expect(nt.raft(1).entryAt(before + 1)?.type).toBe("normal");
    nt.recover();
    nt.tickAll(3);
    expect(nt.raft(1).status().confState.learners).toEqual([4]);
    nt.raft(1).proposeConfChange(addLearner(5)); // allowed once the first is applied

    // New leader inheriting an uncommitted conf change.
    const s = TestStorage.withTerms([1], [1, 2, 3]);
    s.ents = [
      { index: 1, term: 1, type: "conf_change", data: jsonConfChangeCodec.encode(addLearner(4)) },
    ];
    s.hard = { term: 1, vote: 0, commit: 0 };
    s.sync();
    const h = newHarness(1, [1, 2, 3], { storage: s, preVote: false });
    electLeader(h);
    expect(h.raft.role).toBe("leader");
    expect(h.raft.pendingConfIndex).toBe(1);
    let err: unknown;
    try {
      h.raft.proposeConfChange(addLearner(5));
    } catch (e) {
      err = e;
    }
    expect(isRaftError(err, "conf_change_pending")).toBe(true);
  });

  it("scenario 33: joint consensus needs majorities of both C_old and C_new", () => {
    const cfg = { incoming: new Set([3, 4, 5]), outgoing: new Set([1, 2, 3]) };
    const acked = (m: Record<number, number>) => (id: number) => m[id];
    expect(jointCommitted(cfg, acked({ 1: 5, 2: 5 }))).toBe(0);
    expect(jointCommitted(cfg, acked({ 1: 5, 2: 5, 4: 5 }))).toBe(0);
    expect(jointCommitted(cfg, acked({ 1: 5, 2: 5, 4: 5, 5: 4 }))).toBe(4);
    expect(jointVote(cfg, (id) => (id <= 2 ? true : undefined))).toBe("pending");
    expect(jointVote(cfg, (id) => (id <= 2 ? true : id === 4 ? false : undefined))).toBe("pending");
    expect(jointVote(cfg, (id) => (id <= 2 || id === 4 ? id !== 4 : false))).toBe("lost");

    // The core: leader 1 in a joint config {1,2,3} → {3,4,5}.
    const s = new TestStorage({ voters: [3, 4, 5], votersOutgoing: [1, 2, 3] });
    const h = newHarness(1, [], { storage: s, preVote: false, checkQuorum: false });
    h.raft.campaign();
    take(h);
    h.raft.step(msg({ type: "vote_resp", from: 2, to: 1, term: 1 }));
    expect(h.raft.role).toBe("candidate"); // old majority only
    h.raft.step(msg({ type: "vote_resp", from: 4, to: 1, term: 1 }));
    h.raft.step(msg({ type: "vote_resp", from: 5, to: 1, term: 1 }));
    expect(h.raft.role).toBe("leader");
    take(h);
    h.raft.step(msg({ type: "app_resp", from: 2, to: 1, term: 1, index: 1 }));
    take(h);
    expect(h.raft.status().commit).toBe(0); // {1,2} only
    h.raft.step(msg({ type: "app_resp", from: 4, to: 1, term: 1, index: 1 }));
    take(h);
    expect(h.raft.status().commit).toBe(0); // C_new has only 4
    h.raft.step(msg({ type: "app_resp", from: 5, to: 1, term: 1, index: 1 }));
    take(h);
    expect(h.raft.status().commit).toBe(1);
  });

  it("scenario 34: removing the leader, and replacing it via joint consensus", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    nt.raft(1).proposeConfChange(remove(1));
    nt.stabilize();
    nt.tickAll();
    expect(nt.raft(1).role).toBe("follower");
    expect(() => nt.raft(1).propose(bytes("x"))).toThrow(/no_leader|proposal_dropped/);
    const l = tickUntilLeader(nt, [2, 3]);
    nt.propose(l, "after");
    expect(appliedData(nt.node(l === 2 ? 3 : 2))).toContain("after");
    for (let i = 0; i < 50; i++) nt.tickAll();
    expect(nt.raft(1).role).toBe("follower"); // the removed node never campaigns

    // Replace leader 1 by 4 with a joint change (auto leave).
    const nj = new Network([1, 2, 3]);
    nj.campaign(1);
    nj.add(4, { voters: [1, 2, 3] });
    nj.raft(1).proposeConfChange({
      changes: [
        { type: "add_voter", nodeId: 4 },
        { type: "remove", nodeId: 1 },
      ],
      transition: "auto",
    });
    nj.stabilize();
    for (let i = 0; i < 5; i++) nj.tickAll();
    expect(nj.raft(2).status().confState).toMatchObject({ voters: [2, 3, 4], votersOutgoing: [] });
    expect(nj.raft(1).role).toBe("follower");
    const l2 = tickUntilLeader(nj, [2, 3, 4]);
    nj.propose(l2, "replaced");
    for (const id of [2, 3, 4]) expect(appliedData(nj.node(id))).toContain("replaced");
  });

  it("scenario 35: shrinking the configuration unblocks pending commits", () => {
    const nt = new Network([1, 2, 3, 4]);
    nt.campaign(1);
    nt.isolate(4);
    nt.raft(1).proposeConfChange(remove(4));
    const removal = nt.raft(1).status().lastIndex;
    nt.filter = (m) =>
      !(m.type === "app" && m.to === 3 && m.entries.some((e) => e.index > removal));
    nt.stabilize();
    nt.propose(1, "pending");
    const x = nt.raft(1).status().lastIndex;
    // With {1,2,3,4} a quorum is 3; only 1 and 2 hold x — but once the removal of 4 applies,
    // {1,2} is a quorum of {1,2,3}.
    expect(nt.raft(1).status().confState.voters).toEqual([1, 2, 3]);
    expect(nt.raft(1).status().commit).toBe(x);
    expect(nt.raft(3).status().lastIndex).toBe(removal);
  });

  it("scenario 36: learners replicate, never count or campaign, may vote, and count after promotion", () => {
    const nt = new Network([1, 2, 3], {
      storage: () => new TestStorage({ voters: [1, 2], learners: [3] }),
    });
    nt.campaign(1);
    nt.propose(1, "a");
    expect(appliedData(nt.node(3))).toEqual(["a"]);
    // never counts towards commit
    nt.isolate(2);
    nt.propose(1, "b");
    expect(nt.raft(1).status().commit).toBe(2);
    expect(nt.raft(3).status().lastIndex).toBe(3);
    nt.recover();
    nt.tickAll();
    // never starts an election
    nt.isolate(3);
    for (let i = 0; i < 60; i++) nt.tick(3);
    expect(nt.raft(3).role).toBe("follower");
    expect(nt.raft(3).term).toBe(1);
    // a learner asked to vote may grant
    nt.raft(3).step(msg({ type: "vote", from: 2, to: 3, term: 9, index: 100, logTerm: 9 }));
    expect(nt.drain(3)).toEqual([expect.objectContaining({ type: "vote_resp", reject: false })]);
    // promotion: now it votes and counts
    const np = new Network([1, 2, 3], {
      storage: () => new TestStorage({ voters: [1, 2], learners: [3] }),
    });
    np.campaign(1);
    np.raft(1).proposeConfChange(addVoter(3));
    np.stabilize();
    np.tickAll();
    expect(np.raft(3).status().confState.voters).toEqual([1, 2, 3]);
    np.isolate(2);
    np.propose(1, "counted");
    expect(appliedData(np.node(1))).toContain("counted");
  });

  it("scenario 37: removed or partitioned servers cannot disrupt a healthy leader", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    const term = nt.raft(1).term;
    nt.isolate(3);
    for (let i = 0; i < 100; i++) nt.tick(3);
    nt.recover();
    nt.tickAll(30);
    expect(nt.raft(1).role).toBe("leader");
    expect(nt.raft(1).term).toBe(term);
    // DisruptiveFollowerPreVote: even a higher-term node is ignored by followers in lease
    nt.raft(1).step(
      msg({ type: "vote", from: 3, to: 1, term: term + 5, index: 99, logTerm: term + 5 }),
    );
    nt.raft(2).step(
      msg({ type: "vote", from: 3, to: 2, term: term + 5, index: 99, logTerm: term + 5 }),
    );
    expect(nt.raft(1).role).toBe("leader");
    expect(nt.raft(2).term).toBe(term);
    // a removed node's timer firing does nothing
    nt.raft(1).proposeConfChange(remove(3));
    nt.stabilize();
    nt.tickAll(3);
    for (let i = 0; i < 100; i++) nt.tick(3);
    expect(nt.raft(3).role).toBe("follower");
    expect(nt.raft(1).role).toBe("leader");
    expect(nt.raft(1).term).toBe(term);
  });
});
