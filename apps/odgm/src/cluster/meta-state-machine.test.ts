// The metadata group's replica sets: a newer configuration replaces an older one (never the
// reverse), they survive a reopen and travel in a snapshot, and a malformed one is refused
// without changing anything. Node incarnations: the first recorded stays until the node is
// added back as a learner. Run on RocksDB and on the in-memory engine.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMemoryEngine, type KvEngine } from "@oprc/entry-store";
import { openRocksEngine } from "@oprc/entry-store/rocksdb";
import { applyConfChange, type ConfState, type Entry, jsonConfChangeCodec } from "@oprc/raft-log";
import { afterEach, describe, expect, it } from "vitest";
import { openCollectionRegistry } from "../collections/collection-registry.js";
import {
  encodeMetaCommand,
  openMetaStateMachine,
  type ReplicaSet,
  refusedForIncarnation,
} from "./meta-state-machine.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const engines: [string, () => Promise<() => Promise<KvEngine>>][] = [
  [
    "rocksdb",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "meta-sm-"));
      cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
      // Reopenable: each call closes the engine it opened last and opens the directory again.
      let engine: KvEngine | undefined;
      cleanups.push(async () => engine?.close());
      return async () => {
        await engine?.close();
        engine = await openRocksEngine({ location: dir });
        return engine;
      };
    },
  ],
  [
    "memory",
    async () => {
      const engine = createMemoryEngine();
      return async () => engine;
    },
  ],
];

async function open(engine: KvEngine, seen: [string, ReplicaSet][] = []) {
  const shard = await engine.openShard("node");
  const replicaSets = new Map<string, ReplicaSet>();
  const incarnations = new Map<number, number>();
  const badEntries: number[] = [];
  const sm = await openMetaStateMachine({
    shard,
    registry: await openCollectionRegistry(shard),
    addresses: new Map(),
    replicaSets,
    incarnations,
    onReplicaSet: (group, r) => seen.push([group, r]),
    onCollection: async () => undefined,
    onBadEntry: (_err, index) => badEntries.push(index),
  });
  return { sm, replicaSets, incarnations, badEntries };
}

let index = 0;
const entry = (data: Uint8Array): Entry => ({ index: ++index, term: 1, type: "normal", data });
const setReplicas = (group: string, replicas: ReplicaSet) =>
  entry(encodeMetaCommand({ setReplicas: { group, replicas } }));
const setIncarnation = (id: number, incarnation: number) =>
  entry(encodeMetaCommand({ setIncarnation: { id, incarnation } }));
/** The metadata group's membership after each change the tests make (voters 1–3 at first). */
const confs: { index: number; conf: ConfState }[] = [
  {
    index: 0,
    conf: {
      voters: [1, 2, 3],
      learners: [],
      votersOutgoing: [],
      learnersNext: [],
      autoLeave: false,
    },
  },
];
/** What the group hands its state machine: the membership as of an index. */
const confAt = (i: number): ConfState =>
  (confs.findLast((c) => c.index <= i) as { conf: ConfState }).conf;
const confChange = (type: "add_learner" | "add_voter" | "remove", nodeId: number): Entry => {
  const cc = { changes: [{ type, nodeId }], transition: "auto" } as const;
  const e: Entry = {
    index: ++index,
    term: 1,
    type: "conf_change",
    data: jsonConfChangeCodec.encode(cc),
  };
  let conf = confAt(e.index);
  try {
    conf = applyConfChange(conf, cc);
  } catch {
    // refused by the core: a no-op, as in the group
  }
  confs.push({ index: e.index, conf });
  return e;
};

