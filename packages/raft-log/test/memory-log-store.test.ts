import { describe, expect, it } from "vitest";
import { isRaftError } from "../src/core/raft-error.js";
import { createMemoryLogStore, type MemoryLogStore } from "../src/storage/memory-log-store.js";
import type { LogStore } from "../src/storage-port.js";
import { ent, run, runLogStoreConformance } from "./log-store-conformance.js";

runLogStoreConformance("memory (immediate durability)", {
  create: async () => createMemoryLogStore(),
  // A restart of a node whose "disk" is this store: the view is rebuilt from durable state.
  reopen: async (s: LogStore) => {
    (s as MemoryLogStore).crash();
    return s;
  },
});

runLogStoreConformance("memory (manual durability, synced by a simulated disk)", {
  create: async () => autoSynced(createMemoryLogStore({ durability: "manual" })),
  reopen: async (s: LogStore) => {
    (s as MemoryLogStore).sync();
    (s as MemoryLogStore).crash();
    return s;
  },
  crash: {
    create: async () => autoSynced(createMemoryLogStore({ durability: "manual" })),
    crash: async (s: LogStore) => {
      (s as MemoryLogStore).crash();
      return s;
    },
  },
});

/** A simulated disk that syncs on the next macrotask, so a synchronous crash loses writes. */
function autoSynced(store: MemoryLogStore): MemoryLogStore {
  const save = store.save.bind(store);
  const compact = store.compact.bind(store);
  const later = <T>(p: Promise<T>): Promise<T> => {
    setImmediate(() => store.sync());
    return p;
  };
  return Object.assign(store, {
    save: (b: Parameters<LogStore["save"]>[0]) => later(save(b)),
    compact: (i: number, s: Parameters<LogStore["compact"]>[1]) => later(compact(i, s)),
  });
}

describe("MemoryLogStore crash simulation", () => {
  it("drops unsynced writes on crash and rejects their promises", async () => {
    const s = createMemoryLogStore({ durability: "manual" });
    const a = s.save({ entries: run(1, 2, 1), hardState: { term: 1, vote: 2, commit: 0 } });
    expect(s.pending).toBe(1);
    expect(s.lastIndex()).toBe(2); // accepted writes are visible before they are durable
    s.sync();
    await a;
    const b = s.save({ entries: [ent(3, 2)], hardState: { term: 2, vote: 3, commit: 0 } });
    s.crash();
    await expect(b).rejects.toSatisfy((e: unknown) => isRaftError(e, "unavailable"));
    expect(s.lastIndex()).toBe(2);
    expect(s.initialState().hardState).toEqual({ term: 1, vote: 2, commit: 0 });
    expect(s.pending).toBe(0);
  });

  it("loses an unsynced compaction but keeps a synced one", async () => {
    const s = createMemoryLogStore({ durability: "manual" });
    const a = s.save({ entries: run(1, 5, 1) });
    s.sync();
    await a;
    const c = s.compact(2, {
      metadata: { index: 2, term: 1, confState: s.initialState().confState },
      data: new Uint8Array(),
    });
    c.catch(() => undefined);
    expect(s.firstIndex()).toBe(3);
    s.crash();
    expect(s.firstIndex()).toBe(1);
    const d = s.compact(3, {
      metadata: { index: 3, term: 1, confState: s.initialState().confState },
      data: new Uint8Array(),
    });
    s.sync();
    await d;
    s.crash();
    expect(s.firstIndex()).toBe(4);
  });

  it("resolves synced writes in order", async () => {
    const s = createMemoryLogStore({ durability: "manual" });
    const order: number[] = [];
    const p1 = s.save({ entries: [ent(1, 1)] }).then(() => order.push(1));
    const p2 = s.save({ entries: [ent(2, 1)] }).then(() => order.push(2));
    s.sync();
    await Promise.all([p1, p2]);
    expect(order).toEqual([1, 2]);
  });
});

describe("LogState atomicity", () => {
  it("a save whose entries are invalid changes nothing, not even its snapshot", async () => {
    const s = createMemoryLogStore();
    await s.save({ entries: run(1, 3, 1) });
    const snapshot = {
      metadata: { index: 2, term: 1, confState: s.initialState().confState },
      data: new Uint8Array(),
    };
    await expect(
      s.save({ snapshot, entries: [ent(9, 1)], hardState: { term: 5, vote: 1, commit: 0 } }),
    ).rejects.toThrow(/gap/);
    expect(s.firstIndex()).toBe(1);
    expect(s.snapshot().metadata.index).toBe(0);
    expect(s.initialState().hardState.term).toBe(0);
  });
});
