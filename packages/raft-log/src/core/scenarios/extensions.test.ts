import { describe, expect, it } from "vitest";
import type { Entry } from "../../types.js";
import { type Ready, stablyCommitted } from "../raft.js";
import { isRaftError } from "../raft-error.js";
import { bytes, Network } from "../testing/network.js";

const T = 10;

function tickUntil(nt: Network, pred: () => boolean, max = 300): number {
  for (let i = 0; i < max; i++) {
    if (pred()) return i;
    nt.tickAll();
  }
  throw new Error("condition not reached");
}

describe("check-quorum and pre-vote (scenario 41)", () => {
  it("scenario 41a: a leader without an active quorum steps down; with one it stays", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    for (let i = 0; i < 3 * T; i++) nt.tick(1);
    expect(nt.raft(1).role).toBe("leader");
    nt.isolate(1);
    for (let i = 0; i < 2 * T + 1; i++) nt.tick(1);
    expect(nt.raft(1).role).toBe("follower");
  });

  it("scenario 41b: followers in lease refuse votes (superseding), a stuck higher-term candidate is freed", () => {
    const nt = new Network([1, 2, 3], { raft: { preVote: false } });
    nt.campaign(1);
    const term = nt.raft(1).term;
    nt.campaign(3); // 2 heard from leader 1 recently: ignores 3
    expect(nt.raft(3).role).toBe("candidate");
    expect(nt.raft(1).role).toBe("leader");
    expect(nt.raft(2).term).toBe(term);
    // leader 1 dies; once 2's lease runs out, 3 can win
    nt.isolate(1);
    for (let i = 0; i < T; i++) nt.tick(2);
    nt.campaign(3);
    expect(nt.raft(3).role).toBe("leader");

    // FreeStuckCandidateWithCheckQuorum
    const ns = new Network([1, 2, 3], { raft: { preVote: false } });
    ns.campaign(1);
    ns.isolate(1);
    ns.campaign(3);
    expect(ns.raft(2).role).toBe("follower");
    expect(ns.raft(3).role).toBe("candidate");
    ns.campaign(3);
    expect(ns.raft(3).term).toBeGreaterThan(ns.raft(1).term);
    ns.recover();
    // 1 (still leader) heartbeats 3; 3's higher-term answer makes 1 step down
    ns.tick(1);
    expect(ns.raft(1).role).toBe("follower");
    expect(ns.raft(1).term).toBe(ns.raft(3).term);
    tickUntil(ns, () => ns.leaders().length === 1);
    ns.propose(ns.leaders()[0] as number, "freed");
  });

  it("scenario 41c: NodeWithSmallerTermCanCompleteElection and PreVoteWithSplitVote", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    nt.propose(1, "a");
    // 3 is cut off while leadership moves 1 → 2 (a higher term), so 3 has a smaller term.
    nt.isolate(3);
    nt.raft(1).transferLeader(2);
    nt.stabilize();
    const leader = 2;
    expect(nt.raft(leader).role).toBe("leader");
    nt.propose(leader, "a2");
    expect(nt.raft(3).term).toBeLessThan(nt.raft(leader).term);
    // 3 rejoins just as the leader is cut off: the other two must still elect someone.
    nt.recover();
    nt.isolate(leader);
    const rest = [1, 2, 3].filter((id) => id !== leader);
    tickUntil(nt, () => rest.some((id) => nt.raft(id).role === "leader"));
    const newLeader = rest.find((id) => nt.raft(id).role === "leader") as number;
    nt.propose(newLeader, "b");
    expect(nt.raft(newLeader).status().commit).toBe(nt.raft(newLeader).status().lastIndex);

    // PreVoteWithSplitVote: two nodes pre-campaign at once after the leader dies.
    const ns = new Network([1, 2, 3]);
    ns.campaign(1);
    ns.isolate(1);
    for (let i = 0; i < T; i++) {
      ns.raft(2).tick();
      ns.raft(3).tick();
    }
    ns.raft(2).campaign();
    ns.raft(3).campaign();
    ns.stabilize();
    tickUntil(ns, () => [2, 3].filter((id) => ns.raft(id).role === "leader").length === 1);
    expect([2, 3].filter((id) => ns.raft(id).role === "leader")).toHaveLength(1);
  });

  it("scenario 41d: partial partition (A–B, B–C up; A–C down) keeps committing, at most one leader change", () => {
    for (const start of [1, 2]) {
      const nt = new Network([1, 2, 3]);
      nt.campaign(start);
      nt.cutLink(1, 3);
      const leaders = new Set<string>();
      let committed = 0;
      for (let round = 0; round < 40; round++) {
        nt.tickAll(2);
        const l = nt.leaders();
        const lead = l.find((id) => nt.raft(id).status().commit > 0);
        if (lead === undefined) continue;
        leaders.add(`${lead}@${nt.raft(lead).term}`);
        const before = nt.raft(lead).status().commit;
        try {
          nt.propose(lead, `w${round}`);
          nt.tickAll();
        } catch (e) {
          if (!isRaftError(e)) throw e;
        }
        if (nt.raft(lead).status().commit > before) committed++;
      }
      expect(leaders.size, `start ${start}`).toBeLessThanOrEqual(2);
      expect(committed).toBeGreaterThanOrEqual(35);
    }
  }, 30_000);
});

