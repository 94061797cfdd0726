// RaftGroup driving in-process replicas over an in-memory network: proposals, linearizable
// reads, not-leader answers, applies overlapping the log, compaction and catch-up by snapshot.

import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ConfState,
  createMemoryLogStore,
  type Entry,
  type LogStore,
  type Message,
  type SnapshotBytes,
  snapshotBytes,
} from "@oprc/raft-log";
import { afterEach, describe, expect, it } from "vitest";
import {
  mostCaughtUpVoter,
  type ProposalResult,
  RaftGroup,
  type StateMachine,
} from "./raft-group.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A list of applied strings; its snapshot is the JSON of the list and the index. */
class ListMachine implements StateMachine<number> {
  items: string[] = [];
  applied = 0;
  /** The applied index at the last persist(). */
  persisted = 0;
  /** While set, every apply waits for it (a slow state machine). */
  gate: Promise<void> | undefined;
  /** While set, reading a snapshot waits for it (a large state). */
  readGate: Promise<void> | undefined;
  /** While set, reading a snapshot fails. */
  readFails = false;
  /** While set, every restore waits for it (a large snapshot being written). */
  restoreGate: Promise<void> | undefined;
  /** The index of every restore, and whether its bytes came in a file or in memory. */
  restores: { index: number; from: string }[] = [];
  /** While set, every restore refuses its bytes as malformed (changing nothing). */
  refuse = false;
  /** While set, every apply fails (a disk error). */
  applyFails = false;
  /** For each membership change applied: the membership before it, as the group told. */
  confsBefore = new Map<number, ConfState>();
  appliedIndex(): number {
    return this.applied;
  }
  async apply(entries: readonly Entry[], confAt: (index: number) => ConfState): Promise<number[]> {
    await this.gate;
    if (this.applyFails) throw new Error("input/output error (test)");
    const out: number[] = [];
    for (const e of entries) {
      if (e.type === "conf_change") this.confsBefore.set(e.index, confAt(e.index - 1));
      if (e.type === "normal" && e.data.byteLength > 0) this.items.push(dec.decode(e.data));
      this.applied = e.index;
      out.push(this.items.length);
    }
    return out;
  }
  async snapshot(): Promise<() => AsyncIterable<Uint8Array>> {
    const bytes = enc.encode(JSON.stringify({ items: this.items, applied: this.applied }));
    const gate = () => this.readGate;
    const fails = () => this.readFails;
    return async function* () {
      await gate();
      if (fails()) throw new Error("no space left on device");
      // In pages, as a shard is read.
      for (let at = 0; at < bytes.byteLength; at += 16) yield bytes.subarray(at, at + 16);
    };
  }
  async restore(data: SnapshotBytes, index: number): Promise<void> {
    this.restores.push({ index, from: data instanceof Uint8Array ? "memory" : "file" });
    await this.restoreGate;
    if (this.refuse)
      throw Object.assign(new Error("malformed (test)"), { code: "invalid_argument" });
    const s = JSON.parse(dec.decode(snapshotBytes(data))) as { items: string[]; applied: number };
    this.items = s.items;
    this.applied = s.applied;
  }
  async persist(): Promise<void> {
    this.persisted = this.applied;
  }
}

/**
 * A memory log store whose saves, while `holding`, are accepted at once but durable only
 * when their turn in `held` is called.
 */
function holdingStore(): { storage: LogStore; held: (() => void)[]; hold(on: boolean): void } {
  const inner = createMemoryLogStore();
  let holding = false;
  const held: (() => void)[] = [];
  const storage: LogStore = {
    initialState: () => inner.initialState(),
    entries: (lo, hi, maxBytes) => inner.entries(lo, hi, maxBytes),
    term: (i) => inner.term(i),
    firstIndex: () => inner.firstIndex(),
    lastIndex: () => inner.lastIndex(),
    snapshot: () => inner.snapshot(),
    save: (batch) => {
      const done = inner.save(batch);
      return holding ? new Promise((r) => held.push(() => r(done))) : done;
    },
    compact: (index, snap) => inner.compact(index, snap),
    close: () => inner.close(),
  };
  return {
    storage,
    held,
    hold(on) {
      holding = on;
      if (!on) for (const release of held) release();
    },
  };
}

/** A promise with a flag that tells whether it has resolved yet. */
interface Tracked<T> {
  readonly promise: Promise<T>;
  done: boolean;
}
function tracked<T>(p: Promise<T>): Tracked<T> {
  const t = { promise: p, done: false };
  t.promise = p.then((r) => {
    t.done = true;
    return r;
  });
  return t;
}

const until = async (done: () => boolean): Promise<void> => {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((r) => setTimeout(r, 2));
};

interface Cluster {
  groups: Map<number, RaftGroup<number>>;
  machines: Map<number, ListMachine>;
  storages: Map<number, LogStore>;
  /** Opens a replica on a new, empty node (it waits for the leader to add it). */
  join(id: number): Promise<void>;
  /**
   * Restarts a node as after a crash: a new group on its log store and state machine as
   * they are (the old group is abandoned, not closed).
   */
  restart(id: number): Promise<void>;
  cut: Set<number>;
  /** Each node's install directory. */
  installDirs: Map<number, string>;
  /** Holds back messages of one type to a node (others, heartbeats say, still reach it). */
  hold(to: number, type: Message["type"]): void;
  /** Stops holding, and delivers what was held in order. */
  release(): void;
  /** What each onError call was about, in order. */
  errors: string[];
  tick(n: number): Promise<void>;
  leader(): RaftGroup<number> | undefined;
  /** Messages sent so far (by every node). */
  sent(): number;
  /** Nodes the others count as silent (their `peerSilent`). */
  silent: Set<number>;
  /** Nodes whose messages lose their quiescence mark on the way (nodes that predate it). */
  unmarked: Set<number>;
}

/** Quiescence for {@link cluster}'s nodes, and their log stores. */
interface QuiesceOptions {
  readonly quiesce?: boolean;
  /** Each first node's log store (default: a new memory store). */
  readonly storage?: (id: number) => LogStore;
}

