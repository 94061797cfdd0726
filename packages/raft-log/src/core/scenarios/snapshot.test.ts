import { describe, expect, it } from "vitest";
import { type Snapshot, snapshotBytes } from "../../types.js";
import type { Message } from "../message.js";
import { ents, logTerms, msg, newHarness, take } from "../testing/harness.js";
import { Network } from "../testing/network.js";
import { TestStorage } from "../testing/test-storage.js";

function snap(index: number, term: number, voters = [1, 2, 3], learners: number[] = []): Snapshot {
  return {
    metadata: {
      index,
      term,
      confState: { voters, learners, votersOutgoing: [], learnersNext: [], autoLeave: false },
    },
    data: new TextEncoder().encode(`state@${index}`),
  };
}

function snapMsg(s: Snapshot, term: number): Message {
  return msg({
    type: "snap",
    from: 2,
    to: 1,
    term,
    snapshot: { metadata: s.metadata, data: snapshotBytes(s.data) },
    chunkOffset: 0,
    chunkTotal: s.data.byteLength,
  });
}

/**
 * Node 1 leads while node 3 is isolated and 5 entries commit; nodes 1 and 2 then compact
 * their logs without data (as an application with a snapshot source does). Returns the
 * compacted index.
 */
function cutOffBehindCompaction(nt: Network): number {
  nt.campaign(1);
  nt.isolate(3);
  for (let i = 0; i < 5; i++) nt.propose(1, `a${i}`);
  for (const id of [1, 2]) {
    const n = nt.node(id);
    n.storage.compact(n.raft.status().applied, new Uint8Array(0), n.raft.status().confState);
  }
  return nt.node(1).storage.firstIndex() - 1;
}

/** Compacts every node's storage up to its applied index. */
function compactAll(nt: Network, ids: number[]): void {
  for (const id of ids) {
    const n = nt.node(id);
    const applied = n.raft.status().applied;
    n.storage.compact(
      applied,
      new TextEncoder().encode(`state@${applied}`),
      n.raft.status().confState,
    );
  }
}