describe("reads and leader transfer (scenario 42)", () => {
  const ctx = (s: string): Uint8Array => bytes(s);

  it("scenario 42a: ReadIndex waits for a quorum heartbeat round and applied ≥ index", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    nt.propose(1, "x");
    nt.isolate(1);
    nt.raft(1).readIndex(ctx("r1"));
    nt.stabilize();
    expect(nt.node(1).readStates).toHaveLength(0); // no quorum ack yet
    nt.recover();
    nt.tick(1);
    expect(nt.node(1).readStates).toEqual([{ index: 2, context: ctx("r1") }]);
    // via a follower
    nt.raft(3).readIndex(ctx("r3"));
    nt.stabilize();
    expect(nt.node(3).readStates).toEqual([{ index: 2, context: ctx("r3") }]);
    expect(nt.raft(3).status().applied).toBeGreaterThanOrEqual(2);
  });

  it("scenario 42b: a fresh leader defers ReadIndex until it commits in its own term", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    nt.propose(1, "x");
    nt.filter = (m) => m.type !== "app_resp"; // the new leader cannot commit its no-op
    nt.isolate(1);
    tickUntil(nt, () => nt.leaders().some((id) => id !== 1));
    const l = nt.leaders().find((id) => id !== 1) as number;
    const term = nt.raft(l).term;
    expect(nt.raft(l).entryAt(nt.raft(l).status().commit)?.term).not.toBe(term);
    nt.raft(l).readIndex(ctx("early"));
    nt.tick(l);
    nt.tick(l);
    expect(nt.node(l).readStates).toHaveLength(0);
    nt.filter = undefined;
    nt.tick(l);
    nt.tick(l);
    expect(nt.node(l).readStates.map((r) => new TextDecoder().decode(r.context))).toEqual([
      "early",
    ]);
    expect(nt.node(l).readStates[0]?.index).toBe(nt.raft(l).status().commit);
    expect(nt.raft(l).entryAt(nt.node(l).readStates[0]?.index ?? 0)?.term).toBe(term);
  });

  it("scenario 42c: lease reads are immediate while the lease holds and fail closed once it expired", () => {
    const nt = new Network([1, 2, 3], { raft: { readOnlyOption: "lease_based" } });
    nt.campaign(1);
    nt.tickAll(2);
    nt.raft(1).readIndex(ctx("lease"));
    const out = nt.drain(1);
    expect(out.filter((m) => m.type === "heartbeat")).toHaveLength(0); // no round trip
    expect(nt.node(1).readStates).toHaveLength(1);
    nt.isolate(1);
    let served = 0;
    let refused = 0;
    for (let t = 1; t <= 3 * T; t++) {
      nt.tick(1);
      try {
        nt.raft(1).readIndex(ctx(`t${t}`));
        nt.stabilize();
        served++;
        expect(t).toBeLessThan(T); // never after the lease expired
      } catch (e) {
        if (!isRaftError(e, "lease_expired") && !isRaftError(e, "no_leader")) throw e;
        refused++;
      }
    }
    expect(served).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  });

  it("status().responsive: the peers that answered within an election timeout (transfer targets)", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    nt.tick(1);
    nt.stabilize();
    expect([...nt.raft(1).status().responsive].sort()).toEqual([2, 3]);
    nt.isolate(3);
    for (let t = 0; t < T; t++) {
      nt.tick(1);
      nt.stabilize();
    }
    expect(nt.raft(1).role).toBe("leader");
    expect([...nt.raft(1).status().responsive]).toEqual([2]);
    // Only a leader hears answers.
    expect(nt.raft(2).status().responsive.size).toBe(0);
  });

  it("scenario 42d: leader transfer — up to date, slow follower, proposals rejected, timeout", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    nt.raft(1).transferLeader(2);
    nt.stabilize();
    expect(nt.raft(2).role).toBe("leader");
    expect(nt.raft(1).role).toBe("follower");
    expect(nt.log.filter((m) => m.type === "timeout_now")).toHaveLength(1);

    // slow follower: caught up first
    const ns = new Network([1, 2, 3]);
    ns.campaign(1);
    ns.isolate(3);
    for (let i = 0; i < 5; i++) ns.propose(1, `p${i}`);
    ns.recover();
    ns.raft(1).transferLeader(3);
    ns.stabilize();
    ns.tickAll(2);
    expect(ns.raft(3).role).toBe("leader");
    expect(ns.raft(3).status().commit).toBeGreaterThanOrEqual(7);

    // proposals rejected during the transfer, abandoned after an election timeout
    const nr = new Network([1, 2, 3]);
    nr.campaign(1);
    nr.isolate(3);
    nr.raft(1).transferLeader(3);
    nr.stabilize();
    expect(nr.raft(1).status().leadTransferee).toBe(3);
    let err: unknown;
    try {
      nr.raft(1).propose(bytes("during"));
    } catch (e) {
      err = e;
    }
    expect(isRaftError(err, "transfer_in_progress")).toBe(true);
    for (let i = 0; i < T; i++) nr.tick(1);
    expect(nr.raft(1).status().leadTransferee).toBe(0);
    expect(nr.raft(1).role).toBe("leader");
    nr.propose(1, "after");
    expect(nr.raft(1).status().commit).toBe(2);
  });
});

