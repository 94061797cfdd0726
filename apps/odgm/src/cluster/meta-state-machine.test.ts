// The metadata group's replica sets: a newer configuration replaces an older one (never the
// reverse), they survive a reopen and travel in a snapshot, and a malformed one is refused
// without changing anything. Run on RocksDB and on the in-memory engine.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMemoryEngine, type KvEngine } from "@oprc/entry-store";
import { openRocksEngine } from "@oprc/entry-store/rocksdb";
import type { Entry } from "@oprc/raft-log";
import { afterEach, describe, expect, it } from "vitest";
import { openCollectionRegistry } from "../collections/collection-registry.js";
import { encodeMetaCommand, openMetaStateMachine, type ReplicaSet } from "./meta-state-machine.js";

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
  const badEntries: number[] = [];
  const sm = await openMetaStateMachine({
    shard,
    registry: await openCollectionRegistry(shard),
    addresses: new Map(),
    replicaSets,
    onReplicaSet: (group, r) => seen.push([group, r]),
    onCollection: async () => undefined,
    onBadEntry: (_err, index) => badEntries.push(index),
  });
  return { sm, replicaSets, badEntries };
}

let index = 0;
const entry = (data: Uint8Array): Entry => ({ index: ++index, term: 1, type: "normal", data });
const setReplicas = (group: string, replicas: ReplicaSet) =>
  entry(encodeMetaCommand({ setReplicas: { group, replicas } }));

describe.each(engines)("the metadata group's replica sets (%s)", (_name, makeEngine) => {
  it("keeps the newest configuration of each group, across a reopen", async () => {
    const reopen = await makeEngine();
    const seen: [string, ReplicaSet][] = [];
    const first = await open(await reopen(), seen);
    const moved = { voters: [2, 3], learners: [], confIndex: 40 };
    await first.sm.apply([
      setReplicas("c/0", { voters: [1, 2, 3], learners: [4], confIndex: 30 }),
      setReplicas("c/0", moved),
      // Published late by an old leader: an older configuration changes nothing.
      setReplicas("c/0", { voters: [1, 2], learners: [], confIndex: 35 }),
      setReplicas("c/1", { voters: [5], learners: [], confIndex: 7 }),
    ]);
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
    await from.sm.apply([setReplicas("c/0", { voters: [2, 3], learners: [1], confIndex: 12 })]);
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
    await node.sm.apply(bad);
    expect(node.badEntries).toEqual(bad.map((e) => e.index));
    expect(node.replicaSets.size).toBe(0);
    expect(node.sm.appliedIndex()).toBe(index);
  });
});
