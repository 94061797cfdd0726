// The write path's ordering and durability rules, over the memory engine behind a gate
// that holds writes like an fsync in flight and can fail them like a full disk.
import { create } from "@bufbuild/protobuf";
import { type ValData, ValDataSchema } from "@oprc/grpc-api/messages";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { startsWith } from "./bytes.js";
import { changeKey } from "./change-log.js";
import { createEntryStore, type EntryStore, type EntryStoreOptions } from "./entry-store.js";
import type { KvEngine, KvShard, KvWriteOp } from "./kv.js";
import { createMemoryEngine } from "./memory-engine.js";
import { latestWrites } from "./ordered-applier.js";
import { isStoreError, StoreError } from "./store-error.js";
import type { MutationResult } from "./types.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
const val = (s: string): ValData => create(ValDataSchema, { data: enc.encode(s) });

interface Held {
  ops: readonly KvWriteOp[];
  resolve(): void;
  reject(e: unknown): void;
}

/**
 * A memory engine whose writes wait at a gate, in order, like a group-commit writer with a
 * sync in flight: nothing reaches storage until `release()`. `fail()` rejects the first held
 * write and every write queued behind it, as the shared writer does.
 */
function gatedEngine(): {
  engine: KvEngine;
  held: Held[];
  hold(): void;
  release(n?: number): Promise<void>;
  fail(): Promise<void>;
} {
  const inner = createMemoryEngine();
  const held: Held[] = [];
  let gateOpen = true;
  const engine: KvEngine = {
    kind: "gated",
    async openShard(name) {
      const shard = await inner.openShard(name);
      const gated: KvShard = {
        name,
        get: (ks, key) => shard.get(ks, key),
        getMany: (ks, keys) => shard.getMany(ks, keys),
        iterator: (ks, o) => shard.iterator(ks, o),
        clear: (ks, range) => shard.clear(ks, range),
        write(ops, options) {
          if (gateOpen) return shard.write(ops, options);
          return new Promise<void>((resolve, reject) => {
            held.push({
              ops,
              resolve: () => shard.write(ops, options).then(resolve, reject),
              reject,
            });
          });
        },
      };
      return gated;
    },
    listShards: () => inner.listShards(),
    close: () => inner.close(),
  };
  const settle = () => new Promise((r) => setTimeout(r, 5));
  return {
    engine,
    held,
    hold() {
      gateOpen = false;
    },
    async release(n = held.length) {
      for (const h of held.splice(0, n)) h.resolve();
      await settle();
    },
    async fail() {
      const e = new StoreError("io", "No space left on device");
      for (const h of held.splice(0)) h.reject(e);
      await settle();
    },
  };
}

async function open(engine: KvEngine, extra: Partial<EntryStoreOptions> = {}): Promise<EntryStore> {
  return createEntryStore({ engine, shard: "t/0", ...extra });
}
const tick = () => new Promise((r) => setTimeout(r, 5));