describe("quiescence: isQuiet and expireLease", () => {
  const ctx = (s: string): Uint8Array => bytes(s);
  it("a leader is quiet only once every peer holds, and has answered for, the whole applied log", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    expect(nt.raft(2).isQuiet()).toBe(false); // followers never are
    nt.tickAll();
    expect(nt.raft(1).isQuiet()).toBe(true);
    // An entry a peer lacks, or one not committed yet, is something in flight.
    nt.cutLink(1, 3);
    nt.propose(1, "x");
    expect(nt.raft(1).isQuiet()).toBe(false);
    nt.recover();
    nt.tickAll();
    expect(nt.raft(1).isQuiet()).toBe(true);
    // A follower the leader probes again (it was unreachable for a while) that holds the
    // whole log is caught up: the idle leader sends it no append to leave the probe state.
    nt.raft(1).reportUnreachable(2);
    nt.tick(1);
    expect(nt.raft(1).isQuiet()).toBe(true);
    // A pending read is too, until it is answered.
    nt.raft(1).readIndex(ctx("r"));
    expect(nt.raft(1).isQuiet()).toBe(false);
    nt.stabilize();
    expect(nt.raft(1).isQuiet()).toBe(true);
    // So is a peer that stopped answering heartbeats for an election timeout.
    nt.isolate(3);
    for (let t = 0; t < T; t++) nt.tick(1);
    expect(nt.raft(1).isQuiet()).toBe(false);
    nt.recover();
    nt.tick(1);
    expect(nt.raft(1).isQuiet()).toBe(true);
    // And a leadership transfer.
    nt.isolate(2);
    nt.raft(1).transferLeader(2);
    expect(nt.raft(1).isQuiet()).toBe(false);
  });

  it("expireLease: no lease read until a quorum answers a heartbeat sent after it", () => {
    const nt = new Network([1, 2, 3], { raft: { readOnlyOption: "lease_based" } });
    nt.campaign(1);
    nt.tickAll(2);
    expect(nt.raft(1).leaseValid()).toBe(true);
    nt.raft(1).expireLease();
    expect(nt.raft(1).leaseValid()).toBe(false);
    expect(() => nt.raft(1).readIndex(ctx("stale"))).toThrow(/lease expired/);
    expect(nt.raft(1).status().responsive.size).toBe(0);
    nt.tick(1); // one heartbeat round
    expect(nt.raft(1).leaseValid()).toBe(true);
  });
});

