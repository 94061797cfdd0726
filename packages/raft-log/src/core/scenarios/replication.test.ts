import { describe, expect, it } from "vitest";
import type { Message } from "../message.js";
import { isRaftError } from "../raft-error.js";
import {
  electLeader,
  ents,
  type Harness,
  logTerms,
  msg,
  newHarness,
  take,
} from "../testing/harness.js";
import { appliedData, bytes, Network } from "../testing/network.js";
import { TestStorage } from "../testing/test-storage.js";

const noPre = { preVote: false, checkQuorum: false } as const;

function follower(terms: number[], term: number, commit = 0): Harness {
  const s = TestStorage.withTerms(terms, [1, 2, 3]);
  s.hard = { term, vote: 0, commit };
  s.sync();
  return newHarness(1, [1, 2, 3], { storage: s, ...noPre });
}

describe("log replication (§5.3)", () => {
  it("scenario 14: the leader appends and persists first, then sends with the right prev", () => {
    const h = newHarness(1, [1, 2, 3], noPre);
    electLeader(h);
    for (const id of [2, 3])
      h.raft.step(msg({ type: "app_resp", from: id, to: 1, term: 1, index: 1 }));
    take(h);
    h.raft.propose(bytes("some data"));
    const rd = h.raft.ready();
    expect(rd.entries).toEqual([{ index: 2, term: 1, type: "normal", data: bytes("some data") }]);
    expect(rd.mustSync).toBe(true);
    const apps = rd.messages.filter((m) => m.type === "app" && m.entries.length > 0);
    expect(apps.map((m) => m.to).sort()).toEqual([2, 3]);
    for (const m of apps) {
      expect(m).toMatchObject({ index: 1, logTerm: 1 });
      expect(m.entries.map((e) => e.index)).toEqual([2]);
    }
    h.raft.advance();
  });

  it("scenario 15: an entry acked by a majority commits and is applied; commit travels on", () => {
    const h = newHarness(1, [1, 2, 3, 4, 5], noPre);
    electLeader(h);
    // ack the no-op from everyone
    for (const id of [2, 3, 4, 5])
      h.raft.step(msg({ type: "app_resp", from: id, to: 1, term: 1, index: 1 }));
    take(h);
    h.raft.propose(bytes("x"));
    take(h);
    h.raft.step(msg({ type: "app_resp", from: 2, to: 1, term: 1, index: 2 }));
    take(h);
    expect(h.raft.status().commit).toBe(1); // leader + 1 follower: not committed
    h.raft.step(msg({ type: "app_resp", from: 3, to: 1, term: 1, index: 2 }));
    const out = take(h);
    expect(h.raft.status().commit).toBe(2);
    expect(h.applied.map((e) => e.index)).toEqual([1, 2]);
    expect(out.filter((m) => m.type === "app").every((m) => m.commit === 2)).toBe(true);
    h.raft.tick();
    const hb = take(h).filter((m) => m.type === "heartbeat");
    expect(hb.find((m) => m.to === 2)?.commit).toBe(2);
    expect(hb.find((m) => m.to === 4)?.commit).toBe(1); // min(match, commit)
  });

  it("scenario 16: committing N commits every earlier entry, older terms included, in order", () => {
    const s = TestStorage.withTerms([1, 2], [1, 2, 3]);
    s.hard = { term: 2, vote: 0, commit: 0 };
    s.sync();
    const h = newHarness(1, [1, 2, 3], { storage: s, ...noPre });
    electLeader(h);
    expect(h.raft.term).toBe(3);
    h.raft.propose(bytes("p"));
    take(h);
    h.raft.step(msg({ type: "app_resp", from: 2, to: 1, term: 3, index: 4 }));
    take(h);
    expect(h.raft.status().commit).toBe(4);
    expect(h.applied.map((e) => [e.index, e.term])).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
      [4, 3],
    ]);
  });

  it("scenario 17: follower commit = min(leaderCommit, last new entry)", () => {
    const cases: Array<[Partial<Message>, number, number, boolean]> = [
      [{ logTerm: 3, index: 2, commit: 3 }, 2, 0, true],
      [{ logTerm: 3, index: 3, commit: 3 }, 2, 0, true],
      [{ logTerm: 1, index: 1, commit: 1 }, 2, 1, false],
      [{ logTerm: 0, index: 0, commit: 1, entries: ents(1, [2]) }, 1, 1, false],
      [{ logTerm: 2, index: 2, commit: 3, entries: ents(3, [2, 2]) }, 4, 3, false],
      [{ logTerm: 2, index: 2, commit: 4, entries: ents(3, [2]) }, 3, 3, false],
      [{ logTerm: 1, index: 1, commit: 4, entries: ents(2, [2]) }, 2, 2, false],
      [{ logTerm: 1, index: 1, commit: 3 }, 2, 1, false],
      [{ logTerm: 1, index: 1, commit: 3, entries: ents(2, [2]) }, 2, 2, false],
      [{ logTerm: 2, index: 2, commit: 3 }, 2, 2, false],
      [{ logTerm: 2, index: 2, commit: 4 }, 2, 2, false],
    ];
    for (const [m, wIndex, wCommit, wReject] of cases) {
      const h = follower([1, 2], 2);
      h.raft.step(msg({ type: "app", from: 2, to: 1, term: 2, ...m }));
      const out = take(h);
      expect(h.raft.status().lastIndex, JSON.stringify(m)).toBe(wIndex);
      expect(h.raft.status().commit).toBe(wCommit);
      expect(out[out.length - 1]).toMatchObject({ type: "app_resp", reject: wReject });
    }
  });

  it("scenario 18: consistency check rejects with a conflict hint", () => {
    const h = follower([1, 2, 2, 5], 5);
    h.raft.step(msg({ type: "app", from: 2, to: 1, term: 5, index: 4, logTerm: 4 }));
    expect(take(h)).toEqual([
      expect.objectContaining({
        type: "app_resp",
        reject: true,
        index: 4,
        rejectHint: 3,
        logTerm: 2,
      }),
    ]);
    h.raft.step(msg({ type: "app", from: 2, to: 1, term: 5, index: 7, logTerm: 5 }));
    expect(take(h)).toEqual([
      expect.objectContaining({
        type: "app_resp",
        reject: true,
        index: 7,
        rejectHint: 4,
        logTerm: 5,
      }),
    ]);
    expect(h.raft.status().lastIndex).toBe(4);
  });

  it("scenario 19: truncate only on a real conflict; an old shorter append cuts nothing", () => {
    const cases: Array<[number, number, number[], number[]]> = [
      [2, 2, [3], [1, 2, 3]],
      [1, 1, [3, 4], [1, 3, 4]],
      [0, 0, [1], [1, 2]],
      [0, 0, [3], [3]],
      [2, 2, [], [1, 2]],
    ];
    for (const [index, logTerm, terms, want] of cases) {
      const h = follower([1, 2], 2);
      h.raft.step(
        msg({
          type: "app",
          from: 2,
          to: 1,
          term: 4,
          index,
          logTerm,
          entries: ents(index + 1, terms),
        }),
      );
      take(h);
      expect(logTerms(h.raft), `${index}/${terms}`).toEqual(want);
      expect(h.storage.lastIndex()).toBe(want.length);
    }
    // Re-delivering an older, shorter, matching append must not cut the longer log.
    const h = follower([1, 1, 1, 1, 1], 1);
    h.raft.step(
      msg({ type: "app", from: 2, to: 1, term: 1, index: 1, logTerm: 1, entries: ents(2, [1]) }),
    );
    const out = take(h);
    expect(logTerms(h.raft)).toEqual([1, 1, 1, 1, 1]);
    expect(out).toEqual([expect.objectContaining({ type: "app_resp", reject: false, index: 2 })]);
  });

  it("scenario 20: Figure 7 — a term-8 leader repairs followers (a)–(f) to exactly its log", () => {
    const leaderLog = [1, 1, 1, 4, 4, 5, 5, 6, 6, 6];
    const followers: Record<string, number[]> = {
      a: [1, 1, 1, 4, 4, 5, 5, 6, 6],
      b: [1, 1, 1, 4],
      c: [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 6],
      d: [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7],
      e: [1, 1, 1, 4, 4, 4, 4],
      f: [1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3],
    };
    for (const [name, flog] of Object.entries(followers)) {
      const nt = new Network([1, 2, 3], {
        raft: noPre,
        storage: (id) => {
          if (id === 1) {
            const s = TestStorage.withTerms(leaderLog, [1, 2, 3]);
            s.hard = { term: 7, vote: 0, commit: leaderLog.length };
            s.sync();
            return s;
          }
          if (id === 2) {
            const s = TestStorage.withTerms(flog, [1, 2, 3]);
            s.hard = { term: 6, vote: 0, commit: 0 };
            s.sync();
            return s;
          }
          return new TestStorage({ voters: [1, 2, 3] });
        },
      });
      nt.filter = (m) => m.to !== 3 && m.from !== 3; // node 3 is a black hole
      nt.raft(1).campaign();
      nt.stabilize();
      nt.filter = (m) => m.to !== 3;
      nt.send(msg({ type: "vote_resp", from: 3, to: 1, term: 8 }));
      expect(nt.raft(1).role, name).toBe("leader");
      expect(nt.raft(1).term).toBe(8);
      nt.propose(1, "new");
      expect(logTerms(nt.raft(2)), name).toEqual(logTerms(nt.raft(1)));
      expect(logTerms(nt.raft(1))).toEqual([...leaderLog, 8, 8]);
      expect(nt.raft(2).status().commit).toBe(12);
    }
  });

  it("scenario 21: fast back-off repairs 1,000 divergent entries over k terms in ≤ k+1 rejections", () => {
    for (const k of [1, 2, 5, 10]) {
      const per = Math.floor(1000 / k);
      const fTerms = Array.from({ length: 10 }, () => 1);
      const lTerms = Array.from({ length: 10 }, () => 1);
      for (let j = 0; j < k; j++) {
        for (let i = 0; i < per; i++) fTerms.push(2 * j + 2); // even terms on the follower
        for (let i = 0; i < 3; i++) lTerms.push(2 * j + 3); // odd terms on the leader
      }
      const ls = TestStorage.withTerms(lTerms, [1, 2, 3]);
      ls.hard = { term: 2 * k + 5, vote: 0, commit: 10 };
      ls.sync();
      const fs = TestStorage.withTerms(fTerms, [1, 2, 3]);
      fs.hard = { term: 2 * k + 5, vote: 0, commit: 10 };
      fs.sync();
      const leader = newHarness(1, [1, 2, 3], { storage: ls, ...noPre });
      const f = newHarness(2, [1, 2, 3], { storage: fs, ...noPre });
      let queue = electLeader(leader).filter((m) => m.to === 2);
      let rejections = 0;
      for (let round = 0; round < 5000 && queue.length > 0; round++) {
        const m = queue.shift() as Message;
        if (m.to === 2) {
          f.raft.step(m);
          queue.push(...take(f));
        } else if (m.to === 1) {
          if (m.type === "app_resp" && m.reject) rejections++;
          leader.raft.step(m);
          queue.push(...take(leader).filter((x) => x.to === 2));
        }
        queue = queue.filter((x) => x.to === 1 || x.to === 2);
      }
      expect(rejections, `k=${k}`).toBeLessThanOrEqual(k + 1);
      expect(rejections).toBeGreaterThan(0);
      expect(logTerms(f.raft)).toEqual(logTerms(leader.raft));
    }
  });

  it("scenario 22: reordered and duplicated messages never shorten logs, regress match, or commit without quorum", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    const captured: Message[] = [];
    const prevFilter = (m: Message): boolean => {
      captured.push(m);
      return true;
    };
    nt.filter = prevFilter;
    for (let i = 0; i < 5; i++) nt.propose(1, `e${i}`);
    const last2 = nt.raft(2).status().lastIndex;
    const match = new Map(nt.raft(1).status().match);
    const commit = nt.raft(1).status().commit;
    // replay everything in reverse, twice
    const replay = [...captured].reverse();
    nt.filter = undefined;
    nt.send(...replay, ...replay);
    expect(nt.raft(2).status().lastIndex).toBe(last2);
    for (const [id, m] of nt.raft(1).status().match)
      expect(m).toBeGreaterThanOrEqual(match.get(id) ?? 0);
    expect(nt.raft(1).status().commit).toBe(commit);
    // cut the leader off, propose, and replay old acks: nothing new may commit
    nt.isolate(1);
    nt.propose(1, "lonely");
    nt.recover();
    nt.filter = (m) => m.type === "app_resp" && m.to === 1; // only stale acks get through
    nt.send(...captured.filter((m) => m.type === "app_resp"));
    expect(nt.raft(1).status().commit).toBe(commit);
    expect(nt.raft(1).status().lastIndex).toBe(commit + 1);
  });

  it("scenario 23: proposals away from the leader are forwarded, or rejected with a hint, or fail fast", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    nt.propose(2, "via-follower");
    for (const id of [1, 2, 3]) expect(appliedData(nt.node(id))).toEqual(["via-follower"]);

    const nf = new Network([1, 2, 3], { raft: { disableProposalForwarding: true } });
    nf.campaign(1);
    let err: unknown;
    try {
      nf.raft(2).propose(bytes("x"));
    } catch (e) {
      err = e;
    }
    expect(isRaftError(err, "not_leader")).toBe(true);
    expect((err as { leaderHint: number }).leaderHint).toBe(1);

    const lonely = new Network([1, 2, 3]);
    expect(() => lonely.raft(2).propose(bytes("x"))).toThrow(/\[no_leader\]/);
    lonely.isolate(1);
    lonely.raft(1).campaign();
    lonely.stabilize();
    expect(lonely.raft(1).role).toBe("pre_candidate");
    expect(() => lonely.raft(1).propose(bytes("x"))).toThrow(/\[no_leader\]/);
  });
});
