import { describe, expect, it } from "vitest";
import type { ConfChange } from "../../types.js";
import { Network } from "../testing/network.js";

/** Appends delivered so far that carried no entries (a commit index alone). */
function emptyAppends(nt: Network): number {
  return nt.log.filter((m) => m.type === "app" && m.entries.length === 0).length;
}

function commitOf(nt: Network, id: number): number {
  return nt.raft(id).status().commit;
}

describe("deferCommitAppends", () => {
  it("etcd's default: a commit sends every follower an empty append at once", () => {
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    const before = emptyAppends(nt);
    nt.propose(1, "a");
    expect(emptyAppends(nt)).toBeGreaterThan(before);
    expect(nt.raft(1).hasUnsentCommit()).toBe(false);
    for (const id of [2, 3]) expect(commitOf(nt, id)).toBe(commitOf(nt, 1));
  });

  it("deferred: no empty append; the followers learn the index from sendCommit", () => {
    const nt = new Network([1, 2, 3], { raft: { deferCommitAppends: true } });
    nt.campaign(1);
    nt.raft(1).sendCommit();
    nt.stabilize();
    const before = emptyAppends(nt);
    nt.propose(1, "a");
    const leaderCommit = commitOf(nt, 1);
    expect(nt.raft(1).status().lastIndex).toBe(leaderCommit);
    expect(emptyAppends(nt)).toBe(before);
    for (const id of [2, 3]) expect(commitOf(nt, id)).toBeLessThan(leaderCommit);
    expect(nt.raft(1).hasUnsentCommit()).toBe(true);

    nt.raft(1).sendCommit();
    nt.stabilize();
    expect(emptyAppends(nt)).toBe(before + 2);
    expect(nt.raft(1).hasUnsentCommit()).toBe(false);
    for (const id of [2, 3]) {
      expect(commitOf(nt, id)).toBe(leaderCommit);
      expect(nt.node(id).applied.map((e) => new TextDecoder().decode(e.data))).toContain("a");
    }
    // Nothing new to tell: a second call sends nothing.
    nt.raft(1).sendCommit();
    nt.stabilize();
    expect(emptyAppends(nt)).toBe(before + 2);
  });

  it("deferred: the next batch's appends carry the index, so nothing is left to send", () => {
    const nt = new Network([1, 2, 3], { raft: { deferCommitAppends: true } });
    nt.campaign(1);
    nt.propose(1, "a");
    const first = commitOf(nt, 1);
    const before = emptyAppends(nt);
    nt.propose(1, "b");
    // "b"'s appends told the followers that "a" is committed; "b"'s own commit is pending.
    for (const id of [2, 3]) expect(commitOf(nt, id)).toBe(first);
    expect(emptyAppends(nt)).toBe(before);
    expect(nt.raft(1).hasUnsentCommit()).toBe(true);
  });

  it("deferred: a heartbeat carries the index too", () => {
    const nt = new Network([1, 2, 3], { raft: { deferCommitAppends: true } });
    nt.campaign(1);
    nt.propose(1, "a");
    expect(nt.raft(1).hasUnsentCommit()).toBe(true);
    nt.tick(1); // heartbeatTick 1
    expect(nt.raft(1).hasUnsentCommit()).toBe(false);
    for (const id of [2, 3]) expect(commitOf(nt, id)).toBe(commitOf(nt, 1));
  });

  it("a cut-off follower is owed nothing once sent the index; it catches up after healing; a new leader starts afresh", () => {
    const nt = new Network([1, 2, 3], { raft: { deferCommitAppends: true } });
    nt.campaign(1);
    nt.cutLink(1, 3);
    nt.cutLink(3, 1);
    nt.propose(1, "a");
    // The notice to 3 is lost on the cut link; the leader does not send it again (a heartbeat
    // or the next append will carry the index).
    nt.raft(1).sendCommit();
    nt.stabilize();
    expect(nt.raft(1).hasUnsentCommit()).toBe(false);
    expect(commitOf(nt, 3)).toBeLessThan(commitOf(nt, 1));
    nt.recover();
    nt.propose(1, "b");
    nt.raft(1).sendCommit();
    nt.stabilize();
    for (const id of [2, 3]) expect(commitOf(nt, id)).toBe(commitOf(nt, 1));
    // Leadership moves: the new leader's own commit of its first entry is owed again.
    nt.raft(1).transferLeader(2);
    nt.stabilize();
    expect(nt.raft(2).role).toBe("leader");
    nt.raft(2).sendCommit();
    nt.stabilize();
    for (const id of [1, 3]) expect(commitOf(nt, id)).toBe(commitOf(nt, 2));
    expect(nt.raft(1).hasUnsentCommit()).toBe(false);
  });

  it("deferred: a follower a conf change removes is told of its commit before it is dropped", () => {
    const nt = new Network([1, 2, 3], { raft: { deferCommitAppends: true } });
    nt.campaign(1);
    const remove: ConfChange = { changes: [{ type: "remove", nodeId: 3 }], transition: "auto" };
    nt.raft(1).proposeConfChange(remove);
    const removal = nt.raft(1).status().lastIndex;
    nt.stabilize();
    // No sendCommit, no tick: the leader sends 3 nothing once the removal applies, so only
    // the append sent as it applies tells 3 that its removal is committed.
    expect(nt.raft(1).status().confState.voters).toEqual([1, 2]);
    expect(commitOf(nt, 3)).toBeGreaterThanOrEqual(removal);
    expect(nt.raft(3).status().confState.voters).toEqual([1, 2]);
  });
});