const open: RaftGroup<number>[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const g of open.splice(0)) await g.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function cluster(
  ids: number[],
  compactAfter = 10_000,
  compactAfterBytes?: number,
  catchUpEntries = 0,
  snapshotDir?: string,
  { quiesce = false, storage: storageOf }: QuiesceOptions = {},
): Promise<Cluster> {
  const groups = new Map<number, RaftGroup<number>>();
  const machines = new Map<number, ListMachine>();
  const storages = new Map<number, LogStore>();
  const cut = new Set<number>();
  const holds = new Set<string>();
  const errors: string[] = [];
  const held: Message[] = [];
  /** Each node's install directory, kept across its restarts. */
  const installDirs = new Map<number, string>();
  const silent = new Set<number>();
  const unmarked = new Set<number>();
  let sent = 0;
  const send = (_group: string, msgs: readonly Message[], mark = false): void => {
    for (const m of msgs) {
      sent++;
      if (cut.has(m.from) || cut.has(m.to)) continue;
      if (holds.has(`${m.to}:${m.type}`)) {
        held.push(m);
        continue;
      }
      const marked = mark && !unmarked.has(m.from);
      queueMicrotask(() => groups.get(m.to)?.step(m, marked));
    }
  };
  const openNode = async (
    id: number,
    bootstrapVoters?: number[],
    sm = new ListMachine(),
    storage: LogStore = createMemoryLogStore(),
  ): Promise<void> => {
    machines.set(id, sm);
    storages.set(id, storage);
    let installDir = installDirs.get(id);
    if (installDir === undefined) {
      installDir = mkdtempSync(join(tmpdir(), "raft-group-install-"));
      dirs.push(installDir);
      installDirs.set(id, installDir);
    }
    const g = await RaftGroup.open({
      id: "g",
      nodeId: id,
      storage,
      stateMachine: sm,
      send,
      ...(bootstrapVoters === undefined ? {} : { bootstrapVoters }),
      compactAfter,
      ...(compactAfterBytes === undefined ? {} : { compactAfterBytes }),
      catchUpEntries,
      onError: (_err, what) => errors.push(what),
      ...(snapshotDir === undefined ? {} : { snapshotDir }),
      installDir,
      quiesce,
      peerSilent: (peer) => silent.has(peer),
    });
    groups.set(id, g);
    open.push(g);
  };
  for (const id of ids) await openNode(id, ids, undefined, storageOf?.(id));
  const c: Cluster = {
    groups,
    machines,
    storages,
    join: (id) => openNode(id),
    async restart(id) {
      const at = open.indexOf(groups.get(id) as RaftGroup<number>);
      if (at >= 0) open.splice(at, 1);
      await openNode(id, undefined, machines.get(id), storages.get(id));
    },
    cut,
    installDirs,
    errors,
    hold: (to, type) => holds.add(`${to}:${type}`),
    release() {
      holds.clear();
      for (const m of held.splice(0)) groups.get(m.to)?.step(m);
    },
    async tick(n) {
      for (let i = 0; i < n; i++) {
        for (const [id, g] of groups) if (!cut.has(id)) g.tick();
        await new Promise((r) => setTimeout(r, 1));
      }
    },
    leader: () => [...groups.entries()].find(([id, g]) => g.isLeader && !cut.has(id))?.[1],
    sent: () => sent,
    silent,
    unmarked,
  };
  for (let i = 0; i < 200 && c.leader() === undefined; i++) await c.tick(1);
  return c;
}

/**
 * Proposes "a", then "b" while the (held) write of "a" is in flight, then lets that write
 * end: the next Ready, writing "b", is handed out.
 */
async function proposeDuringWrite(
  g: RaftGroup<number>,
  store: ReturnType<typeof holdingStore>,
): Promise<Record<"a" | "b", Tracked<ProposalResult<number>>>> {
  const a = tracked(g.propose(enc.encode("a")));
  await until(() => store.held.length === 1);
  const b = tracked(g.propose(enc.encode("b")));
  store.held[0]?.();
  return { a, b };
}