describe("log compaction and snapshots (§7)", () => {
  it("scenario 38: restoring a snapshot drops covered entries, sets commit/applied and config", () => {
    const h = newHarness(1, [1, 2]);
    h.raft.step(snapMsg(snap(11, 11, [1, 2, 3], [4]), 11));
    const rd = h.raft.ready();
    expect(rd.snapshot?.metadata.index).toBe(11);
    expect(rd.confState).toMatchObject({ voters: [1, 2, 3], learners: [4] });
    h.storage.apply({ ...(rd.snapshot ? { snapshot: rd.snapshot } : {}), entries: rd.entries });
    h.raft.advance();
    take(h);
    const st = h.raft.status();
    expect([st.firstIndex, st.lastIndex, st.commit, st.applied]).toEqual([12, 11, 11, 11]);
    expect(h.raft.entryAt(11)).toBeUndefined();
    expect(h.raft.trk.voterIds()).toEqual([1, 2, 3]);

    // RestoreWithLearner: a learner restored from a snapshot never campaigns.
    const l = newHarness(3, [1, 2]);
    l.raft.step({ ...snapMsg(snap(11, 11, [1, 2], [3]), 11), to: 3 });
    take(l);
    for (let i = 0; i < 50; i++) l.raft.tick();
    expect(l.raft.role).toBe("follower");
    expect(l.raft.trk.progress.get(3)?.isLearner).toBe(true);

    // Entries after the snapshot index that match are kept.
    const s = TestStorage.withTerms([1, 1, 1, 1, 1], [1, 2, 3]);
    s.hard = { term: 1, vote: 0, commit: 0 };
    s.sync();
    const k = newHarness(1, [1, 2, 3], { storage: s });
    k.raft.step(snapMsg(snap(3, 1), 1));
    take(k);
    expect(k.raft.status()).toMatchObject({ firstIndex: 4, lastIndex: 5, commit: 3, applied: 3 });
    expect(logTerms(k.raft)).toEqual([1, 1]);
    expect(k.storage.firstIndex()).toBe(4);
    expect(k.storage.lastIndex()).toBe(5);
  });

  it("scenario 39: a snapshot at or below the commit index is ignored and the reply says so", () => {
    const s = TestStorage.withTerms([1, 1, 1], [1, 2, 3]);
    s.hard = { term: 1, vote: 0, commit: 3 };
    s.sync();
    const h = newHarness(1, [1, 2, 3], { storage: s });
    take(h);
    h.raft.step(snapMsg(snap(2, 1), 1));
    const out = take(h);
    expect(h.readies.filter((r) => r.snapshot !== undefined)).toHaveLength(0);
    expect(out).toEqual([expect.objectContaining({ type: "app_resp", index: 3, reject: false })]);
    expect(h.raft.status()).toMatchObject({ firstIndex: 1, lastIndex: 3, commit: 3 });
  });

  it("scenario 40: snapshots only when needed; slow nodes catch up; chunked installs are all-or-nothing", () => {
    // IgnoreProvidingSnap / ProvideSnap: appends while entries exist, a snapshot only after compaction.
    const nt = new Network([1, 2, 3]);
    nt.campaign(1);
    nt.isolate(3);
    for (let i = 0; i < 5; i++) nt.propose(1, `a${i}`);
    nt.recover();
    nt.tickAll(2);
    expect(nt.log.filter((m) => m.type === "snap")).toHaveLength(0);
    expect(nt.raft(3).status().lastIndex).toBe(nt.raft(1).status().lastIndex);

    // SlowNodeRestore: partitioned across a compaction, catches up by snapshot plus tail.
    nt.isolate(3);
    for (let i = 0; i < 5; i++) nt.propose(1, `b${i}`);
    compactAll(nt, [1, 2]);
    for (let i = 0; i < 2; i++) nt.propose(1, `c${i}`);
    nt.recover();
    nt.tickAll(3);
    const snaps = nt.log.filter((m) => m.type === "snap");
    expect(snaps.length).toBeGreaterThan(0);
    expect(snaps.every((m) => m.to === 3)).toBe(true);
    const l = nt.raft(1).status();
    const f = nt.raft(3).status();
    expect(f.lastIndex).toBe(l.lastIndex);
    expect(f.commit).toBe(l.commit);
    expect(nt.node(3).storage.snapshot().metadata.index).toBe(
      nt.node(1).storage.snapshot().metadata.index,
    );
    nt.propose(1, "after");
    expect(nt.raft(3).status().commit).toBe(nt.raft(1).status().commit);

    // Chunked transfer, interrupted twice (a lost chunk, then a follower restart mid-way).
    const nc = new Network([1, 2, 3], { raft: { snapshotChunkSize: 3 } });
    nc.campaign(1);
    nc.isolate(3);
    for (let i = 0; i < 4; i++) nc.propose(1, `x${i}`);
    compactAll(nc, [1, 2]);
    nc.recover();
    let seen = 0;
    nc.filter = (m) => {
      if (m.type !== "snap") return true;
      seen++;
      return seen !== 2; // lose the second chunk
    };
    const total = nc.node(1).storage.snapshot().data.byteLength;
    expect(total).toBeGreaterThan(6); // at least 3 chunks
    nc.tick(1); // heartbeat → probe → snapshot chunk 0 → ack → chunk 1 lost
    expect(nc.node(3).readies.some((r) => r.snapshot !== undefined)).toBe(false);
    expect(nc.raft(3).status().firstIndex).toBe(1); // nothing half-applied
    // restart 3 before the retry: its partial buffer is gone; the transfer restarts cleanly
    nc.restart(3);
    nc.filter = undefined;
    nc.tickAll(4);
    const installed = nc.node(3).readies.filter((r) => r.snapshot !== undefined);
    expect(installed).toHaveLength(1);
    const chunks = nc.log.filter((m) => m.type === "snap" && m.to === 3);
    expect(chunks.length).toBeGreaterThanOrEqual(Math.ceil(total / 3));
    expect(chunks.every((m) => (m.snapshot?.data.byteLength ?? 0) <= 3)).toBe(true);
    expect(installed[0]?.snapshot?.data).toEqual(nc.node(1).storage.snapshot().data);
    expect(nc.raft(3).status().lastIndex).toBe(nc.raft(1).status().lastIndex);
    void ents;
  });

  it("a snapshot source: nothing is sent while it has none, a stale one is ignored, a ready one is installed", () => {
    // Like etcd's ErrSnapshotTemporarilyUnavailable: the log is compacted without data and
    // the application builds a snapshot only when a follower needs one.
    let source: Snapshot | undefined;
    let asked = 0;
    const nt = new Network([1, 2, 3], {
      raft: {
        snapshotSource: () => {
          asked++;
          return source;
        },
      },
    });
    const floor = cutOffBehindCompaction(nt);
    nt.recover();
    nt.tickAll(3);
    expect(asked).toBeGreaterThan(0);
    expect(nt.log.filter((m) => m.type === "snap")).toHaveLength(0);
    expect(nt.raft(3).status().lastIndex).toBeLessThan(floor);

    // Older than the compacted log: it could not bring the follower up to it.
    source = snap(floor - 1, nt.raft(1).term);
    nt.tickAll(3);
    expect(nt.log.filter((m) => m.type === "snap")).toHaveLength(0);

    source = { ...snap(floor, nt.raft(1).term), data: new TextEncoder().encode("built") };
    nt.propose(1, "b");
    nt.tickAll(3);
    const installed = nt.node(3).readies.filter((r) => r.snapshot !== undefined);
    expect(installed.map((r) => r.snapshot?.metadata.index)).toEqual([floor]);
    expect(installed[0]?.snapshot?.data).toEqual(new TextEncoder().encode("built"));
    expect(nt.raft(3).status().lastIndex).toBe(nt.raft(1).status().lastIndex);
    expect(nt.raft(3).status().commit).toBe(nt.raft(1).status().commit);
  });

  it("a source's bytes read a chunk at a time: a read that fails gives the transfer up, and the next one is asked for again", () => {
    const built = new TextEncoder().encode("a state read from a file, chunk by chunk");
    let failNext = false;
    const reads: [number, number][] = [];
    const sources: Snapshot[] = [];
    let floor = 0;
    const nt = new Network([1, 2, 3], {
      raft: {
        snapshotChunkSize: 8,
        snapshotSource: () => {
          const out: Snapshot = {
            metadata: snap(floor, nt.raft(1).term).metadata,
            data: {
              byteLength: built.byteLength,
              subarray(start: number, end: number): Uint8Array {
                if (failNext) {
                  failNext = false;
                  throw new Error("EIO");
                }
                reads.push([start, end]);
                return built.slice(start, end);
              },
            },
          };
          sources.push(out);
          return out;
        },
      },
    });
    floor = cutOffBehindCompaction(nt);
    failNext = true;
    nt.recover();
    nt.tickAll(1);
    // The first read failed: nothing was sent from that source, and the leader is no longer
    // sending that follower a snapshot.
    expect(sources).toHaveLength(1);
    expect(nt.log.filter((m) => m.type === "snap")).toHaveLength(0);
    expect(nt.raft(1).status().sendingSnapshot.has(3)).toBe(false);
    nt.tickAll(6);
    expect(sources.length).toBeGreaterThan(1);
    const installed = nt.node(3).readies.filter((r) => r.snapshot !== undefined);
    expect(installed.map((r) => r.snapshot?.data)).toEqual([built]);
    // Read in chunks of at most 8 bytes, never the whole.
    expect(reads.every(([a, b]) => b - a <= 8)).toBe(true);
    expect(nt.raft(3).status().lastIndex).toBe(nt.raft(1).status().lastIndex);
    expect(nt.raft(1).status().sendingSnapshot.size).toBe(0);
  });

  it("a receiver keeps the chunks of a transfer: the Ready carries what its sink finished with; a failing sink gives the transfer up and it starts again", () => {
    const state = new TextEncoder().encode("the state a follower receives chunk by chunk");
    const events: string[] = [];
    let failAppends = 1;
    let floor = 0;
    const finished = {
      byteLength: state.byteLength,
      subarray: (a: number, b: number) => state.slice(a, b),
    };
    const nt: Network = new Network([1, 2, 3], {
      raft: {
        snapshotChunkSize: 8,
        snapshotSource: (): Snapshot => ({
          metadata: snap(floor, nt.raft(1).term).metadata,
          data: state,
        }),
        snapshotReceiver: {
          begin(metadata, total) {
            events.push(`begin ${metadata.index} ${total}`);
            const parts: Uint8Array[] = [];
            return {
              append(bytes) {
                if (parts.length === 2 && failAppends > 0) {
                  failAppends--;
                  events.push("append failed");
                  throw new Error("ENOSPC");
                }
                parts.push(bytes.slice());
              },
              finish() {
                const all = Buffer.concat(parts);
                expect(new Uint8Array(all)).toEqual(state);
                events.push("finish");
                return finished;
              },
              discard() {
                events.push("discard");
              },
            };
          },
        },
      },
    });
    floor = cutOffBehindCompaction(nt);
    nt.recover();
    nt.tickAll(8);
    // The third chunk could not be kept: that transfer was discarded and a new one completed.
    expect(events).toEqual([
      `begin ${floor} ${state.byteLength}`,
      "append failed",
      "discard",
      `begin ${floor} ${state.byteLength}`,
      "finish",
    ]);
    const installed = nt.node(3).readies.filter((r) => r.snapshot !== undefined);
    expect(installed.map((r) => r.snapshot?.data)).toEqual([finished]);
    expect(nt.raft(3).status().lastIndex).toBe(nt.raft(1).status().lastIndex);
  });

  it("a transfer given up for a new term is discarded", () => {
    const events: string[] = [];
    const h = newHarness(1, [1, 2], {
      snapshotReceiver: {
        begin: () => ({
          append: () => events.push("append"),
          finish: () => new Uint8Array(0),
          discard: () => events.push("discard"),
        }),
      },
    });
    const s = snap(11, 11);
    h.raft.step(
      msg({
        type: "snap",
        from: 2,
        to: 1,
        term: 11,
        snapshot: { metadata: s.metadata, data: new Uint8Array(4) },
        chunkOffset: 0,
        chunkTotal: 8,
      }),
    );
    expect(events).toEqual(["append"]);
    h.raft.step(msg({ type: "app", from: 2, to: 1, term: 12, index: 0, logTerm: 0 }));
    expect(events).toEqual(["append", "discard"]);
  });
});