describe("ordered applier", () => {
  it("plans every mutation of one object while earlier writes are in flight (no lock through the fsync)", async () => {
    const gate = gatedEngine();
    const store = await open(gate.engine);
    gate.hold();
    const done = Array.from({ length: 50 }, (_, i) =>
      store.setEntry("hot", `k${i % 7}`, val(String(i))),
    );
    await tick();
    // All 50 were planned and handed to the engine although none is durable yet.
    expect(gate.held).toHaveLength(50);
    await gate.release();
    const results = await Promise.all(done);
    expect(results.map((r) => r.versionAfter)).toEqual(
      Array.from({ length: 50 }, (_, i) => BigInt(i + 1)),
    );
    expect(results.slice(0, 7).every((r) => r.changed[0]?.action === "create")).toBe(true);
    expect(results.slice(7).every((r) => r.changed[0]?.action === "update")).toBe(true);
    expect((await store.getMetadata("hot"))?.entryCount).toBe(7n);
    await store.close();
  });

  it("plans a fully cached object at once, after the calls still waiting for its lock", async () => {
    const gate = gatedEngine();
    const store = await open(gate.engine);
    await store.setEntry("o", "a", val("0")); // cached from here on, with `a` known
    gate.hold();
    // `b` is unknown: read under the object's lock. The calls behind it wait for that lock.
    const first = store.setEntry("o", "b", val("1"));
    const queued = [store.setEntry("o", "a", val("2")), store.setEntry("o", "a", val("3"))];
    await tick();
    expect(gate.held).toHaveLength(3);
    // Nothing to read and nobody holding the lock: planned and handed to the engine before
    // the call returns.
    const known = store.setEntry("o", "a", val("4"));
    expect(gate.held).toHaveLength(4);
    // A write planned at once still waits for its durability.
    let answered = false;
    void known.then(() => {
      answered = true;
    });
    await tick();
    expect(answered).toBe(false);
    await gate.release();
    const results = await Promise.all([first, ...queued, known]);
    expect(results.map((r) => r.versionAfter)).toEqual([2n, 3n, 4n, 5n]);
    expect(results.map((r) => r.changed[0]?.action)).toEqual([
      "create",
      "update",
      "update",
      "update",
    ]);
    expect(dec.decode((await store.getEntry("o", "a")).entry?.value.data)).toBe("4");
    await store.close();
  });

  it("answers only once durable, and reads never see what is not durable", async () => {
    const gate = gatedEngine();
    const store = await open(gate.engine);
    gate.hold();
    let answered = false;
    const w = store.setEntry("o", "a", val("1")).then((r) => {
      answered = true;
      return r;
    });
    await tick();
    expect(answered).toBe(false);
    expect(await store.getEntry("o", "a")).toEqual({ objectVersion: undefined, entry: undefined });
    expect(await store.getMetadata("o")).toBeUndefined();
    await gate.release();
    expect((await w).versionAfter).toBe(1n);
    expect(dec.decode((await store.getEntry("o", "a")).entry?.value.data)).toBe("1");
    await store.close();
  });

  it("a no-op or a failed CAS that depends on a pending write waits for it, and replans if it fails", async () => {
    const gate = gatedEngine();
    const store = await open(gate.engine);
    gate.hold();
    const first = store.setEntry("o", "a", val("1")).catch((e: unknown) => e);
    await tick();
    let casAnswered = false;
    const cas = store
      .batch("o", { set: [["b", val("2")]] }, { expectedVersion: 0n })
      .then(
        (r) => r,
        (e: unknown) => e,
      )
      .finally(() => {
        casAnswered = true;
      });
    await tick();
    // Planned against version 1 (not durable): the mismatch is not told before it is.
    expect(casAnswered).toBe(false);
    await gate.fail();
    // The pending write failed: version 1 never existed, so the CAS on 0 now succeeds.
    expect(await first).toMatchObject({ code: "io" });
    await tick();
    await gate.release();
    const r = (await cas) as MutationResult;
    expect(r.versionAfter).toBe(1n);
    expect((await store.getMetadata("o"))?.version).toBe(1n);
    expect((await store.getEntry("o", "a")).entry).toBeUndefined();
    await store.close();
  });

  it("a failed group fails every mutation planned on it; the next ones plan from storage again", async () => {
    const gate = gatedEngine();
    const store = await open(gate.engine);
    await Promise.all([store.setEntry("o", "a", val("1")), store.setEntry("p", "a", val("1"))]);
    gate.hold();
    const pending = [
      store.setEntry("o", "b", val("2")),
      store.deleteObject("p"),
      store.setEntry("o", "c", val("3")),
    ].map((p) =>
      p.then(
        () => "ok",
        (e: unknown) => (isStoreError(e) ? e.code : "other"),
      ),
    );
    await tick();
    expect(gate.held.length).toBe(3);
    await gate.fail();
    expect(await Promise.all(pending)).toEqual(["io", "io", "io"]);
    // Nothing of the failed writes shows, and the write path continues from storage.
    const next = store.setEntry("o", "d", val("4"));
    await tick();
    await gate.release();
    expect((await next).versionAfter).toBe(2n);
    const meta = await store.getMetadata("o");
    expect(meta).toMatchObject({ version: 2n, entryCount: 2n });
    expect(store.stats().liveObjects).toBe(2n);
    await store.close();
  });

  it("tells onApplied of every durable mutation in commit order", async () => {
    const seen: string[] = [];
    const store = await open(createMemoryEngine(), {
      onApplied: (id, r) => seen.push(`${id}@${r.versionAfter}`),
    });
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.setEntry(i % 2 === 0 ? "x" : "y", "k", val(String(i))),
      ),
    );
    await store.deleteEntry("x", "missing"); // a no-op is not told
    expect(seen.filter((s) => s.startsWith("x@"))).toEqual(
      Array.from({ length: 10 }, (_, i) => `x@${i + 1}`),
    );
    expect(seen.filter((s) => s.startsWith("y@"))).toEqual(
      Array.from({ length: 10 }, (_, i) => `y@${i + 1}`),
    );
    await store.close();
  });

  it("stays exact with a tiny object cache (evicted objects reload from storage)", async () => {
    const store = await open(createMemoryEngine(), { objectCacheSize: 2 });
    for (let round = 1; round <= 3; round++) {
      await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.setEntry(`o${i}`, `r${round}`, val("v"))),
      );
    }
    for (let i = 0; i < 10; i++) {
      expect(await store.getMetadata(`o${i}`)).toMatchObject({ version: 3n, entryCount: 3n });
    }
    expect(store.stats().liveObjects).toBe(10n);
    await store.close();
  });
});

