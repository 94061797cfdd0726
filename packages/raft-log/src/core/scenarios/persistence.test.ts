import { describe, expect, it } from "vitest";
import { createPrng } from "../prng.js";
import { isRaftError } from "../raft-error.js";
import { electLeader, ents, msg, newHarness, take } from "../testing/harness.js";
import { bytes, Network } from "../testing/network.js";
import { TestStorage } from "../testing/test-storage.js";

describe("crashes, timing and persistence (§5.5, §5.6)", () => {
  it("scenario 29: persist before replying; a crash before fsync loses no acked entry or promised vote", () => {
    // Follower: the ack travels in the same Ready as the entries it acknowledges.
    const f = newHarness(2, [1, 2, 3]);
    f.raft.step(
      msg({ type: "app", from: 1, to: 2, term: 1, index: 0, logTerm: 0, entries: ents(1, [1, 1]) }),
    );
    const rd = f.raft.ready();
    expect(rd.entries.map((e) => e.index)).toEqual([1, 2]);
    expect(rd.mustSync).toBe(true);
    expect(rd.messages).toEqual([expect.objectContaining({ type: "app_resp", index: 2 })]);
    // Crash between write and fsync: the write is lost, and so is the unsent ack.
    f.storage.apply({ entries: rd.entries });
    f.storage.crash();
    const nt = new Network([1, 2, 3]);
    nt.node(2).storage = f.storage;
    const restarted = nt.restart(2);
    expect(restarted.raft.status().lastIndex).toBe(0);

    // Voter: the grant travels with the hard state holding the vote.
    const v = newHarness(3, [1, 2, 3]);
    v.raft.step(msg({ type: "vote", from: 1, to: 3, term: 4, index: 0, logTerm: 0 }));
    const vr = v.raft.ready();
    expect(vr.hardState).toEqual({ term: 4, vote: 1, commit: 0 });
    expect(vr.mustSync).toBe(true);
    expect(vr.messages).toEqual([expect.objectContaining({ type: "vote_resp", reject: false })]);
    v.raft.advance();

    // Simulated run: node 2 crashes between write and fsync on every 3rd Ready; invariants hold.
    const sim = new Network([1, 2, 3]);
    sim.campaign(1);
    const node2 = sim.node(2);
    const origDrain = sim.drain.bind(sim);
    let count = 0;
    sim.drain = (id: number) => {
      if (id !== 2 || ++count % 3 !== 0 || !sim.node(2).raft.hasReady()) return origDrain(id);
      const n = sim.node(2);
      const r = n.raft.ready();
      n.storage.apply({ ...(r.hardState ? { hardState: r.hardState } : {}), entries: r.entries });
      sim.restart(2); // crash before sync: write lost, messages never sent
      return [];
    };
    for (let i = 0; i < 10; i++) {
      sim.propose(1, `v${i}`);
      sim.tickAll();
    }
    sim.drain = origDrain;
    sim.tickAll(5);
    const acked = sim.raft(1).status().match.get(2) ?? 0;
    expect(sim.raft(2).status().lastIndex).toBeGreaterThanOrEqual(acked);
    expect(sim.raft(1).status().commit).toBe(11);
    void node2;

    // Leader: sends while writing, but counts itself only after its own fsync (advance).
    const l = newHarness(1, [1, 2, 3], { preVote: false, checkQuorum: false });
    electLeader(l);
    for (const id of [2, 3])
      l.raft.step(msg({ type: "app_resp", from: id, to: 1, term: 1, index: 1 }));
    take(l);
    l.raft.propose(bytes("p"));
    const lr = l.raft.ready();
    expect(lr.messages.some((m) => m.type === "app" && m.entries.length === 1)).toBe(true);
    l.raft.step(msg({ type: "app_resp", from: 2, to: 1, term: 1, index: 2 }));
    // 2 of 3 have it in memory, but only the follower's copy is durable: no commit yet.
    expect(l.raft.status().commit).toBe(1);
    l.storage.apply({ entries: lr.entries });
    l.storage.sync();
    l.raft.advance();
    expect(l.raft.status().commit).toBe(2);
  });

  it("a follower whose storage lost acknowledged entries refuses the leader's heartbeat (log_lost)", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    for (let i = 0; i < 5; i++) nt.propose(1, `v${i}`);
    const acked = nt.raft(1).status().match.get(2) ?? 0;
    expect(acked).toBeGreaterThanOrEqual(6);
    // Node 2's disk is replaced: it restarts with an empty log, as a fresh member would.
    nt.node(2).storage = new TestStorage({ voters: [1, 2, 3] });
    const wiped = nt.restart(2);
    const before = wiped.raft.status();
    let refused: unknown;
    try {
      nt.tickAll(2); // the leader's heartbeats reach it
    } catch (err) {
      refused = err;
    }
    expect(isRaftError(refused) && refused.code).toBe("log_lost");
    expect(String((refused as Error).message)).toMatch(
      new RegExp(
        `log ends at index 0, but its leader \\(node 1\\) counts it as holding entries up to ${acked}`,
      ),
    );
    // No commit index it cannot back was taken from the heartbeat.
    expect(wiped.raft.status().commit).toBe(before.commit);
    // A heartbeat it can back is taken as before.
    const fresh = newHarness(2, [1, 2, 3]);
    fresh.raft.step(
      msg({ type: "app", from: 1, to: 2, term: 1, index: 0, logTerm: 0, entries: ents(1, [1, 1]) }),
    );
    take(fresh);
    fresh.raft.step(msg({ type: "heartbeat", from: 1, to: 2, term: 1, commit: 2 }));
    expect(fresh.raft.status().commit).toBe(2);
  });

  it("scenario 30: retried RequestVote and AppendEntries give the same answer, no duplicates", () => {
    const h = newHarness(1, [1, 2, 3]);
    const vote = msg({ type: "vote", from: 2, to: 1, term: 3, index: 0, logTerm: 0 });
    h.raft.step(vote);
    const a = take(h);
    h.raft.step(vote);
    const b = take(h);
    expect(b).toEqual(a);
    expect(h.raft.vote).toBe(2);
    const app = msg({
      type: "app",
      from: 2,
      to: 1,
      term: 3,
      index: 0,
      logTerm: 0,
      entries: ents(1, [3, 3]),
      commit: 1,
    });
    h.raft.step(app);
    const c = take(h);
    h.raft.step(app);
    const d = take(h);
    // Same answer (success); the ack index may only grow (here: the commit index covers it).
    expect(d.map((m) => [m.type, m.to, m.reject])).toEqual(c.map((m) => [m.type, m.to, m.reject]));
    expect(d[0]?.index).toBeGreaterThanOrEqual(1);
    expect(h.raft.status().lastIndex).toBe(2);
    expect(h.storage.ents.length).toBe(2);
  });

  it("scenario 31: liveness — after faults heal, a leader is elected and a proposal commits within 10 election timeouts", () => {
    const T = 10;
    for (let seed = 1; seed <= 30; seed++) {
      const rnd = createPrng(seed);
      const nt = new Network([1, 2, 3, 4, 5], { seed, raft: { electionTick: T } });
      // fault phase
      for (let step = 0; step < 60; step++) {
        if (step % 15 === 0) {
          nt.recover();
          nt.filter = (): boolean => rnd() > 0.3;
          nt.isolate(1 + Math.floor(rnd() * 5));
        }
        nt.tickAll();
      }
      nt.recover();
      // heal phase: count ticks until a proposal made at the first leader commits
      let ticks = 0;
      let target = 0;
      let done = false;
      while (ticks < 10 * T && !done) {
        nt.tickAll();
        ticks++;
        const lead = nt.leaders()[0];
        if (lead !== undefined && target === 0) {
          try {
            nt.propose(lead, `live-${seed}`);
            target = nt.raft(lead).status().lastIndex;
          } catch (e) {
            if (!isRaftError(e)) throw e;
          }
        }
        if (target > 0) {
          done = [...nt.nodes.values()].some(
            (n) => n.raft.role === "leader" && n.raft.status().commit >= target,
          );
        }
      }
      expect(done, `seed ${seed}`).toBe(true);
    }
  }, 30_000);
});
