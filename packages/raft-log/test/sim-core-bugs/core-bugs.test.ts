import { describe, expect, it } from "vitest";
import type { Message } from "../../src/core/message.js";
import { createMessage } from "../../src/core/message.js";
import { createPrng } from "../../src/core/prng.js";
import { createRaft, type Ready } from "../../src/core/raft.js";
import { appliedData, bytes, Network } from "../../src/core/testing/network.js";
import { TestStorage } from "../../src/core/testing/test-storage.js";
import { createMemoryLogStore } from "../../src/storage/memory-log-store.js";
import type { ConfState, Entry } from "../../src/types.js";

// Regression tests for the core bugs the deterministic simulator found (src/sim/README.md,
// "Findings"): each is the minimal reproduction of one bug, named after it, and failed on the
// core before its fix. The Network harness never calls reportUnreachable/reportSnapshot, so
// these also show that liveness does not depend on the transport reporting losses.

const voters = [1, 2, 3];
const ent = (index: number, term: number): Entry => ({
  index,
  term,
  type: "normal",
  data: new Uint8Array([index]),
});

describe("core bugs found by the simulator", () => {
  it("bug C: an acknowledged entry survives a snapshot whose tail was kept (seeds 384, 474)", () => {
    const noop = (): void => {};
    const cs = { voters, learners: [], votersOutgoing: [], learnersNext: [], autoLeave: false };
    const store = createMemoryLogStore({ durability: "manual" });
    store
      .save({
        snapshot: { metadata: { index: 1, term: 1, confState: cs }, data: new Uint8Array(0) },
        entries: [ent(2, 1), ent(3, 1)],
        hardState: { term: 1, vote: 0, commit: 1 },
      })
      .catch(noop);
    store.sync();
    const r = createRaft({ id: 2, storage: store, random: createPrng(1) });
    const app = (prev: number, es: Entry[], commit: number) =>
      createMessage({
        type: "app",
        from: 1,
        to: 2,
        term: 1,
        index: prev,
        logTerm: 1,
        entries: es,
        commit,
      });
    const save = (rd: Ready): void => {
      store
        .save({
          entries: rd.entries,
          ...(rd.hardState ? { hardState: rd.hardState } : {}),
          ...(rd.snapshot ? { snapshot: rd.snapshot } : {}),
        })
        .catch(noop);
    };
    r.step(app(3, [ent(4, 1)], 2));
    const f1 = r.ready(); // entry 4 being written
    save(f1);
    r.step(app(4, [ent(5, 1)], 2)); // entry 5 arrives meanwhile
    r.step(
      createMessage({
        type: "snap",
        from: 1,
        to: 2,
        term: 1,
        snapshot: { metadata: { index: 3, term: 1, confState: cs }, data: new Uint8Array([9]) },
        chunkOffset: 0,
        chunkTotal: 1,
      }),
    ); // matches the log at 3: entries 4 and 5 are kept
    store.sync();
    r.advance(); // entry 4 durable: it leaves the unstable tail, the snapshot is still unstable
    const f2 = r.ready(); // snapshot 3 + entry 5, and the acknowledgement of entry 5
    expect(f2.messages.some((m) => m.type === "app_resp" && !m.reject && m.index === 5)).toBe(true);
    save(f2);
    // A duplicate of the first append arrives while f2 is being written: the log cannot see
    // entry 4 (neither unstable nor, while a snapshot is unstable, in storage), finds a
    // "conflict" at 4 and truncates the acknowledged entry 5.
    r.step(app(3, [ent(4, 1)], 3));
    store.sync();
    r.advance();
    expect(r.status().lastIndex).toBe(5); // bug: 4
  });

  it("bug A: a follower whose whole in-flight window was lost is retried", () => {
    const nt = new Network(voters, { raft: { maxInflightMsgs: 1 } });
    nt.campaign(1);
    let dropped = false;
    nt.filter = (m) => {
      if (!dropped && m.type === "app" && m.to === 3 && m.entries.length > 0) {
        dropped = true;
        return false;
      }
      return true;
    };
    nt.propose(1, "x");
    expect(dropped).toBe(true);
    nt.recover();
    nt.tickAll(50); // 50 heartbeat rounds, no message lost
    expect(nt.raft(3).status().lastIndex).toBe(nt.raft(1).status().lastIndex); // bug: stuck
  });
  it("bug C: commit past the snapshot stays within the visible log (seed 6940)", () => {
    const noop = (): void => {};
    const cs = { voters, learners: [], votersOutgoing: [], learnersNext: [], autoLeave: false };
    const store = createMemoryLogStore({ durability: "manual" });
    store
      .save({
        snapshot: { metadata: { index: 1, term: 1, confState: cs }, data: new Uint8Array(0) },
        entries: [ent(2, 1), ent(3, 1)],
        hardState: { term: 1, vote: 0, commit: 1 },
      })
      .catch(noop);
    store.sync();
    const r = createRaft({ id: 2, storage: store, random: createPrng(1) });
    const save = (rd: Ready): void => {
      store
        .save({
          entries: rd.entries,
          ...(rd.hardState ? { hardState: rd.hardState } : {}),
          ...(rd.snapshot ? { snapshot: rd.snapshot } : {}),
        })
        .catch(noop);
    };
    const app = (prev: number, es: Entry[], commit: number): Message =>
      createMessage({
        type: "app",
        from: 1,
        to: 2,
        term: 1,
        index: prev,
        logTerm: 1,
        entries: es,
        commit,
      });
    r.step(app(3, [ent(4, 1), ent(5, 1)], 2));
    save(r.ready()); // entries 4, 5 being written
    r.step(
      createMessage({
        type: "snap",
        from: 1,
        to: 2,
        term: 1,
        snapshot: { metadata: { index: 3, term: 1, confState: cs }, data: new Uint8Array([9]) },
        chunkOffset: 0,
        chunkTotal: 1,
      }),
    );
    store.sync();
    r.advance(); // 4 and 5 durable while the snapshot is unstable
    expect(r.status().lastIndex).toBe(5); // bug: 3
    r.step(createMessage({ type: "heartbeat", from: 1, to: 2, term: 1, commit: 5 }));
    expect(r.status().commit).toBe(5); // bug: capped at the snapshot index
    const rd = r.ready(); // bug: threw "[unavailable] index 5 > last 3"
    expect(rd.committedEntries.map((e) => e.index)).toEqual([4, 5]);
  });

  it("bug B: a leader that compacted past the snapshot it is sending moves on to its current one", () => {
    const nt = new Network(voters, { raft: { snapshotChunkSize: 4 } });
    const compact = (ids: number[]): void => {
      for (const id of ids) {
        const st = nt.raft(id).status();
        nt.node(id).storage.compact(
          st.applied,
          bytes(`the state machine at index ${st.applied}`),
          st.confState,
        );
      }
    };
    nt.campaign(1);
    nt.isolate(3);
    for (let i = 0; i < 3; i++) nt.propose(1, `a${i}`);
    compact([1, 2]);
    const first = nt.node(1).storage.snapshot().metadata.index;
    nt.recover();
    // 3 installs the first snapshot, but its answer is lost (silently).
    nt.filter = (m) => !(m.type === "app_resp" && m.from === 3 && !m.reject && m.index >= first);
    nt.tick(1);
    expect(nt.raft(3).status().firstIndex).toBe(first + 1);
    expect(nt.raft(1).trk.progress.get(3)?.state).toBe("snapshot");
    // Meanwhile the leader moves on and compacts past that snapshot.
    nt.isolate(3);
    for (let i = 0; i < 3; i++) nt.propose(1, `b${i}`);
    compact([1, 2]);
    expect(nt.node(1).storage.snapshot().metadata.index).toBeGreaterThan(first);
    nt.recover();
    nt.tickAll(10);
    const pr = nt.raft(1).trk.progress.get(3);
    expect(pr?.state).toBe("replicate"); // bug: stuck in snapshot state, resending the old one
    expect(nt.raft(3).status().lastIndex).toBe(nt.raft(1).status().lastIndex);
    nt.propose(1, "after");
    expect(appliedData(nt.node(3))).toContain("after");
  });

  it("bug B: duplicated or reordered chunk answers never start a second chunk chain", () => {
    const nt = new Network(voters, { raft: { snapshotChunkSize: 1 } });
    nt.campaign(1);
    nt.isolate(3);
    for (let i = 0; i < 3; i++) nt.propose(1, `a${i}`);
    for (const id of [1, 2]) {
      const st = nt.raft(id).status();
      nt.node(id).storage.compact(
        st.applied,
        bytes(`the state machine at index ${st.applied}`),
        st.confState,
      );
    }
    const leader = nt.raft(1);
    const total = nt.node(1).storage.snapshot().data.byteLength;
    expect(total).toBeGreaterThan(8);
    // Drive the transfer by hand: nothing reaches 3, the leader only sees the answers below.
    const pr = leader.trk.progress.get(3);
    const rejected = (pr?.next ?? 1) - 1;
    nt.drain(1);
    leader.step(
      createMessage({ type: "app_resp", from: 3, to: 1, term: 1, index: rejected, reject: true }),
    );
    expect(pr?.state).toBe("snapshot");
    const snaps = (): Message[] => nt.drain(1).filter((m) => m.type === "snap");
    expect(snaps().map((m) => m.chunkOffset)).toEqual([0, 1, 2, 3]); // one window
    const pending = pr?.pendingSnapshot ?? 0;
    const ack = (off: number): Message =>
      createMessage({
        type: "snap_resp",
        from: 3,
        to: 1,
        term: 1,
        index: pending,
        chunkOffset: off,
      });
    leader.step(ack(1));
    expect(snaps().map((m) => m.chunkOffset)).toEqual([4]);
    leader.step(ack(1)); // duplicate answer
    leader.step(ack(1));
    expect(snaps()).toEqual([]); // bug: every answer sent another chunk
    const hb = createMessage({ type: "heartbeat_resp", from: 3, to: 1, term: 1 });
    leader.step(hb); // the transfer made progress this round: no resend
    expect(snaps()).toEqual([]); // bug: every heartbeat answer started another chain
    leader.step(hb); // idle for a whole round: resend the window once
    expect(snaps().map((m) => m.chunkOffset)).toEqual([1, 2, 3, 4]);
  });

  it("bug D: a follower installs a snapshot that predates the change adding it", () => {
    const nt = new Network(voters);
    nt.campaign(1);
    for (let i = 0; i < 3; i++) nt.propose(1, `a${i}`);
    for (const id of voters) {
      const st = nt.raft(id).status();
      nt.node(id).storage.compact(
        st.applied,
        bytes(`the state machine at index ${st.applied}`),
        st.confState,
      );
    }
    // The only snapshot the leader has does not include 4.
    nt.add(4);
    nt.raft(1).proposeConfChange({
      changes: [{ type: "add_learner", nodeId: 4 }],
      transition: "auto",
    });
    nt.stabilize();
    nt.tickAll(5);
    expect(nt.node(1).storage.snapshot().metadata.confState.learners).toEqual([]);
    expect(nt.raft(4).status().lastIndex).toBe(nt.raft(1).status().lastIndex); // bug: 0
    expect(nt.raft(4).status().confState.learners).toEqual([4]);
    nt.propose(1, "after");
    expect(appliedData(nt.node(4))).toContain("after");
  });

  it("bug E: a leader removed by leaving a joint configuration leads until the others know", () => {
    // C_old {1,2,3} -> C_new {2,4,5} with 3 demoted to learner; leader 1 is removed.
    const ids = [1, 2, 3, 4, 5];
    const cs: Partial<ConfState> = { voters: [1, 2, 3], learners: [4, 5] };
    const nt = new Network(ids, {
      raft: { maxSizePerMsg: 1 },
      storage: () => new TestStorage(cs),
    });
    nt.campaign(1);
    nt.raft(1).proposeConfChange({
      changes: [
        { type: "remove", nodeId: 1 },
        { type: "add_learner", nodeId: 3 },
        { type: "add_voter", nodeId: 4 },
        { type: "add_voter", nodeId: 5 },
      ],
      transition: "joint_explicit",
    });
    nt.stabilize();
    for (const id of ids) expect(nt.raft(id).status().confState.votersOutgoing).toEqual([1, 2, 3]);
    // Leave the joint configuration; one more entry goes in behind the leave entry.
    const leave = nt.raft(1).status().lastIndex + 1;
    // 2, 4 and 5 get the leave entry, but nothing that tells them it committed, and not the
    // entry behind it; 3 gets everything.
    nt.filter = (m) =>
      !(
        m.from === 1 &&
        [2, 4, 5].includes(m.to) &&
        (m.commit >= leave || m.entries.some((e) => e.index > leave))
      );
    nt.raft(1).proposeConfChange({ changes: [], transition: "auto" });
    nt.raft(1).propose(bytes("behind"));
    nt.stabilize();
    nt.tickAll(3);
    expect(nt.raft(3).status().confState).toMatchObject({ voters: [2, 4, 5], votersOutgoing: [] });
    for (const id of [2, 4, 5])
      expect(nt.raft(id).status().confState.votersOutgoing).toEqual([1, 2, 3]);
    // The removed leader keeps leading (without taking proposals) until they know.
    expect(nt.raft(1).role).toBe("leader"); // bug: it had stepped down
    expect(() => nt.raft(1).propose(bytes("x"))).toThrow(/proposal_dropped/);
    nt.recover();
    // bug: 2, 4 and 5 stayed in the joint configuration; 1 and 3, whose logs are longer,
    // never campaign and refuse their votes, so no leader was ever elected again.
    let leader: number | undefined;
    for (let i = 0; i < 100 && leader === undefined; i++) {
      nt.tickAll();
      leader = nt.leaders().find((id) => [2, 4, 5].includes(id));
    }
    expect(leader).toBeDefined();
    expect(nt.raft(1).role).toBe("follower");
    nt.propose(leader as number, "after");
    for (const id of [2, 4, 5]) {
      expect(nt.raft(id).status().confState).toMatchObject({
        voters: [2, 4, 5],
        votersOutgoing: [],
      });
      expect(appliedData(nt.node(id))).toEqual(["behind", "after"]);
    }
  });
});
