import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import {
  ChangeAction,
  ChangeRecordSchema,
  ObjectEventSchema,
  ValDataSchema,
} from "@oprc/grpc-api/messages";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { changeKey, decodeChangeRecord, RecentChanges } from "./change-log.js";
import { createEntryStore, type EntryStore } from "./entry-store.js";
import type { KvEngine } from "./kv.js";
import { createMemoryEngine } from "./memory-engine.js";
import type { StoreOp } from "./mutation-planner.js";
import { openRocksEngine } from "./rocksdb-engine.js";

const v = (s: string) => create(ValDataSchema, { data: new TextEncoder().encode(s) });
const dirs: string[] = [];
const engines: KvEngine[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) await e.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function rocks(dir = mkdtempSync(join(tmpdir(), "change-log-"))): Promise<KvEngine> {
  if (!dirs.includes(dir)) dirs.push(dir);
  const e = await openRocksEngine({ location: dir });
  engines.push(e);
  return e;
}

async function storeOn(engine: KvEngine, values = false): Promise<EntryStore> {
  return createEntryStore({ engine, shard: "c/0", changeLog: { values }, now: () => 1_000 });
}

describe("the change log (RocksDB)", () => {
  it("records every mutation that writes, numbered from 1, and nothing for no-ops", async () => {
    const store = await storeOn(await rocks());
    const log = store.changes;
    if (log === undefined) throw new Error("no change log");
    await store.setEntry("42", "a", v("1"));
    await store.setEntry("user-1", "name", v("x"));
    await store.deleteEntry("user-1", "missing"); // changes nothing
    await store.batch("42", {
      set: [
        ["a", v("2")],
        ["7", v("n")],
      ],
      delete: [],
    });
    await store.deleteObject("user-1");
    expect(log.head()).toBe(4n);
    const records = await log.read(1n, 100);
    expect(
      records.map((r) => [
        r.revision,
        r.objectIdStr,
        r.objectId,
        r.versionBefore,
        r.versionAfter,
        r.exists,
        r.changes.map((c) => `${c.key}:${ChangeAction[c.action]}:${c.numeric}`),
      ]),
    ).toEqual([
      [1n, "42", 42n, 0n, 1n, true, ["a:CREATE:false"]],
      [2n, "user-1", undefined, 0n, 1n, true, ["name:CREATE:false"]],
      [3n, "42", 42n, 1n, 2n, true, ["7:CREATE:true", "a:UPDATE:false"]],
      [4n, "user-1", undefined, 1n, 2n, false, ["name:DELETE:false"]],
    ]);
    expect(records[0]?.timestampMs).toBe(1_000n);
    expect(records[0]?.changes[0]?.value).toBeUndefined();
    expect((await log.read(3n, 1)).map((r) => r.revision)).toEqual([3n]);
  });

  it("holds the newest records in memory only while the log has subscribers", async () => {
    const store = await storeOn(await rocks());
    const log = store.changes;
    if (log === undefined) throw new Error("no change log");
    const twice = async (rev: bigint) => [(await log.read(rev, 1))[0], (await log.read(rev, 1))[0]];
    await store.setEntry("a", "k", v("1"));
    // Nobody subscribes: each read decodes the record from storage again.
    const [x1, x2] = await twice(1n);
    expect(x1).toEqual(x2);
    expect(x1).not.toBe(x2);
    const unsubscribe = log.subscribe(() => undefined);
    await store.setEntry("a", "k", v("2"));
    await store.setEntry("a", "k", v("3"));
    // A subscriber: the records written since are served from memory (the same objects).
    const [y1, y2] = await twice(2n);
    expect(y1).toBe(y2);
    unsubscribe();
    await store.setEntry("a", "k", v("4"));
    const [z1, z2] = await twice(2n);
    expect(z1).toEqual(y1);
    expect(z1).not.toBe(z2);
    expect((await log.read(1n, 10)).map((r) => [r.revision, r.versionAfter])).toEqual([
      [1n, 1n],
      [2n, 2n],
      [3n, 3n],
      [4n, 4n],
    ]);
  });

  it("keeps the head across a restart and continues from it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "change-log-"));
    const first = await rocks(dir);
    const a = await storeOn(first);
    await a.setEntry("o", "k", v("1"));
    await a.setEntry("o", "k", v("2"));
    await first.close();
    engines.splice(engines.indexOf(first), 1);
    const b = await storeOn(await rocks(dir));
    expect(b.changes?.head()).toBe(2n);
    await b.setEntry("o", "k", v("3"));
    expect((await b.changes?.read(1n, 10))?.map((r) => r.revision)).toEqual([1n, 2n, 3n]);
  });

  it("records new values when asked", async () => {
    const store = await storeOn(await rocks(), true);
    await store.setEntry("o", "k", v("hello"));
    const [r] = (await store.changes?.read(1n, 1)) ?? [];
    expect(new TextDecoder().decode(r?.changes[0]?.value?.data)).toBe("hello");
  });

  it("assigns the same revisions on replicas applying the same log", async () => {
    const ops: StoreOp[] = [];
    for (let i = 0; i < 50; i++) {
      ops.push({
        kind: "set_entry",
        objectId: i % 3 === 0 ? `s-${i % 7}` : String(i % 5),
        key: `k${i % 4}`,
        value: v(String(i)),
        timestampMs: 5_000 + i,
      });
      if (i % 10 === 9) ops.push({ kind: "delete_object", objectId: "1", timestampMs: 6_000 + i });
    }
    const replicas = [await storeOn(await rocks()), await storeOn(createMemoryEngine())];
    for (const r of replicas) {
      // Different batchings of the same log.
      const step = r === replicas[0] ? 7 : 3;
      for (let i = 0; i < ops.length; i += step) {
        await r.applyCommitted(ops.slice(i, i + step).map((op, j) => ({ index: i + j + 1, op })));
      }
    }
    const [a, b] = await Promise.all(replicas.map((r) => r.changes?.read(1n, 1000)));
    expect(a?.length).toBeGreaterThan(40);
    expect(b).toEqual(a);
  });

  it("travels with a snapshot", async () => {
    const src = await storeOn(await rocks());
    for (let i = 0; i < 5; i++) await src.setEntry("o", "k", v(String(i)));
    const state = await src.exportState();
    const dst = await storeOn(createMemoryEngine());
    await dst.importState(state);
    expect(dst.changes?.head()).toBe(5n);
    expect(await dst.changes?.read(1n, 10)).toEqual(await src.changes?.read(1n, 10));
    await dst.setEntry("o", "k", v("next"));
    expect(dst.changes?.head()).toBe(6n);
  });

  it("compacts by count and by age, keeping the newest record", async () => {
    let now = 1_000;
    const store = await createEntryStore({
      engine: await rocks(),
      shard: "c/0",
      changeLog: {},
      now: () => now,
    });
    for (let i = 0; i < 10; i++) {
      now = 1_000 + i * 100;
      await store.setEntry("o", `k${i}`, v("x"));
    }
    const log = store.changes;
    if (log === undefined) throw new Error("no change log");
    expect(await log.oldest()).toBe(1n);
    expect(await log.compact({ maxRecords: 6, maxAgeMs: 1e12 }, now)).toBe(4);
    expect(await log.oldest()).toBe(5n);
    // Records older than 250 ms at t=1,900: timestamps < 1,650 (revisions 5–7).
    expect(await log.compact({ maxRecords: 1_000, maxAgeMs: 250 }, 1_900)).toBe(3);
    expect(await log.oldest()).toBe(8n);
    // Everything is old: the head record stays.
    await log.compact({ maxRecords: 1_000, maxAgeMs: 0 }, 1e9);
    expect(await log.oldest()).toBe(10n);
    expect((await log.read(1n, 100)).map((r) => r.revision)).toEqual([10n]);
  });

  it("removes a backlog of any size in one call (12,000 records, beyond the old 10,000 a run)", async () => {
    let now = 0;
    const store = await createEntryStore({
      engine: await rocks(),
      shard: "c/0",
      changeLog: {},
      now: () => now,
      sync: false,
    });
    for (let i = 1; i <= 12_000; i++) {
      now = i;
      await store.setEntry("o", "k", v("x"));
    }
    const log = store.changes;
    if (log === undefined) throw new Error("no change log");
    // By count: 11,500 go at once.
    expect(await log.compact({ maxRecords: 500, maxAgeMs: 1e12 }, now)).toBe(11_500);
    expect(await log.oldest()).toBe(11_501n);
    // By age, between two records: timestamps below 11,800 go.
    expect(await log.compact({ maxRecords: 1e9, maxAgeMs: 200 }, 12_000)).toBe(299);
    expect(await log.oldest()).toBe(11_800n);
    expect((await log.read(1n, 10)).map((r) => r.revision)).toEqual([
      11_800n,
      11_801n,
      11_802n,
      11_803n,
      11_804n,
      11_805n,
      11_806n,
      11_807n,
      11_808n,
      11_809n,
    ]);
    // Writing on after a compaction works, and nothing is left to remove.
    await store.setEntry("o", "k", v("y"));
    expect(log.head()).toBe(12_001n);
    expect(await log.compact({ maxRecords: 1e9, maxAgeMs: 1e12 }, now)).toBe(0);
  });

  it("holds records a reader has not finished, and stores readers' cursors", async () => {
    const store = await storeOn(await rocks());
    for (let i = 0; i < 10; i++) await store.setEntry("o", `k${i}`, v("x"));
    const log = store.changes;
    if (log === undefined) throw new Error("no change log");
    // Everything is old (records at t=1,000, compacted at t=1e9), but revision 4 on is held.
    expect(await log.compact({ maxRecords: 1, maxAgeMs: 0, holdFrom: 4n }, 1e9)).toBe(3);
    expect(await log.oldest()).toBe(4n);
    expect(await log.compact({ maxRecords: 1, maxAgeMs: 0, holdFrom: 1n }, 1e9)).toBe(0);
    expect(await log.cursors()).toEqual(new Map());
    await log.saveCursors(
      new Map([
        ["t/ü", 7n],
        ["", 3n],
      ]),
    );
    await log.saveCursors(new Map([["t/x", 9n]]));
    expect(await log.cursors()).toEqual(
      new Map([
        ["", 3n],
        ["t/x", 9n],
        ["t/ü", 7n],
      ]),
    );
    await log.saveCursors(new Map([["t/x", undefined]]));
    expect(await log.cursors()).toEqual(
      new Map([
        ["", 3n],
        ["t/ü", 7n],
      ]),
    );
  });

  it("records the object's trigger configuration only when asked", async () => {
    const event = create(ObjectEventSchema, {
      dataTriggerStr: { k: { onCreate: [{ clsId: "c", fnId: "f" }] } },
    });
    for (const triggers of [false, true]) {
      const store = await createEntryStore({
        engine: createMemoryEngine(),
        shard: "c/0",
        changeLog: { triggers },
      });
      await store.setEventConfig("o", event);
      await store.setEntry("o", "k", v("x"));
      await store.deleteObject("o");
      await store.setEntry("plain", "k", v("x"));
      const records = (await store.changes?.read(1n, 10)) ?? [];
      expect(records.map((r) => r.event?.dataTriggerStr.k?.onCreate[0]?.fnId)).toEqual(
        triggers ? ["f", "f", "f", undefined] : [undefined, undefined, undefined, undefined],
      );
    }
  });

  it("records how many changed keys lay beyond the trigger fan-out cap", async () => {
    const store = await createEntryStore({
      engine: createMemoryEngine(),
      shard: "c/0",
      changeLog: { triggerFanoutCap: 2 },
    });
    await store.setObject("o", {
      entries: ["a", "b", "c", "d", "e"].map((k) => [k, v(k)] as const),
    });
    await store.setEntry("o", "a", v("again"));
    await store.batch("o", {
      set: [
        ["a", v("x")],
        ["b", v("y")],
      ],
    });
    const records = (await store.changes?.read(1n, 10)) ?? [];
    expect(records.map((r) => [r.changes.length, r.triggerKeysSkipped])).toEqual([
      [5, 3],
      [1, 0],
      [2, 0],
    ]);
  });

  it("is off unless asked for", async () => {
    const store = await createEntryStore({ engine: createMemoryEngine(), shard: "c/0" });
    await store.setEntry("o", "k", v("x"));
    expect(store.changes).toBeUndefined();
  });
});