describe.each(engines)("the metadata group's replica sets (%s)", (_name, makeEngine) => {
  it("keeps the newest configuration of each group, across a reopen", async () => {
    const reopen = await makeEngine();
    const seen: [string, ReplicaSet][] = [];
    const first = await open(await reopen(), seen);
    const moved = { voters: [2, 3], learners: [], confIndex: 40 };
    await first.sm.apply(
      [
        setReplicas("c/0", { voters: [1, 2, 3], learners: [4], confIndex: 30 }),
        setReplicas("c/0", moved),
        // Published late by an old leader: an older configuration changes nothing.
        setReplicas("c/0", { voters: [1, 2], learners: [], confIndex: 35 }),
        setReplicas("c/1", { voters: [5], learners: [], confIndex: 7 }),
      ],
      confAt,
    );
    expect(first.replicaSets.get("c/0")).toEqual(moved);
    expect(seen.map(([g, r]) => [g, r.confIndex])).toEqual([
      ["c/0", 30],
      ["c/0", 40],
      ["c/1", 7],
    ]);
    const again = await open(await reopen());
    expect(again.replicaSets.get("c/0")).toEqual(moved);
    expect(again.replicaSets.get("c/1")).toEqual({ voters: [5], learners: [], confIndex: 7 });
  });

  it("carries them in a snapshot", async () => {
    const reopen = await makeEngine();
    const from = await open(await reopen());
    await from.sm.apply(
      [setReplicas("c/0", { voters: [2, 3], learners: [1], confIndex: 12 })],
      confAt,
    );
    const read = await from.sm.snapshot();
    const chunks: Uint8Array[] = [];
    for await (const c of read()) chunks.push(c);
    const to = await open(createMemoryEngine());
    await to.sm.restore(chunks[0] as Uint8Array, 99);
    expect(to.replicaSets.get("c/0")).toEqual({ voters: [2, 3], learners: [1], confIndex: 12 });
    expect(to.sm.appliedIndex()).toBe(99);
  });

  it("applies a malformed replica set as a no-op", async () => {
    const reopen = await makeEngine();
    const node = await open(await reopen());
    const enc = new TextEncoder();
    const bad = [
      { setReplicas: { group: "c/0", replicas: { voters: [0], learners: [], confIndex: 3 } } },
      { setReplicas: { group: "c/0", replicas: { voters: [1], learners: [], confIndex: 0 } } },
      { setReplicas: { group: "c/0", replicas: { voters: ["1"], learners: [], confIndex: 3 } } },
      { setReplicas: { group: "c/0" } },
    ].map((cmd) => entry(enc.encode(JSON.stringify(cmd))));
    await node.sm.apply(bad, confAt);
    expect(node.badEntries).toEqual(bad.map((e) => e.index));
    expect(node.replicaSets.size).toBe(0);
    expect(node.sm.appliedIndex()).toBe(index);
  });

  it("keeps a node's first incarnation until the node is added back as a learner", async () => {
    const reopen = await makeEngine();
    const node = await open(await reopen());
    const big = 2 ** 47 + 3;
    const results = await node.sm.apply(
      [
        setIncarnation(2, big),
        // A replaced data directory cannot take the name over: refused with the one recorded.
        setIncarnation(2, 77),
        setIncarnation(3, 5),
        // Neither removal nor promotion forgets it.
        confChange("remove", 2),
        confChange("add_voter", 3),
      ],
      confAt,
    );
    expect(results[0]).toBeUndefined();
    expect(refusedForIncarnation(results[1])).toBe(big);
    // As another node reads it (its JSON).
    const json = { code: "invalid_config", message: results[1]?.message };
    expect(refusedForIncarnation(json)).toBe(big);
    expect(refusedForIncarnation(results[0])).toBeUndefined();
    expect([...node.incarnations]).toEqual([
      [2, big],
      [3, 5],
    ]);
    const reopened = await open(await reopen());
    expect(reopened.incarnations.get(2)).toBe(big);
    await reopened.sm.apply([confChange("add_learner", 2), setIncarnation(2, 77)], confAt);
    expect(reopened.incarnations.get(2)).toBe(77);
    const again = await open(await reopen());
    expect([...again.incarnations]).toEqual([
      [2, 77],
      [3, 5],
    ]);
  });

  it("keeps the incarnation of a node that an add_learner finds in the group already", async () => {
    const node = await open(await (await makeEngine())());
    await node.sm.apply(
      [confChange("add_learner", 7), setIncarnation(7, 70), setIncarnation(3, 30)],
      confAt,
    );
    // The same add asked twice at once: the second finds node 7 a learner already.
    await node.sm.apply([confChange("add_learner", 7)], confAt);
    // A voter made a learner keeps its data directory.
    await node.sm.apply([confChange("add_learner", 3)], confAt);
    expect(node.incarnations.get(7)).toBe(70);
    expect(node.incarnations.get(3)).toBe(30);
    const [refused] = await node.sm.apply([setIncarnation(7, 71)], confAt);
    expect(refusedForIncarnation(refused)).toBe(70);
    // Removed and added back, it records its directory afresh.
    await node.sm.apply(
      [confChange("remove", 7), confChange("add_learner", 7), setIncarnation(7, 72)],
      confAt,
    );
    expect(node.incarnations.get(7)).toBe(72);
  });

  it("carries incarnations in a snapshot, replacing the restoring node's", async () => {
    const reopen = await makeEngine();
    const from = await open(await reopen());
    await from.sm.apply([setIncarnation(1, 11), setIncarnation(2, 22)], confAt);
    const read = await from.sm.snapshot();
    const chunks: Uint8Array[] = [];
    for await (const c of read()) chunks.push(c);
    const to = await open(createMemoryEngine());
    await to.sm.apply([setIncarnation(2, 99), setIncarnation(4, 44)], confAt);
    await to.sm.restore(chunks[0] as Uint8Array, 50);
    expect([...to.incarnations].sort()).toEqual([
      [1, 11],
      [2, 22],
    ]);
  });

  it("applies a malformed incarnation as a no-op", async () => {
    const node = await open(createMemoryEngine());
    const enc = new TextEncoder();
    const bad = [
      { setIncarnation: { id: 0, incarnation: 3 } },
      { setIncarnation: { id: 1, incarnation: -3 } },
      { setIncarnation: { id: 1, incarnation: "3" } },
      { setIncarnation: { id: 1, incarnation: 2 ** 60 } },
    ].map((cmd) => entry(enc.encode(JSON.stringify(cmd))));
    await node.sm.apply(bad, confAt);
    expect(node.badEntries).toEqual(bad.map((e) => e.index));
    expect(node.incarnations.size).toBe(0);
  });
});
