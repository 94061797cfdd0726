// A read of a legacy object that races with its conversion (online backfill) must never
// report the object missing: the metadata read misses (not converted yet), the blob read
// misses (converted by then) — the store must read the granular records again.
import { create } from "@bufbuild/protobuf";
import { ValDataSchema } from "@oprc/grpc-api";
import { describe, expect, it } from "vitest";
import {
  createEntryStore,
  createMemoryEngine,
  type EntryStore,
  type KvEngine,
  type KvShard,
} from "../src/index.js";

const val = (s: string) => create(ValDataSchema, { data: new TextEncoder().encode(s) });

/** An engine whose shard runs `hook` (once) just before the next blob read is served. */
function interceptingEngine(base: KvEngine): KvEngine & { arm(hook: () => Promise<void>): void } {
  let hook: (() => Promise<void>) | undefined;
  const shards = new Map<string, KvShard>();
  return {
    kind: base.kind,
    arm(h: () => Promise<void>): void {
      hook = h;
    },
    async openShard(name: string): Promise<KvShard> {
      const cached = shards.get(name);
      if (cached !== undefined) return cached;
      const inner = await base.openShard(name);
      const shard: KvShard = {
        name,
        async get(ks, key) {
          if (ks === "blobs" && hook !== undefined) {
            const h = hook;
            hook = undefined;
            await h();
          }
          return inner.get(ks, key);
        },
        getMany: (ks, keys) => inner.getMany(ks, keys),
        iterator: (ks, o) => inner.iterator(ks, o),
        write: (ops, o) => inner.write(ops, o),
        clear: (ks, range) => inner.clear(ks, range),
      };
      shards.set(name, shard);
      return shard;
    },
    listShards: () => base.listShards(),
    close: () => base.close(),
  };
}

describe("legacy read racing with conversion", () => {
  const reads: [string, (s: EntryStore) => Promise<unknown>, (r: unknown) => void][] = [
    [
      "getMetadata",
      (s) => s.getMetadata("55"),
      (r) => expect(r).toMatchObject({ legacy: false, version: 0n }),
    ],
    [
      "getEntry",
      (s) => s.getEntry("55", "1"),
      (r) => expect(r).toMatchObject({ objectVersion: 0n, entry: { key: "1" } }),
    ],
    [
      "getObject",
      (s) => s.getObject("55"),
      (r) => expect(r).toMatchObject({ legacy: false, version: 0n }),
    ],
    [
      "listEntries",
      (s) => s.listEntries("55"),
      (r) => expect((r as { entries: unknown[] }).entries).toHaveLength(1),
    ],
  ];
  for (const [name, read, check] of reads) {
    it(`${name} sees the converted object, never a missing one`, async () => {
      const engine = interceptingEngine(createMemoryEngine());
      const legacy = await createEntryStore({ engine, shard: "r/0", granular: false });
      await legacy.setEntry("55", "1", val("one"));
      await legacy.close();
      const store = await createEntryStore({ engine, shard: "r/0" });
      engine.arm(async () => {
        expect(await store.convertLegacyObject(55n)).toEqual({
          converted: true,
          entries: 1,
          blobRemoved: true,
        });
      });
      check(await read(store));
      expect(store.stats().blobFallbackReads).toBe(0);
      await store.close();
    });
  }
});