describe("RaftGroup", () => {
  it("elects a leader, applies proposals on every replica, answers followers with the leader", async () => {
    const c = await cluster([1, 2, 3]);
    const leader = c.leader() as RaftGroup<number>;
    expect(leader).toBeDefined();
    const r = await leader.propose(enc.encode("a"));
    expect(r.result).toBe(1);
    await leader.propose(enc.encode("b"));
    await c.tick(3);
    for (const sm of c.machines.values()) expect(sm.items).toEqual(["a", "b"]);
    const follower = [...c.groups.values()].find((g) => !g.isLeader) as RaftGroup<number>;
    await expect(follower.propose(enc.encode("x"))).rejects.toMatchObject({
      code: "not_leader",
      leaderHint: String(leader.status().id),
    });
  });

  it("followers hear of a commit within commitNoticeMs, with no tick and no later write", async () => {
    const c = await cluster([1, 2, 3]);
    await c.tick(3);
    const leader = c.leader() as RaftGroup<number>;
    await leader.propose(enc.encode("a"));
    // The clock stands still: no heartbeat carries the new commit index, only the notice.
    await until(() => [...c.machines.values()].every((sm) => sm.items.length === 1));
    for (const sm of c.machines.values()) expect(sm.items).toEqual(["a"]);
  });

  it("a follower's ReadIndex waits until it has applied what the leader had committed", async () => {
    const c = await cluster([1, 2, 3]);
    const leader = c.leader() as RaftGroup<number>;
    await leader.propose(enc.encode("a"));
    const id = [...c.groups.keys()].find((k) => !c.groups.get(k)?.isLeader) as number;
    const read = c.groups.get(id)?.readIndex() as Promise<void>;
    for (let i = 0; i < 50; i++) {
      const done = await Promise.race([
        read.then(() => true),
        new Promise((r) => setTimeout(() => r(false), 5)),
      ]);
      if (done) break;
      await c.tick(1);
    }
    await read;
    expect(c.machines.get(id)?.items).toEqual(["a"]);
  });

  it("asks again for a ReadIndex whose request was lost, and serves the read", async () => {
    const c = await cluster([1, 2, 3]);
    const leader = c.leader() as RaftGroup<number>;
    await leader.propose(enc.encode("a"));
    const id = [...c.groups.keys()].find((k) => !c.groups.get(k)?.isLeader) as number;
    // The follower's request to its leader is lost (its link is down while it goes out).
    c.cut.add(id);
    let served = false;
    const read = (c.groups.get(id) as RaftGroup<number>).readIndex(60_000).then(() => {
      served = true;
    });
    await new Promise((r) => setTimeout(r, 20));
    c.cut.delete(id);
    for (let i = 0; i < 20 && !served; i++) await c.tick(1);
    expect(served).toBe(true);
    await read;
    expect(c.machines.get(id)?.items).toEqual(["a"]);
  });

  /** Three replicas compacting every 5 entries; one follower cut off while `n` are proposed. */
  async function withCutOff(n: number) {
    const c = await cluster([1, 2, 3], 5);
    const leader = c.leader() as RaftGroup<number>;
    const leaderId = leader.status().id;
    const lagging = [...c.groups.keys()].find((k) => !c.groups.get(k)?.isLeader) as number;
    c.cut.add(lagging);
    for (let i = 0; i < n; i++) await leader.propose(enc.encode(`v${i}`));
    await c.tick(2);
    return { c, leader, leaderId, lagging };
  }

  it("compacts the log behind the durable state, and builds a snapshot only for a cut-off replica", async () => {
    const { c, leader, leaderId, lagging } = await withCutOff(20);
    const compacted = leader.status().lastSnapshotIndex;
    expect(compacted).toBeGreaterThan(5);
    // The log keeps the point, not a copy of the state, and only behind what was persisted.
    expect(c.storages.get(leaderId)?.snapshot().data.byteLength).toBe(0);
    expect(c.machines.get(leaderId)?.persisted).toBeGreaterThanOrEqual(compacted);
    expect(leader.status().snapshotsBuilt).toBe(0);
    // The follower installs it in its state machine first: its log never holds the data.
    const storage = c.storages.get(lagging) as LogStore;
    const save = storage.save.bind(storage);
    let savedData = 0;
    storage.save = (batch) => {
      savedData += batch.snapshot?.data.byteLength ?? 0;
      return save(batch);
    };
    c.cut.delete(lagging);
    const installs = () => c.groups.get(lagging)?.status().snapshotsInstalled;
    for (let i = 0; i < 100 && installs() !== 1; i++) await c.tick(1);
    expect(c.machines.get(lagging)?.items).toEqual(Array.from({ length: 20 }, (_, i) => `v${i}`));
    expect(installs()).toBe(1);
    expect(leader.status().snapshotsBuilt).toBe(1);
    // Installed and restored: the replica's log keeps the point, not the data.
    const installed = c.storages.get(lagging)?.snapshot();
    expect(installed?.metadata.index).toBeGreaterThanOrEqual(compacted);
    expect(installed?.data.byteLength).toBe(0);
    expect(savedData).toBe(0);
    expect(c.machines.get(lagging)?.persisted).toBeGreaterThanOrEqual(
      installed?.metadata.index ?? Number.POSITIVE_INFINITY,
    );
    // The next proposal still reaches every replica.
    await leader.propose(enc.encode("after"));
    for (let i = 0; i < 100 && c.machines.get(lagging)?.items.length !== 21; i++) await c.tick(1);
    expect(c.machines.get(lagging)?.items.at(-1)).toBe("after");
  });

  it("a follower that stops after installing a snapshot, before its log records it, skips what it has and catches up", async () => {
    const { c, leader, lagging } = await withCutOff(20);
    const storage = c.storages.get(lagging) as LogStore;
    const save = storage.save.bind(storage);
    // The log's write of the snapshot's point never completes: the node "crashes" there.
    let stuck = false;
    storage.save = (batch) => {
      if (batch.snapshot === undefined) return save(batch);
      stuck = true;
      return new Promise(() => {});
    };
    c.cut.delete(lagging);
    const sm = c.machines.get(lagging) as ListMachine;
    // Until the old group is stuck in that write (else it would go on, on the same log).
    for (let i = 0; i < 100 && !stuck; i++) await c.tick(1);
    expect(stuck).toBe(true);
    expect(sm.items).toHaveLength(20);
    const stored = storage.snapshot().metadata.index;
    expect(sm.applied).toBeGreaterThan(stored);
    storage.save = save;
    await c.restart(lagging);
    // The state machine is ahead of the log; the leader, compacted past that log, sends the
    // snapshot again, and later entries are applied once each.
    await leader.propose(enc.encode("after"));
    for (let i = 0; i < 200 && sm.items.at(-1) !== "after"; i++) await c.tick(1);
    expect(sm.items).toEqual([...Array.from({ length: 20 }, (_, i) => `v${i}`), "after"]);
    expect(storage.snapshot().metadata.index).toBeGreaterThan(stored);
  });

  it("a follower receives a snapshot into a file in its install directory, installs it from there, and removes it", async () => {
    const { c, lagging } = await withCutOff(20);
    c.cut.delete(lagging);
    const sm = c.machines.get(lagging) as ListMachine;
    for (let i = 0; i < 100 && sm.items.length !== 20; i++) await c.tick(1);
    expect(sm.items).toHaveLength(20);
    expect(sm.restores.map((r) => r.from)).toEqual(["file"]);
    expect(readdirSync(c.installDirs.get(lagging) as string)).toEqual([]);
  });

  it("a follower that stops while it installs a snapshot installs it again from its file at the next open", async () => {
    const { c, leader, lagging } = await withCutOff(20);
    const sm = c.machines.get(lagging) as ListMachine;
    // The install never completes: the node "crashes" in the middle of it.
    sm.restoreGate = new Promise(() => {});
    c.cut.delete(lagging);
    for (let i = 0; i < 100 && sm.restores.length === 0; i++) await c.tick(1);
    const index = sm.restores[0]?.index as number;
    const dir = c.installDirs.get(lagging) as string;
    expect(readdirSync(dir)).toEqual([`g@${index}.install`]);
    expect(sm.items).not.toHaveLength(20);
    sm.restoreGate = undefined;
    await c.restart(lagging);
    // Installed again at open, from the file, before anything else.
    expect(sm.restores).toEqual([
      { index, from: "file" },
      { index, from: "file" },
    ]);
    expect(sm.items).toHaveLength(20);
    expect(readdirSync(dir)).toEqual([]);
    await leader.propose(enc.encode("after"));
    for (let i = 0; i < 200 && sm.items.at(-1) !== "after"; i++) await c.tick(1);
    expect(sm.items).toEqual([...Array.from({ length: 20 }, (_, i) => `v${i}`), "after"]);
  });

  it("a snapshot the state machine refuses as malformed stops the group but is not installed again at the next open", async () => {
    const { c, leader, lagging } = await withCutOff(20);
    const sm = c.machines.get(lagging) as ListMachine;
    sm.refuse = true;
    c.cut.delete(lagging);
    for (let i = 0; i < 100 && !c.errors.includes("ready"); i++) await c.tick(1);
    expect(c.errors).toContain("ready");
    expect(readdirSync(c.installDirs.get(lagging) as string)).toEqual([]);
    sm.refuse = false;
    await c.restart(lagging);
    // Opened on the state it had; the leader sends a snapshot again, which installs.
    expect(sm.restores).toHaveLength(1);
    await leader.propose(enc.encode("after"));
    for (let i = 0; i < 200 && sm.items.at(-1) !== "after"; i++) await c.tick(1);
    expect(sm.items).toEqual([...Array.from({ length: 20 }, (_, i) => `v${i}`), "after"]);
    expect(sm.restores).toHaveLength(2);
  });

  it("reads wait for a snapshot being installed, and an install waits for the reads in progress", async () => {
    const { c, lagging } = await withCutOff(20);
    const g = c.groups.get(lagging) as RaftGroup<number>;
    const sm = c.machines.get(lagging) as ListMachine;
    const dir = c.installDirs.get(lagging) as string;
    let endRead = (): void => undefined;
    const inProgress = g.reading(
      () => new Promise<number>((resolve) => (endRead = () => resolve(sm.items.length))),
    );
    let release = (): void => undefined;
    sm.restoreGate = new Promise((resolve) => (release = resolve));
    const installing = () => readdirSync(dir).find((f) => f.endsWith(".install"));
    try {
      c.cut.delete(lagging);
      for (let i = 0; i < 100 && installing() === undefined; i++) await c.tick(1);
      // Received and kept for the install, which waits for the read.
      expect(installing()).toMatch(/^g@\d+\.install$/);
      await c.tick(5);
      expect(sm.restores).toEqual([]);
      endRead();
      expect(await inProgress).toBe(0);
      for (let i = 0; i < 100 && sm.restores.length === 0; i++) await c.tick(1);
      expect(sm.restores).toHaveLength(1);
      // A read asked during the install runs after it.
      let ran = false;
      const later = g.reading(async () => {
        ran = true;
        return sm.items.length;
      });
      await c.tick(5);
      expect(ran).toBe(false);
      release();
      expect(await later).toBe(20);
    } finally {
      endRead();
      release();
    }
  });

  it("keeps the entries a follower that answers still lacks: it catches up from the log, not from a snapshot", async () => {
    // Compaction at 20 entries keeps at most 10; no catch-up tail.
    const c = await cluster([1, 2, 3], 20);
    const leader = c.leader() as RaftGroup<number>;
    const slow = [...c.groups.keys()].find((k) => !c.groups.get(k)?.isLeader) as number;
    for (let i = 0; i < 10; i++) await leader.propose(enc.encode(`v${i}`));
    await c.tick(2);
    const synced = leader.status().applied;
    // The follower still answers heartbeats, but its log falls behind.
    c.hold(slow, "app");
    let last = 0;
    for (let i = 10; i < 19; i++) last = (await leader.propose(enc.encode(`v${i}`))).index;
    await c.tick(2);
    for (let i = 0; i < 100 && leader.status().lastSnapshotIndex <= 1; i++) await c.tick(1);
    // Compacted (20 entries reached), but only up to what the slow follower has.
    expect(leader.status().lastSnapshotIndex).toBe(synced);
    expect(leader.status().lastSnapshotIndex).toBeLessThan(last);
    c.release();
    for (let i = 0; i < 100 && c.machines.get(slow)?.items.length !== 19; i++) await c.tick(1);
    expect(c.machines.get(slow)?.items).toEqual(Array.from({ length: 19 }, (_, i) => `v${i}`));
    expect(c.groups.get(slow)?.status().snapshotsInstalled).toBe(0);
    expect(leader.status().snapshotsBuilt).toBe(0);
  });

  it("keeps a catch-up tail behind the applied index on every replica", async () => {
    const c = await cluster([1, 2, 3], 10, undefined, 3);
    const leader = c.leader() as RaftGroup<number>;
    // The log holds the leader's no-op at 2 and these at 3…11: the 10th entry, applied last,
    // makes every replica compact there.
    let last = 0;
    for (let i = 0; i < 9; i++) last = (await leader.propose(enc.encode(`v${i}`))).index;
    expect(last).toBe(11);
    for (let i = 0; i < 100; i++) {
      await c.tick(1);
      if ([...c.groups.values()].every((g) => g.status().lastSnapshotIndex > 1)) break;
    }
    for (const [id, g] of c.groups) {
      expect(g.status().lastSnapshotIndex, `node ${id}`).toBe(last - 3);
      expect(c.storages.get(id)?.firstIndex(), `node ${id}`).toBe(last - 2);
    }
  });

  it("records the membership as of the index it compacts to, not a later one", async () => {
    const c = await cluster([1, 2, 3], 10, undefined, 3);
    const leader = c.leader() as RaftGroup<number>;
    for (let i = 0; i < 6; i++) await leader.propose(enc.encode(`v${i}`));
    // At index 9, inside the tail a compaction at 11 keeps.
    expect(leader.appliedConf()).toMatchObject({ index: 1, conf: { learners: [] } });
    const change = await leader.proposeConfChange({
      changes: [{ type: "add_learner", nodeId: 4 }],
      transition: "auto",
    });
    // Known as applied once the proposal is answered (the core's status takes it later).
    expect(leader.appliedConf()).toEqual({
      index: change.index,
      conf: expect.objectContaining({ voters: [1, 2, 3], learners: [4] }),
    });
    let last = 0;
    for (let i = 6; i < 8; i++) last = (await leader.propose(enc.encode(`v${i}`))).index;
    expect(last).toBe(11);
    const id = leader.status().id;
    for (let i = 0; i < 100 && leader.status().lastSnapshotIndex <= 1; i++) await c.tick(1);
    const stored = c.storages.get(id)?.snapshot().metadata;
    expect(stored?.index).toBe(8);
    expect(stored?.confState).toMatchObject({ voters: [1, 2, 3], learners: [] });
    // The next compaction passes the change and records it.
    for (let i = 8; i < 16; i++) await leader.propose(enc.encode(`v${i}`));
    for (let i = 0; i < 100 && leader.status().lastSnapshotIndex <= 8; i++) await c.tick(1);
    expect(c.storages.get(id)?.snapshot().metadata.confState).toMatchObject({ learners: [4] });
    // Compacted past the change, the membership is the snapshot's, as of its index.
    const snap = c.storages.get(id)?.snapshot().metadata;
    expect(leader.appliedConf()).toEqual({ index: snap?.index, conf: snap?.confState });
  });

  it("writes a built snapshot to a file, and removes it once no follower is being sent it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "raft-group-test-"));
    try {
      const c = await cluster([1, 2, 3], 5, undefined, 0, dir);
      const leader = c.leader() as RaftGroup<number>;
      const lagging = [...c.groups.keys()].find((k) => !c.groups.get(k)?.isLeader) as number;
      c.cut.add(lagging);
      for (let i = 0; i < 20; i++) await leader.propose(enc.encode(`v${i}`));
      // The follower answers heartbeats, but the snapshot's chunks do not reach it.
      c.hold(lagging, "snap");
      c.cut.delete(lagging);
      for (let i = 0; i < 50 && leader.status().snapshotsBuilt === 0; i++) await c.tick(1);
      expect(leader.status().snapshotsBuilt).toBe(1);
      expect(readdirSync(dir)).toHaveLength(1);
      // The follower goes silent mid-transfer, long past the time a built snapshot is kept:
      // the file stays while the leader is still sending it.
      for (let i = 0; i < 50 && !leader.status().sendingSnapshot.has(lagging); i++) await c.tick(1);
      c.cut.add(lagging);
      await c.tick(320);
      expect(leader.status().sendingSnapshot.get(lagging)).toBeGreaterThan(1);
      expect(readdirSync(dir)).toHaveLength(1);
      c.cut.delete(lagging);
      c.release();
      const installed = () => c.groups.get(lagging)?.status().snapshotsInstalled;
      for (let i = 0; i < 100 && installed() !== 1; i++) await c.tick(1);
      expect(c.machines.get(lagging)?.items).toHaveLength(20);
      await c.tick(2);
      // Sent, and nobody asked for it for longer than a built snapshot is kept: removed.
      expect(leader.status().sendingSnapshot.size).toBe(0);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("after a failed snapshot build, waits before the next (not one per follower answer)", async () => {
    const { c, leader, leaderId, lagging } = await withCutOff(20);
    const sm = c.machines.get(leaderId) as ListMachine;
    sm.readFails = true;
    c.cut.delete(lagging);
    await c.tick(40);
    const failures = c.errors.filter((w) => w === "building a snapshot").length;
    // 40 ticks of heartbeat answers: tried at the first, then after 10 and 20 more ticks.
    expect(failures).toBeGreaterThanOrEqual(2);
    expect(failures).toBeLessThanOrEqual(4);
    sm.readFails = false;
    for (let i = 0; i < 200 && c.machines.get(lagging)?.items.length !== 20; i++) await c.tick(1);
    expect(c.machines.get(lagging)?.items).toHaveLength(20);
    expect(leader.status().snapshotsBuilt).toBe(1);
  });

  it("applies go on while a snapshot is read, and the log keeps the entries after it", async () => {
    const { c, leader, leaderId, lagging } = await withCutOff(10);
    let release = (): void => undefined;
    (c.machines.get(leaderId) as ListMachine).readGate = new Promise((r) => {
      release = r;
    });
    c.cut.delete(lagging);
    // The follower asks; the build starts and waits on its read.
    await c.tick(3);
    // Proposals are applied (and answered) meanwhile.
    for (let i = 10; i < 15; i++) {
      const r = await leader.propose(enc.encode(`v${i}`));
      expect(r.result).toBe(i + 1);
    }
    expect(leader.status().snapshotsBuilt).toBe(0);
    release();
    for (let i = 0; i < 200 && c.machines.get(lagging)?.items.length !== 15; i++) await c.tick(1);
    expect(c.machines.get(lagging)?.items).toEqual(Array.from({ length: 15 }, (_, i) => `v${i}`));
    expect(leader.status().snapshotsBuilt).toBe(1);
  });

  it("a snapshot built after a membership change carries that membership to a new replica", async () => {
    const c = await cluster([1, 2, 3], 5);
    const leader = c.leader() as RaftGroup<number>;
    await leader.proposeConfChange({
      changes: [{ type: "add_learner", nodeId: 4 }],
      transition: "auto",
    });
    for (let i = 0; i < 10; i++) await leader.propose(enc.encode(`v${i}`));
    await c.tick(2);
    expect(leader.status().lastSnapshotIndex).toBeGreaterThan(5);
    await c.join(4);
    const installed = () => c.groups.get(4)?.status().snapshotsInstalled;
    for (let i = 0; i < 200 && installed() !== 1; i++) await c.tick(1);
    expect(c.machines.get(4)?.items).toEqual(Array.from({ length: 10 }, (_, i) => `v${i}`));
    expect(c.storages.get(4)?.snapshot().metadata.confState).toMatchObject({
      voters: [1, 2, 3],
      learners: [4],
    });
    expect(c.groups.get(4)?.status().confState.learners).toEqual([4]);
  });

  it("refuses to open a group whose log is compacted past the state machine's data", async () => {
    const storage = createMemoryLogStore();
    await storage.save({
      snapshot: {
        metadata: {
          index: 9,
          term: 2,
          confState: {
            voters: [1],
            learners: [],
            votersOutgoing: [],
            learnersNext: [],
            autoLeave: false,
          },
        },
        data: new Uint8Array(0),
      },
      hardState: { term: 2, vote: 1, commit: 9 },
    });
    await expect(
      RaftGroup.open({
        id: "g",
        nodeId: 1,
        storage,
        stateMachine: new ListMachine(),
        send: () => undefined,
      }),
    ).rejects.toThrow(/compacted to index 9 but the shard's data ends at 0/);
  });

  it("compacts by applied payload bytes as well as by entry count", async () => {
    const c = await cluster([1, 2, 3], 1_000_000, 4096);
    const leader = c.leader() as RaftGroup<number>;
    // 3 entries of 1 KiB stay under 4 KiB: no compaction yet.
    for (let i = 0; i < 3; i++) await leader.propose(new Uint8Array(1024).fill(65 + i));
    await c.tick(3);
    expect(leader.status().lastSnapshotIndex).toBe(1);
    // The 4th crosses it: the log is compacted up to what was applied.
    const r = await leader.propose(new Uint8Array(1024).fill(70));
    // (Proposals resolve before the compaction that follows their apply has finished.)
    for (let i = 0; i < 100 && leader.status().lastSnapshotIndex < r.index; i++) await c.tick(1);
    expect(leader.status().lastSnapshotIndex).toBe(r.index);
    // The count starts again from there.
    await leader.propose(new Uint8Array(1024).fill(71));
    await c.tick(3);
    expect(leader.status().lastSnapshotIndex).toBe(r.index);
  });

  it("a compaction reads the sizes of the entries it keeps, not of every entry it could keep", async () => {
    // Up to 2,000 entries could be kept (half of compactAfter); the catch-up tail is 100.
    const c = await cluster([1], 4_000, undefined, 100);
    const storage = c.storages.get(1) as LogStore;
    const machine = c.machines.get(1) as ListMachine;
    /** How far behind what the state machine had applied each read started. */
    const behind: number[] = [];
    c.storages.set(
      1,
      new Proxy(storage, {
        get(target, key) {
          if (key === "entries") {
            return (lo: number, hi: number, maxBytes?: number) => {
              if (hi > lo) behind.push(machine.appliedIndex() + 1 - lo);
              return target.entries(lo, hi, maxBytes);
            };
          }
          const v = Reflect.get(target, key);
          return typeof v === "function" ? v.bind(target) : v;
        },
      }),
    );
    await c.restart(1);
    for (let i = 0; i < 200 && c.leader() === undefined; i++) await c.tick(1);
    const leader = c.leader() as RaftGroup<number>;
    await c.tick(3);
    behind.length = 0; // what the restart read
    let last = 0;
    for (let round = 0; round < 21; round++) {
      const rs = await Promise.all(
        Array.from({ length: 200 }, (_, i) => leader.propose(new Uint8Array(8).fill(i))),
      );
      last = Math.max(...rs.map((r) => r.index));
    }
    expect(last).toBeGreaterThan(4_000);
    // It compacted once, when 4,000 entries were applied, keeping the last 100 of them.
    for (let i = 0; i < 100 && leader.status().lastSnapshotIndex < 3_800; i++) await c.tick(1);
    const compactedTo = leader.status().lastSnapshotIndex;
    expect(compactedTo).toBeGreaterThan(3_800);
    // Nothing was read from further back than one chunk (1,024 entries) behind the applied
    // index (the whole 2,000 entries it could have kept, before).
    expect(Math.max(...behind)).toBeLessThanOrEqual(1_024);
  });

  it("applies on a queue of its own: the log commits on while the state machine is busy, and reads wait for it", async () => {
    const c = await cluster([1]);
    const leader = c.leader() as RaftGroup<number>;
    const sm = c.machines.get(1) as ListMachine;
    let release = (): void => undefined;
    sm.gate = new Promise((r) => {
      release = r;
    });
    const a = leader.propose(enc.encode("a"));
    const b = leader.propose(enc.encode("b"));
    const lastIndex = leader.status().lastIndex;
    // Both entries become durable and committed although the first apply has not returned.
    for (let i = 0; i < 100 && leader.status().commit < lastIndex; i++) {
      await new Promise((r) => setTimeout(r, 2));
    }
    expect(leader.status().commit).toBe(lastIndex);
    expect(sm.items).toEqual([]);
    expect(leader.status().applied).toBeLessThan(lastIndex);
    // A linearizable read is answered only once the state machine has caught up.
    let read = false;
    const r = leader.readIndex().then(() => {
      read = true;
    });
    await new Promise((res) => setTimeout(res, 20));
    expect(read).toBe(false);
    release();
    sm.gate = undefined;
    expect((await a).result).toBe(1);
    expect((await b).result).toBe(2);
    await r;
    expect(sm.items).toEqual(["a", "b"]);
    expect(leader.status().applied).toBe(lastIndex);
  });

  /**
   * A one-voter group on a holding store, its first entry applied, and the entries of each
   * log write it makes from now on (their data, decoded).
   */
  async function recordingLeader() {
    const store = holdingStore();
    const c = await cluster([1], 10_000, undefined, 0, undefined, { storage: () => store.storage });
    const g = c.leader() as RaftGroup<number>;
    await until(() => g.status().applied === g.status().lastIndex);
    const writes: string[][] = [];
    const save = store.storage.save;
    store.storage.save = (batch) => {
      const entries = batch.entries ?? [];
      if (entries.length > 0) writes.push(entries.map((e) => dec.decode(e.data)));
      return save(batch);
    };
    return { store, g, writes };
  }

  it("a leader writes the proposals of one turn of the event loop in one Ready", async () => {
    const { g, writes } = await recordingLeader();
    const results = await Promise.all(["a", "b", "c"].map((v) => g.propose(enc.encode(v))));
    expect(results.map((r) => r.result)).toEqual([1, 2, 3]);
    expect(writes).toEqual([["a", "b", "c"]]);
  });

  it("after a log write a leader's next Ready waits for the end of the turn, taking what the rest of the turn proposes", async () => {
    const { store, g, writes } = await recordingLeader();
    store.hold(true);
    const a = g.propose(enc.encode("a"));
    await until(() => store.held.length === 1);
    const b = g.propose(enc.encode("b")); // while the write of "a" is in flight
    // Two timers of one turn (microtasks run between them): the write of "a" completes in
    // the first, "c" is proposed in the second. "b" waits for the end of the turn with it.
    let c2: Promise<ProposalResult<number>> | undefined;
    setTimeout(() => store.hold(false), 0);
    setTimeout(() => {
      c2 = g.propose(enc.encode("c"));
    }, 0);
    await a;
    await until(() => c2 !== undefined);
    expect(
      (await Promise.all([b, c2 as Promise<ProposalResult<number>>])).map((r) => r.result),
    ).toEqual([2, 3]);
    expect(writes).toEqual([["a"], ["b", "c"]]);
  });

  it("a follower writes the appends it is handed in one turn in one log write", async () => {
    const writes = new Map<number, string[][]>();
    const recording = (id: number): LogStore => {
      const store = createMemoryLogStore();
      const save = store.save.bind(store);
      store.save = (batch) => {
        const entries = (batch.entries ?? []).filter((e) => e.data.byteLength > 0);
        if (entries.length > 0) writes.get(id)?.push(entries.map((e) => dec.decode(e.data)));
        return save(batch);
      };
      writes.set(id, []);
      return store;
    };
    const c = await cluster([1, 2, 3], 10_000, undefined, 0, undefined, { storage: recording });
    const leader = c.leader() as RaftGroup<number>;
    const id = [...c.groups.keys()].find((k) => !c.groups.get(k)?.isLeader) as number;
    c.hold(id, "app");
    // Two Readys of the leader, two appends to each follower; the other follower commits them.
    await leader.propose(enc.encode("a"));
    await leader.propose(enc.encode("b"));
    expect(writes.get(id)).toEqual([]);
    c.release(); // both appends handed to the follower in this turn
    await until(() => (c.machines.get(id) as ListMachine).items.length === 2);
    expect(writes.get(id)).toEqual([["a", "b"]]);
  });

  it("applies committed entries it holds while the next log write is in flight", async () => {
    const store = holdingStore();
    const c = await cluster([1], 10_000, undefined, 0, undefined, { storage: () => store.storage });
    const g = c.leader() as RaftGroup<number>;
    const sm = c.machines.get(1) as ListMachine;
    // Its first entry (the new term's empty one) applied.
    await until(() => g.status().applied === g.status().lastIndex);
    store.hold(true);
    try {
      // "a" is being written; "b" comes meanwhile and goes into the next Ready, with "a"
      // committed. That Ready's write is held: "a" is applied and answered regardless.
      const { a, b } = await proposeDuringWrite(g, store);
      await until(() => store.held.length === 2 && a.done);
      expect(store.held.length).toBe(2);
      expect(a.done).toBe(true);
      expect((await a.promise).result).toBe(1);
      expect(sm.items).toEqual(["a"]);
      expect(b.done).toBe(false);
      store.held[1]?.();
      expect((await b.promise).result).toBe(2);
      expect(sm.items).toEqual(["a", "b"]);
    } finally {
      store.hold(false);
    }
  });

  it("applies what a follower's answer commits while the leader's log write is in flight", async () => {
    const stores = new Map<number, ReturnType<typeof holdingStore>>();
    const c = await cluster([1, 2, 3], 10_000, undefined, 0, undefined, {
      storage: (id) => {
        const s = holdingStore();
        stores.set(id, s);
        return s.storage;
      },
    });
    const leader = c.leader() as RaftGroup<number>;
    const id = [...c.groups].find(([, g]) => g === leader)?.[0] as number;
    const store = stores.get(id) as ReturnType<typeof holdingStore>;
    await until(() => leader.status().applied === leader.status().lastIndex);
    // The followers' answers wait, and the leader's writes are held.
    c.hold(id, "app_resp");
    store.hold(true);
    try {
      // "a" is durable on the leader; the Ready writing "b" is handed out and held.
      const { a, b } = await proposeDuringWrite(leader, store);
      await until(() => store.held.length === 2);
      expect(a.done).toBe(false); // not committed: no follower answered
      // The answers commit "a" (and "b", not yet durable on the leader) while "b"'s write is
      // held: "a" is applied and answered at once.
      c.release();
      await until(() => a.done);
      expect(a.done).toBe(true);
      expect((await a.promise).result).toBe(1);
      expect(b.done).toBe(false);
      store.held[1]?.();
      expect((await b.promise).result).toBe(2);
    } finally {
      store.hold(false);
    }
  });

  it("tells the state machine the membership before each change it applies, several in one batch", async () => {
    const c = await cluster([1]);
    const g = c.leader() as RaftGroup<number>;
    const add = (nodeId: number) =>
      g.proposeConfChange({ changes: [{ type: "add_learner", nodeId }], transition: "auto" });
    const i4 = (await add(4)).index;
    await until(() => g.status().applied >= i4); // the core's own, at the Ready's end
    const i5 = (await add(5)).index;
    await g.propose(enc.encode("x")); // its write saves a commit index past both changes
    // A new state machine on the same log: the group hands every entry over again at once.
    const sm = new ListMachine();
    c.machines.set(1, sm);
    await c.restart(1);
    for (let i = 0; i < 200 && sm.applied < i5; i++) await c.tick(1);
    expect(sm.confsBefore.get(i4)?.learners).toEqual([]);
    expect(sm.confsBefore.get(i5)?.learners).toEqual([4]);
  });

  it("with advanceElection, a group opens with its election clock an election timeout ahead, less a tick", async () => {
    const elapsed = async (advanceElection: boolean) => {
      const installDir = mkdtempSync(join(tmpdir(), "raft-group-install-"));
      dirs.push(installDir);
      const g = await RaftGroup.open({
        id: "g",
        nodeId: 1,
        storage: createMemoryLogStore(),
        stateMachine: new ListMachine(),
        send: () => undefined,
        bootstrapVoters: [1, 2, 3],
        electionTick: 10,
        advanceElection,
        installDir,
      });
      open.push(g);
      return g.status().electionElapsed;
    };
    // Randomized timeouts of 10 to 19 ticks: 9 ahead, the first campaign comes within 10.
    expect(await elapsed(true)).toBe(9);
    expect(await elapsed(false)).toBe(0);
  });

  it("mostCaughtUpVoter: the accepted voter holding the most of the leader's log", () => {
    const st = {
      id: 1,
      confState: { voters: [1, 2, 3, 4], learners: [5], votersOutgoing: [], learnersNext: [] },
      match: new Map([
        [1, 9],
        [2, 7],
        [3, 8],
        [4, 3],
        [5, 9],
      ]),
    } as unknown as Parameters<typeof mostCaughtUpVoter>[0];
    expect(mostCaughtUpVoter(st)).toBe(3); // not itself, not the learner
    expect(mostCaughtUpVoter(st, (id) => id !== 3)).toBe(2);
    expect(mostCaughtUpVoter(st, () => false)).toBe(0);
  });

  describe("quiescence", () => {
    const quiescent = (c: Cluster) =>
      [...c.groups].filter(([id]) => !c.cut.has(id)).map(([, g]) => g.status().quiescent);
    /** Three quiescing replicas with one entry written, all of them quiescent; `lid`: the leader's node. */
    const quiesced = async () => {
      const c = await cluster([1, 2, 3], 10_000, undefined, 0, undefined, { quiesce: true });
      const l = c.leader() as RaftGroup<number>;
      await l.propose(enc.encode("a"));
      await c.tick(25); // an election timeout of nothing, then the mark and its answers
      expect(quiescent(c)).toEqual([true, true, true]);
      const lid = [...c.groups].find(([, g]) => g === l)?.[0] as number;
      return { c, l, lid };
    };

    it("an idle group stops its heartbeats once every follower answered the mark; a proposal wakes it", async () => {
      const { c, l } = await quiesced();
      expect(l.leaseRead()).toBe(false); // its clock stopped: no lease counted in ticks
      const before = c.sent();
      await c.tick(50);
      expect(c.sent() - before).toBe(0);
      expect((await l.propose(enc.encode("b"))).result).toBe(2);
      expect(quiescent(c)).toEqual([false, false, false]);
      // The followers hear of the commit within commitNoticeMs.
      await until(() => [...c.machines.values()].every((m) => m.items.length === 2));
      for (const m of c.machines.values()) expect(m.items).toEqual(["a", "b"]);
      await c.tick(25);
      expect(quiescent(c)).toEqual([true, true, true]);
      // A linearizable read wakes the leader too, and is answered.
      await l.readIndex();
      expect(l.status().quiescent).toBe(false);
    });

    it("a group serving lease reads keeps its clock; once they stop, it quiesces", async () => {
      const { c, l } = await quiesced();
      await l.readIndex(); // wakes it; the heartbeat round renews the lease
      await c.tick(1);
      for (let t = 0; t < 40; t++) {
        expect(l.leaseRead()).toBe(true);
        await c.tick(1);
      }
      expect(quiescent(c)).toEqual([false, false, false]);
      await c.tick(25);
      expect(quiescent(c)).toEqual([true, true, true]);
      expect(l.leaseRead()).toBe(false);
    });

    it("quiescent followers wake when their leader's node falls silent, and elect a new leader", async () => {
      const { c, lid: old } = await quiesced();
      c.cut.add(old);
      // Its node still heard from: the followers' clocks stay stopped (no election).
      await c.tick(40);
      expect(c.leader()).toBeUndefined();
      c.silent.add(old);
      for (let i = 0; i < 100 && c.leader() === undefined; i++) await c.tick(1);
      const next = c.leader() as RaftGroup<number>;
      expect(next).toBeDefined();
      expect((await next.propose(enc.encode("b"))).result).toBe(2);
    });

    it("a quiescent leader wakes when a follower's node falls silent, and quiesces again once it is back", async () => {
      const { c, l } = await quiesced();
      const f = [...c.groups].find(([, g]) => g !== l)?.[0] as number;
      c.cut.add(f);
      c.silent.add(f);
      await c.tick(1);
      expect(l.status().quiescent).toBe(false);
      await c.tick(30); // heartbeating a follower that does not answer: not idle
      expect(l.status().quiescent).toBe(false);
      c.cut.delete(f);
      c.silent.delete(f);
      await c.tick(40);
      expect(quiescent(c)).toEqual([true, true, true]);
    });

    it("a leader keeps its clock while a follower does not answer the mark (a node that predates it)", async () => {
      const c = await cluster([1, 2, 3], 10_000, undefined, 0, undefined, { quiesce: true });
      const l = c.leader() as RaftGroup<number>;
      const other = [...c.groups].find(([, g]) => g !== l)?.[0] as number;
      c.unmarked.add(other);
      await c.tick(40);
      expect(l.status().quiescent).toBe(false);
      const before = c.sent();
      await c.tick(10);
      expect(c.sent() - before).toBeGreaterThanOrEqual(20); // heartbeats and answers
      expect(c.leader()).toBe(l);
    });

    it("a leader that stops on a failure asks a follower to campaign at once", async () => {
      const { c, l, lid } = await quiesced();
      (c.machines.get(lid) as ListMachine).applyFails = true;
      await expect(l.propose(enc.encode("b"))).rejects.toThrow(/input\/output error/);
      expect(l.status().failure).toMatch(/input\/output error/);
      // No tick: the follower it chose campaigns on its TimeoutNow.
      const next = () => [...c.groups.values()].find((g) => g !== l && g.isLeader);
      for (let i = 0; i < 50 && next() === undefined; i++) {
        await new Promise((r) => setTimeout(r, 1));
      }
      expect(next()).toBeDefined();
    });
  });
});
