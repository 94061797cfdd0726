// Conformance suite of the backend port (KvEngine / KvShard): every engine runs it.
import { describe, expect, it } from "vitest";
import { isStoreError, type KvEngine, type KvIterator, type KvShard } from "../src/index.js";

/** Options of {@link runKvEngineConformance}. */
export interface KvConformanceOptions {
  /** Suite title. */
  name: string;
  /** A fresh, empty engine. */
  createEngine: () => Promise<KvEngine>;
  /** Cleanup after the engine was closed. */
  dispose?: (engine: KvEngine) => Promise<void>;
}

const b = (...xs: number[]): Uint8Array => Uint8Array.from(xs);
const hex = (u: Uint8Array): string => Buffer.from(u).toString("hex");

async function drain(it: KvIterator, step = 2): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const rows = await it.next(step);
    if (rows.length === 0) break;
    for (const [k] of rows) out.push(hex(k));
  }
  await it.close();
  return out;
}

/** Runs the port conformance suite against an engine. */
export function runKvEngineConformance(options: KvConformanceOptions): void {
  const withShard = (fn: (shard: KvShard, engine: KvEngine) => Promise<void>) => async () => {
    const engine = await options.createEngine();
    try {
      await fn(await engine.openShard("s/0"), engine);
    } finally {
      await engine.close();
      await options.dispose?.(engine);
    }
  };

  describe(`kv engine conformance: ${options.name}`, () => {
    it(
      "gets, multi-gets and applies batches atomically, copying what it is given",
      withShard(async (kv) => {
        const value = b(9, 9);
        await kv.write([
          { type: "put", keyspace: "objects", key: b(1), value },
          { type: "put", keyspace: "objects", key: b(2), value: b(2) },
          { type: "put", keyspace: "blobs", key: b(1), value: b(7) },
        ]);
        value[0] = 0;
        expect(hex((await kv.get("objects", b(1))) ?? b())).toBe("0909");
        expect(await kv.get("system", b(1))).toBeUndefined();
        await kv.write([
          { type: "del", keyspace: "objects", key: b(1) },
          { type: "put", keyspace: "objects", key: b(3), value: b(3) },
          { type: "del", keyspace: "objects", key: b(99) },
        ]);
        expect(
          (await kv.getMany("objects", [b(1), b(2), b(3)])).map((v) =>
            v === undefined ? v : hex(v),
          ),
        ).toEqual([undefined, "02", "03"]);
        expect(hex((await kv.get("blobs", b(1))) ?? b())).toBe("07");
      }),
    );

    it(
      "iterates in byte order within bounds, both directions, with limits, keys only",
      withShard(async (kv) => {
        const keys = [b(1), b(1, 0), b(1, 0, 0), b(1, 1), b(2), b(2, 255), b(3)];
        await kv.write(
          keys.map((key) => ({ type: "put", keyspace: "objects", key, value: b(0xaa) })),
        );
        expect(await drain(kv.iterator("objects"))).toEqual([
          "01",
          "0100",
          "010000",
          "0101",
          "02",
          "02ff",
          "03",
        ]);
        expect(await drain(kv.iterator("objects", { gte: b(1, 0), lt: b(2) }))).toEqual([
          "0100",
          "010000",
          "0101",
        ]);
        expect(await drain(kv.iterator("objects", { gt: b(1, 0), lte: b(2) }))).toEqual([
          "010000",
          "0101",
          "02",
        ]);
        expect(await drain(kv.iterator("objects", { reverse: true, lt: b(2, 255) }))).toEqual([
          "02",
          "0101",
          "010000",
          "0100",
          "01",
        ]);
        expect(await drain(kv.iterator("objects", { limit: 3 }), 10)).toEqual([
          "01",
          "0100",
          "010000",
        ]);
        const ko = kv.iterator("objects", { keysOnly: true, gte: b(3) });
        const [row] = await ko.next(5);
        expect(row?.[1].length).toBe(0);
        await ko.close();
        const full = kv.iterator("objects", { gte: b(3) });
        expect(hex((await full.next(5))[0]?.[1] ?? b())).toBe("aa");
        await full.close();
      }),
    );

    it(
      "seeks forward within bounds (below the lower bound clamps to it); reverse seek is refused",
      withShard(async (kv) => {
        await kv.write(
          [1, 2, 3, 4, 5].map((n) => ({
            type: "put",
            keyspace: "objects",
            key: b(n),
            value: b(n),
          })),
        );
        const it = kv.iterator("objects", { gte: b(2), lt: b(5) });
        expect((await it.next(1)).map(([k]) => hex(k))).toEqual(["02"]);
        it.seek(b(4));
        expect((await it.next(10)).map(([k]) => hex(k))).toEqual(["04"]);
        it.seek(b(0));
        expect((await it.next(1)).map(([k]) => hex(k))).toEqual(["02"]);
        it.seek(b(9));
        expect(await it.next(1)).toEqual([]);
        await it.close();
        const rev = kv.iterator("objects", { reverse: true });
        expect(() => rev.seek(b(3))).toThrow();
        await rev.close();
      }),
    );

    it(
      "clears a key range of one keyspace of one shard, keeping everything outside it",
      withShard(async (kv, engine) => {
        const other = await engine.openShard("s/1");
        const keys = [b(1), b(2), b(2, 0), b(2, 255), b(3), b(4)];
        for (const shard of [kv, other]) {
          for (const keyspace of ["objects", "system"] as const) {
            await shard.write(keys.map((key) => ({ type: "put", keyspace, key, value: key })));
          }
        }
        await kv.clear("system", { gte: b(2), lt: b(4) });
        expect(await drain(kv.iterator("system"))).toEqual(["01", "04"]);
        expect(await kv.get("system", b(2, 255))).toBeUndefined();
        expect(await drain(kv.iterator("objects"))).toHaveLength(keys.length);
        expect(await drain(other.iterator("system"))).toHaveLength(keys.length);
        // An empty or inverted range removes nothing; a write after the clear is kept.
        await kv.clear("system", { gte: b(4), lt: b(4) });
        await kv.clear("system", { gte: b(4), lt: b(1) });
        await kv.write([{ type: "put", keyspace: "system", key: b(2), value: b(2) }]);
        expect(await drain(kv.iterator("system"))).toEqual(["01", "02", "04"]);
        // In call order with writes not yet done: the first put goes, the second stays.
        await Promise.all([
          kv.write([{ type: "put", keyspace: "system", key: b(5), value: b(5) }], { sync: false }),
          kv.clear("system", { gte: b(5), lt: b(6) }),
          kv.write([{ type: "put", keyspace: "system", key: b(5, 1), value: b(5) }], {
            sync: false,
          }),
        ]);
        expect(await drain(kv.iterator("system"))).toEqual(["01", "02", "04", "0501"]);
      }),
    );

    it(
      "gives iterators a point-in-time view",
      withShard(async (kv) => {
        await kv.write(
          [1, 2, 3].map((n) => ({ type: "put", keyspace: "objects", key: b(n), value: b(n) })),
        );
        const it = kv.iterator("objects");
        expect((await it.next(1)).map(([k]) => hex(k))).toEqual(["01"]);
        await kv.write([
          { type: "del", keyspace: "objects", key: b(2) },
          { type: "put", keyspace: "objects", key: b(3), value: b(33) },
          { type: "put", keyspace: "objects", key: b(4), value: b(4) },
        ]);
        const rest = await it.next(10);
        expect(rest.map(([k, v]) => `${hex(k)}=${hex(v)}`)).toEqual(["02=02", "03=03"]);
        await it.close();
        expect(await drain(kv.iterator("objects"))).toEqual(["01", "03", "04"]);
      }),
    );

    it(
      "isolates shards and keyspaces, lists shards, returns one object per shard name",
      withShard(async (kv, engine) => {
        const other = await engine.openShard("s/1");
        expect(await engine.openShard("s/0")).toBe(kv);
        await kv.write([{ type: "put", keyspace: "objects", key: b(1), value: b(1) }]);
        await other.write([{ type: "put", keyspace: "objects", key: b(2), value: b(2) }]);
        expect(await drain(kv.iterator("objects"))).toEqual(["01"]);
        expect(await drain(other.iterator("objects"))).toEqual(["02"]);
        expect(await drain(kv.iterator("system"))).toEqual([]);
        expect(await engine.listShards()).toEqual(["s/0", "s/1"]);
        await expect(engine.openShard("")).rejects.toSatisfy((e: unknown) =>
          isStoreError(e, "invalid_argument"),
        );
      }),
    );

    it("fails every call after close with `closed`", async () => {
      const engine = await options.createEngine();
      const kv = await engine.openShard("s/0");
      await engine.close();
      await engine.close();
      await expect(kv.get("objects", b(1))).rejects.toSatisfy((e: unknown) =>
        isStoreError(e, "closed"),
      );
      await expect(
        kv.write([{ type: "put", keyspace: "objects", key: b(1), value: b(1) }]),
      ).rejects.toSatisfy((e: unknown) => isStoreError(e, "closed"));
      await expect(kv.clear("objects", { gte: b(0), lt: b(9) })).rejects.toSatisfy((e: unknown) =>
        isStoreError(e, "closed"),
      );
      await expect(engine.openShard("s/1")).rejects.toSatisfy((e: unknown) =>
        isStoreError(e, "closed"),
      );
      await options.dispose?.(engine);
    });
  });
}