describe("change records", () => {
  it("decode what was encoded, and refuse a key/revision mismatch or garbage", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 2n ** 64n - 1n }),
        fc.string(),
        fc.array(
          fc.record({
            key: fc.string(),
            numeric: fc.boolean(),
            action: fc.constantFrom(ChangeAction.CREATE, ChangeAction.UPDATE, ChangeAction.DELETE),
          }),
          { maxLength: 5 },
        ),
        (revision, id, changes) => {
          const rec = create(ChangeRecordSchema, {
            revision,
            objectIdStr: id,
            changes,
            versionAfter: 1n,
            exists: true,
          });
          const bytes = toBinary(ChangeRecordSchema, rec);
          expect(decodeChangeRecord(changeKey(revision), bytes)).toEqual(rec);
          const other = revision === 1n ? 2n : revision - 1n;
          expect(() => decodeChangeRecord(changeKey(other), bytes)).toThrow(/does not decode/);
        },
      ),
    );
    expect(() => decodeChangeRecord(changeKey(1n), Uint8Array.of(0xff, 0xff))).toThrow(
      /does not decode/,
    );
    expect(() => decodeChangeRecord(Uint8Array.of(1, 2), new Uint8Array())).toThrow(/0x01/);
  });

  it("keys a record by 0x01 and its revision as a big-endian u64, in revision order", () => {
    const u64 = fc.oneof(
      fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
      fc.bigInt({ min: 0n, max: 2n ** 53n + 2n }),
      fc.constantFrom(0n, 255n, 256n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n - 1n, 2n ** 53n),
    );
    fc.assert(
      fc.property(u64, u64, (a, b) => {
        const key = changeKey(a);
        const view = new DataView(key.buffer, key.byteOffset, key.byteLength);
        expect(key.length).toBe(9);
        expect(key[0]).toBe(0x01);
        expect(view.getBigUint64(1, false)).toBe(a);
        expect(Math.sign(Buffer.compare(key, changeKey(b)))).toBe(a < b ? -1 : a > b ? 1 : 0);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("RecentChanges", () => {
  const rec = (revision: bigint) => create(ChangeRecordSchema, { revision });
  it("serves the newest records in order and nothing older than its window", () => {
    const ring = new RecentChanges(4);
    expect(ring.read(1n, 10)).toBeUndefined();
    ring.add([1n, 2n, 3n].map(rec));
    expect(ring.read(2n, 10)?.map((r) => r.revision)).toEqual([2n, 3n]);
    ring.add([4n, 5n, 6n].map(rec));
    expect(ring.read(1n, 10)).toBeUndefined();
    expect(ring.read(3n, 2)?.map((r) => r.revision)).toEqual([3n, 4n]);
    expect(ring.read(3n, 10)?.map((r) => r.revision)).toEqual([3n, 4n, 5n, 6n]);
    expect(ring.read(7n, 10)).toBeUndefined();
    // A gap restarts the window.
    ring.add([9n].map(rec));
    expect(ring.read(6n, 10)).toBeUndefined();
    expect(ring.read(9n, 10)?.map((r) => r.revision)).toEqual([9n]);
    ring.clear();
    expect(ring.read(9n, 10)).toBeUndefined();
  });
});

describe("change-log compaction (property, in memory)", () => {
  it("removes exactly the oldest records outside the count and age bounds, before any hold", async () => {
    const retention = fc.record({
      maxRecords: fc.integer({ min: 1, max: 70 }),
      maxAgeMs: fc.integer({ min: 0, max: 400 }),
      holdFrom: fc.option(fc.bigInt({ min: 1n, max: 70n }), { nil: undefined }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 1, maxLength: 60 }),
        fc.array(fc.tuple(retention, fc.integer({ min: 0, max: 400 })), {
          minLength: 1,
          maxLength: 3,
        }),
        async (steps, runs) => {
          let now = 1_000;
          const times: number[] = [];
          const store = await createEntryStore({
            engine: createMemoryEngine(),
            shard: "c/0",
            changeLog: {},
            now: () => now,
          });
          for (const step of steps) {
            now += step;
            times.push(now);
            await store.setEntry("o", "k", v("x"));
          }
          const log = store.changes;
          if (log === undefined) throw new Error("no change log");
          const head = BigInt(steps.length);
          let oldest = 1n;
          for (const [r, late] of runs) {
            const at = now + late;
            // The model: records below the hold (and the head) go while outside either bound.
            const end = r.holdFrom !== undefined && r.holdFrom < head ? r.holdFrom : head;
            const keepFrom = head - BigInt(r.maxRecords) + 1n;
            let cut = oldest;
            while (
              cut < end &&
              (cut < keepFrom || (times[Number(cut) - 1] as number) < at - r.maxAgeMs)
            ) {
              cut++;
            }
            expect(await log.compact(r, at)).toBe(Number(cut - oldest));
            oldest = cut;
            expect(await log.oldest()).toBe(oldest);
            expect((await log.read(1n, 100)).map((c) => c.revision)[0]).toBe(oldest);
          }
        },
      ),
    );
  });
});