describe("remembered entry presence", () => {
  /** A memory engine counting the multi-gets that name entry keys (not metadata reads). */
  function readCounting(): { engine: KvEngine; entryReads: () => number } {
    const inner = createMemoryEngine();
    let reads = 0;
    return {
      entryReads: () => reads,
      engine: {
        kind: "counting",
        async openShard(name) {
          const shard = await inner.openShard(name);
          return {
            ...shard,
            name,
            get: (ks, key) => shard.get(ks, key),
            iterator: (ks, o) => shard.iterator(ks, o),
            write: (ops, o) => shard.write(ops, o),
            getMany(ks, keys) {
              // A cache miss reads metadata and event config plus the entries (3+ keys);
              // an entry read of a cached object names the entries only.
              if (keys.length < 3) reads++;
              return shard.getMany(ks, keys);
            },
          };
        },
        listShards: () => inner.listShards(),
        close: () => inner.close(),
      },
    };
  }

  it("sets and deletes an entry whose presence is known without reading it", async () => {
    const { engine, entryReads } = readCounting();
    const store = await open(engine);
    const actions: (string | undefined)[] = [];
    const note = (r: MutationResult) => actions.push(r.changed[0]?.action);
    note(await store.setEntry("o", "a", val("1"))); // a miss: read with the metadata
    note(await store.setEntry("o", "a", val("2")));
    note(await store.deleteEntry("o", "a"));
    note(await store.deleteEntry("o", "a"));
    note(await store.setEntry("o", "a", val("3")));
    expect(actions).toEqual(["create", "update", "delete", undefined, "create"]);
    expect(entryReads()).toBe(0);
    expect((await store.getMetadata("o"))?.entryCount).toBe(1n);
    // Another key of the cached object is read once, then known.
    await store.setEntry("o", "b", val("1"));
    await store.setEntry("o", "b", val("2"));
    expect(entryReads()).toBe(1);
    expect((await store.getMetadata("o"))?.entryCount).toBe(2n);
    await store.close();
  });

  it("forgets what it knew when the store's records are replaced", async () => {
    const { engine } = readCounting();
    const store = await open(engine);
    await store.setEntry("o", "a", val("1"));
    const withA = await store.exportState();
    expect((await store.deleteEntry("o", "a")).changed[0]?.action).toBe("delete");
    // Storage has `a` again; the cache said it was gone.
    await store.importState(withA);
    expect((await store.setEntry("o", "a", val("2"))).changed[0]?.action).toBe("update");
    expect((await store.getMetadata("o"))?.entryCount).toBe(1n);
    await store.close();
  });

  it("gives every replica the same outcomes through applyCommitted", async () => {
    const { engine, entryReads } = readCounting();
    const store = await open(engine);
    const op = (i: number, kind: "set_entry" | "delete_entry") => ({
      index: i,
      op:
        kind === "set_entry"
          ? {
              kind,
              cls: "t",
              partition: 0,
              objectId: "o",
              timestampMs: 1,
              key: "a",
              value: val(String(i)),
            }
          : { kind, cls: "t", partition: 0, objectId: "o", timestampMs: 1, key: "a" },
    });
    const results = [
      ...(await store.applyCommitted([op(1, "set_entry"), op(2, "set_entry")])),
      ...(await store.applyCommitted([op(3, "delete_entry"), op(4, "set_entry")])),
      ...(await store.applyCommitted([op(5, "set_entry")])),
    ];
    expect(results.map((r) => (r instanceof StoreError ? r.code : r?.changed[0]?.action))).toEqual([
      "create",
      "update",
      "delete",
      "create",
      "update",
    ]);
    expect(entryReads()).toBe(0);
    await store.close();
  });
});