describe("stablyCommitted: what may be applied while a Ready's write is in flight", () => {
  it("counts the committed entries below the Ready's own writes, up to a membership change", () => {
    const e = (index: number, type: Entry["type"] = "normal"): Entry => ({
      index,
      term: 1,
      type,
      data: new Uint8Array(0),
    });
    const rd = (committed: Entry[], entries: Entry[], snapshot = false): Ready =>
      ({
        entries,
        committedEntries: committed,
        ...(snapshot ? { snapshot: {} } : {}),
      }) as unknown as Ready;
    // A leader: what it commits it wrote in an earlier Ready.
    expect(stablyCommitted(rd([e(4), e(5)], [e(6), e(7)]))).toBe(2);
    expect(stablyCommitted(rd([e(4), e(5)], []))).toBe(2);
    // A follower given entries that are committed already: those wait for the write.
    expect(stablyCommitted(rd([e(5), e(6), e(7)], [e(6), e(7), e(8)]))).toBe(1);
    expect(stablyCommitted(rd([e(6)], [e(6)]))).toBe(0);
    // A membership change and what follows it wait; so does everything with a snapshot.
    expect(stablyCommitted(rd([e(4), e(5, "conf_change"), e(6)], []))).toBe(1);
    expect(stablyCommitted(rd([e(4)], [], true))).toBe(0);
    expect(stablyCommitted(rd([], [e(4)]))).toBe(0);
  });
});

describe("takeCommitted: entries committed while a Ready is out", () => {
  /** Persists a Ready the test drives by hand on `id` (as the network's drain would). */
  const persist = (nt: Network, id: number, rd: Ready): void => {
    nt.node(id).storage.apply({
      ...(rd.hardState ? { hardState: rd.hardState } : {}),
      entries: rd.entries,
    });
    nt.node(id).storage.sync();
  };
  const data = (es: readonly Entry[]) => es.map((e) => new TextDecoder().decode(e.data));

  it("hands out what the leader holds once a follower's answer commits it, once, and never in a later Ready", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    const r = nt.raft(1);
    r.propose(bytes("a"));
    const rdA = r.ready();
    persist(nt, 1, rdA);
    r.advance(); // "a" is durable here; its appends are still on their way
    expect(r.takeCommitted()).toEqual([]); // no Ready out: the next Ready holds what commits
    r.propose(bytes("b"));
    const rdB = r.ready(); // "b" is being written
    nt.send(...rdA.messages, ...rdB.messages); // both reach the followers, who answer
    expect(r.status().commit).toBe(rdB.entries[0]?.index); // "b" committed by the followers
    expect(data(r.takeCommitted())).toEqual(["a"]); // not "b": not durable here yet
    expect(r.takeCommitted()).toEqual([]);
    persist(nt, 1, rdB);
    r.advance();
    expect(r.status().applied).toBe(rdA.entries[0]?.index);
    const next = r.ready();
    expect(data(next.committedEntries)).toEqual(["b"]);
    expect(r.takeCommitted()).toEqual([]); // "b" is the outstanding Ready's
    r.advance();
  });

  it("hands out nothing while the outstanding Ready's committed entries wait for its write", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    const r = nt.raft(1);
    r.proposeConfChange({ changes: [{ type: "add_learner", nodeId: 4 }], transition: "auto" });
    const rdC = r.ready();
    persist(nt, 1, rdC);
    r.advance();
    r.propose(bytes("g"));
    const rdG = r.ready();
    nt.send(...rdC.messages); // the change commits while "g" is being written
    expect(r.status().commit).toBe(rdC.entries[0]?.index);
    expect(r.takeCommitted()).toEqual([]); // a membership change waits for a Ready
    persist(nt, 1, rdG);
    r.advance();
    const rdX = r.ready(); // applies the change only after its write
    expect(rdX.committedEntries.map((e) => e.type)).toEqual(["conf_change"]);
    expect(stablyCommitted(rdX)).toBe(0);
    nt.send(...rdG.messages); // "g", durable here, commits
    expect(r.status().commit).toBe(rdG.entries[0]?.index);
    expect(r.takeCommitted()).toEqual([]); // it would overtake the membership change
    persist(nt, 1, rdX);
    r.advance();
    expect(data(r.ready().committedEntries)).toEqual(["g"]);
    r.advance();
  });
});