describe("a hot object in one applied batch", () => {
  it("has its keys written once, leaving the same records", async () => {
    const gate = gatedEngine();
    const store = await open(gate.engine, { changeLog: {} });
    const set = (index: number, objectId: string, key: string) => ({
      index,
      op: { kind: "set_entry", objectId, timestampMs: 1, key, value: val(String(index)) } as const,
    });
    const del = (index: number, objectId: string, key: string) => ({
      index,
      op: { kind: "delete_entry", objectId, timestampMs: 1, key } as const,
    });
    gate.hold();
    const applying = store.applyCommitted([
      set(1, "hot", "a"),
      set(2, "hot", "b"),
      set(3, "cold", "a"),
      del(4, "hot", "a"),
      ...Array.from({ length: 8 }, (_, i) => set(5 + i, "hot", "a")),
      del(13, "hot", "b"),
    ]);
    await tick();
    expect(gate.held).toHaveLength(1);
    const ops = (gate.held[0] as Held).ops;
    // hot: its entries a and b and its metadata once each; cold: one entry and its metadata.
    expect(ops.filter((o) => o.keyspace === "objects")).toHaveLength(5);
    // Every mutation keeps its change record.
    const record = changeKey(1n).subarray(0, -8);
    const isRecord = (o: KvWriteOp) =>
      o.keyspace === "system" && o.key.length === record.length + 8 && startsWith(o.key, record);
    expect(ops.filter(isRecord)).toHaveLength(13);
    await gate.release();
    const results = await applying;
    expect(results.map((r) => (r instanceof StoreError ? r.code : r?.versionAfter))).toEqual([
      1n,
      2n,
      1n,
      3n,
      4n,
      5n,
      6n,
      7n,
      8n,
      9n,
      10n,
      11n,
      12n,
    ]);
    const value = async (id: string, key: string) => {
      const got = (await store.getEntry(id, key)).entry;
      return got === undefined ? undefined : dec.decode(got.value.data);
    };
    expect(await value("hot", "a")).toBe("12");
    expect(await value("hot", "b")).toBeUndefined();
    expect(await value("cold", "a")).toBe("3");
    const meta = await store.getMetadata("hot");
    expect([meta?.version, meta?.entryCount]).toEqual([12n, 1n]);
    await store.close();
  });
});

describe("latestWrites", () => {
  const write = fc.record({
    type: fc.constantFrom("put" as const, "del" as const),
    keyspace: fc.constantFrom("objects" as const, "blobs" as const),
    key: fc.uint8Array({ minLength: 0, maxLength: 3, max: 2 }),
    value: fc.uint8Array({ maxLength: 2 }),
  });
  const item = fc.record({
    id: fc.constantFrom("x", "y", "z"),
    // A plan writes a key at most once.
    writes: fc.uniqueArray(write, {
      maxLength: 4,
      selector: (w) => `${w.keyspace}/${w.key.join(",")}`,
    }),
  });
  const asItems = (xs: { id: string; writes: readonly KvWriteOp[] }[]) =>
    xs.map(({ id, writes }) => ({ id, plan: { writes } }));
  const apply = (ops: readonly KvWriteOp[]) => {
    const state = new Map<string, string>();
    for (const o of ops) {
      const k = `${o.keyspace}/${o.key.join(",")}`;
      if (o.type === "put") state.set(k, o.value.join(","));
      else state.delete(k);
    }
    return state;
  };

  it("leaves what writing every write in order leaves, keeping each object's last write per key in order", () => {
    fc.assert(
      fc.property(fc.array(item, { maxLength: 8 }), (xs) => {
        const items = asItems(xs);
        const all = items.flatMap((i) => i.plan.writes);
        const kept = latestWrites(items);
        expect(apply(kept)).toEqual(apply(all));
        // A subsequence of every write, in the same order.
        let at = 0;
        for (const w of kept) {
          at = all.indexOf(w, at) + 1;
          expect(at).toBeGreaterThan(0);
        }
        // No object keeps two writes of one key.
        const owner = new Map(items.flatMap((i) => i.plan.writes.map((w) => [w, i.id] as const)));
        const keys = kept.map((w) => `${owner.get(w)}|${w.keyspace}/${w.key.join(",")}`);
        expect(new Set(keys).size).toBe(keys.length);
      }),
      { numRuns: 500 },
    );
  });

  it("passes a batch of distinct objects through untouched", () => {
    fc.assert(
      fc.property(fc.uniqueArray(item, { selector: (i) => i.id, maxLength: 3 }), (xs) => {
        const items = asItems(xs);
        expect(latestWrites(items)).toEqual(items.flatMap((i) => i.plan.writes));
      }),
    );
  });
});
