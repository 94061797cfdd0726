// Entry-store cost as ratios to baselines measured in the same run.
//
//   cd packages/entry-store && vitest bench --run
//
// Prints one markdown table per group (copied into BENCHMARKS.md). Latency tables give
// median and p99 with ratios of medians; the throughput table uses means (total work over
// total time).
// - entry ops vs a raw put/get of the same bytes on the same engine (memory, RocksDB);
// - seed 003 §10: GetEntry vs Get(full object) of a 256-entry object (CPU and bytes),
//   BatchSet of 50 entries vs SetObject of the same payload, ListEntries(100) latency;
// - RocksDB single-entry set throughput: sync on/off, concurrent writers with and without
//   group commit, against a raw synced put.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { create, create as createMessage, fromBinary, toBinary } from "@bufbuild/protobuf";
import { encodeEntryKey, encodeMetadataKey } from "@oprc/granular-key";
import {
  EntryRecordSchema,
  ObjectMetaRecordSchema,
  type ValData,
  ValDataSchema,
} from "@oprc/grpc-api/messages";
import { afterAll, test } from "vitest";
import { countingEngine } from "../test/counting-engine.js";
import { CHANGE_HEAD_KEY, changeKey } from "./change-log.js";
import { decodeEntryRecord, encodeEntryRecord } from "./entry-record-codec.js";
import { createEntryStore, type EntryStore } from "./entry-store.js";
import type { KvEngine, KvShard, KvWriteOp } from "./kv.js";
import { createMemoryEngine } from "./memory-engine.js";
import { decodeMetaRecord, encodeMetaRecord } from "./meta-record-codec.js";
import { encodeEntry } from "./records.js";
import { openRocksEngine, type RocksEngine } from "./rocksdb-engine.js";

const dir = mkdtempSync(join(tmpdir(), "entry-store-bench-"));
const rocks = await openRocksEngine({ location: join(dir, "main") });
const rocksGrouped = await openRocksEngine({ location: join(dir, "grouped"), groupCommit: true });
const rocksWorker = await openRocksEngine({
  location: join(dir, "worker"),
  groupCommit: true,
  writeThread: "worker",
});
const rocksUngrouped = await openRocksEngine({
  location: join(dir, "ungrouped"),
  groupCommit: false,
});
const memory = createMemoryEngine();

const value = (i: number): ValData =>
  create(ValDataSchema, { data: new Uint8Array(64).fill(i & 0xff) });
const ENTRIES = 256;

interface Fixture {
  engine: KvEngine;
  store: EntryStore;
  raw: KvShard;
}

async function fixture(engine: KvEngine, name: string): Promise<Fixture> {
  const store = await createEntryStore({ engine, shard: `${name}/0` });
  const raw = await engine.openShard(`${name}/raw`);
  const set: [string, ValData][] = [];
  for (let i = 0; i < ENTRIES; i++) set.push([`field-${i}`, value(i)]);
  await store.batch("user-123", { set });
  await raw.write([
    {
      type: "put",
      keyspace: "objects",
      key: encodeEntryKey("user-123", { str: "field-17" }),
      value: encodeEntry(value(17), 1n, 0n),
    },
  ]);
  return { engine, store, raw };
}

const fixtures: Record<string, Fixture> = {
  memory: await fixture(memory, "mem"),
  rocksdb: await fixture(rocks, "rocks"),
};

const tables: string[] = [];
afterAll(async () => {
  console.log(`\n${tables.join("\n\n")}\n`);
  for (const f of Object.values(fixtures)) await f.store.close();
  await rocks.close();
  await rocksGrouped.close();
  await rocksWorker.close();
  await rocksUngrouped.close();
  rmSync(dir, { recursive: true, force: true });
});

const options = { time: 1500, warmupTime: 200 };
const us = (ms: number): string => `${(ms * 1000).toFixed(1)} µs`;

interface Latency {
  p50?: number | undefined;
  p99?: number | undefined;
  mean?: number | undefined;
}

/**
 * One table per comparison; the first row is the baseline. Ratios use medians: the shared
 * VM runs other jobs, and the median is the estimator least moved by their bursts (p99 is
 * shown for the seed's p99 targets).
 */
function table(title: string, rows: [string, Latency][]): void {
  const base = rows[0]?.[1].p50 ?? Number.NaN;
  tables.push(
    [
      `### ${title}`,
      "",
      "| case | median | p99 | ratio to baseline (median) |",
      "|---|---|---|---|",
      ...rows.map(
        ([name, l]) =>
          `| ${name} | ${us(l.p50 ?? Number.NaN)} | ${us(l.p99 ?? Number.NaN)} | ${((l.p50 ?? Number.NaN) / base).toFixed(2)}× |`,
      ),
    ].join("\n"),
  );
}

for (const kind of ["memory", "rocksdb"] as const) {
  const { store, raw } = fixtures[kind] as Fixture;
  const key = encodeEntryKey("user-123", { str: "field-17" });
  const bytes = encodeEntry(value(17), 1n, 0n);

  test(`${kind}: getEntry vs raw get of the same bytes`, async ({ bench }) => {
    const RAW = "raw get of the entry key (baseline)";
    const GET = "store.getEntry (metadata + entry, one multi-get)";
    const r = await bench.compare(
      bench(RAW, async () => {
        await raw.get("objects", key);
      }),
      bench(GET, async () => {
        await store.getEntry("user-123", "field-17");
      }),
      options,
    );
    table(`${kind}: read one entry`, [
      [RAW, r.get(RAW).latency],
      [GET, r.get(GET).latency],
    ]);
  });

  test(`${kind}: setEntry vs raw put of the same bytes (sync off)`, async ({ bench }) => {
    const RAW = "raw put of the entry record (baseline)";
    const SET = "store.setEntry (read meta+entry, write entry+meta)";
    let i = 0;
    const r = await bench.compare(
      bench(RAW, async () => {
        await raw.write([{ type: "put", keyspace: "objects", key, value: bytes }], { sync: false });
      }),
      bench(SET, async () => {
        await store.setEntry("writer", `k${i++ & 1023}`, value(i), { sync: false });
      }),
      options,
    );
    table(`${kind}: write one entry, sync off`, [
      [RAW, r.get(RAW).latency],
      [SET, r.get(SET).latency],
    ]);
  });

  test(`${kind}: seed 003 §10 GetEntry vs Get(full object, ${ENTRIES} entries)`, async ({
    bench,
  }) => {
    const OBJ = `store.getObject, ${ENTRIES} entries (baseline)`;
    const ENTRY = "store.getEntry, one entry";
    const r = await bench.compare(
      bench(OBJ, async () => {
        await store.getObject("user-123");
      }),
      bench(ENTRY, async () => {
        await store.getEntry("user-123", "field-17");
      }),
      options,
    );
    // Bytes read, counted through a wrapper on a copy of the object in a memory engine.
    const counted = countingEngine(createMemoryEngine());
    const cs = await createEntryStore({ engine: counted, shard: "count/0" });
    const set: [string, ValData][] = [];
    for (let i = 0; i < ENTRIES; i++) set.push([`field-${i}`, value(i)]);
    await cs.batch("user-123", { set });
    counted.bytesRead = 0;
    await cs.getEntry("user-123", "field-17");
    const eb = counted.bytesRead;
    counted.bytesRead = 0;
    await cs.getObject("user-123");
    const ob = counted.bytesRead;
    await cs.close();
    table(`${kind}: GetEntry vs Get(full object) — budget ≤ 1.4× CPU, ≤ 0.6× bytes`, [
      [OBJ, r.get(OBJ).latency],
      [ENTRY, r.get(ENTRY).latency],
    ]);
    tables.push(`bytes read: getEntry ${eb} B, getObject ${ob} B, ratio ${(eb / ob).toFixed(4)}×`);
  });

  test(`${kind}: seed 003 §10 BatchSet(50) vs SetObject(same 50)`, async ({ bench }) => {
    const SETOBJ = "store.setObject, 50 entries (baseline)";
    const BATCH = "store.batch, 50 sets";
    const payload: [string, ValData][] = [];
    for (let i = 0; i < 50; i++) payload.push([`f${i}`, value(i)]);
    await store.setObject("obj-a", { entries: payload });
    await store.batch("obj-b", { set: payload });
    const r = await bench.compare(
      bench(SETOBJ, async () => {
        await store.setObject("obj-a", { entries: payload }, { sync: false });
      }),
      bench(BATCH, async () => {
        await store.batch("obj-b", { set: payload }, { sync: false });
      }),
      options,
    );
    table(
      `${kind}: BatchSet of 50 vs one SetObject of the same payload (sync off) — budget ≤ 2.0×`,
      [
        [SETOBJ, r.get(SETOBJ).latency],
        [BATCH, r.get(BATCH).latency],
      ],
    );
  });

  test(`${kind}: seed 003 §10 ListEntries(100) latency`, async ({ bench }) => {
    const RAW = "raw iterator, 100 records (baseline)";
    const LIST = "store.listEntries, limit 100 (whole first page)";
    const [range] = [
      {
        gte: encodeEntryKey("user-123", { numeric: 0 }),
        lt: encodeEntryKey("user-123", { str: "\uffff" }),
      },
    ];
    const shard = await fixtures[kind]?.engine.openShard(
      `${kind === "memory" ? "mem" : "rocks"}/0`,
    );
    const r = await bench.compare(
      bench(RAW, async () => {
        const it = (shard as KvShard).iterator("objects", { gte: range.gte, lt: range.lt });
        await it.next(101);
        await it.close();
      }),
      bench(LIST, async () => {
        await store.listEntries("user-123", { limit: 100 });
      }),
      options,
    );
    table(`${kind}: ListEntries of 100 — budget: stream start ≤ 5 ms`, [
      [RAW, r.get(RAW).latency],
      [LIST, r.get(LIST).latency],
    ]);
  });
}

test("rocksdb: single-entry set throughput, sync and group commit", async ({ bench }) => {
  const WRITERS = 32;
  const groupedStore = await createEntryStore({ engine: rocksGrouped, shard: "tp/0" });
  const ungroupedStore = await createEntryStore({ engine: rocksUngrouped, shard: "tp/0" });
  const workerStore = await createEntryStore({ engine: rocksWorker, shard: "tp/0" });
  const raw = await rocksUngrouped.openShard("tp/raw");
  const key = encodeEntryKey("raw", { str: "k" });
  const bytes = encodeEntry(value(1), 1n, 0n);
  let i = 0;
  const RAW = "raw synced put, one at a time (baseline)";
  const SYNC = "setEntry, sync on, one at a time";
  const NOSYNC = "setEntry, sync off, one at a time";
  const GROUP = `setEntry, sync on, ${WRITERS} concurrent writers per iteration, group commit`;
  const NOGROUP = `setEntry, sync on, ${WRITERS} concurrent writers per iteration, no group commit`;
  const WSYNC = "setEntry, sync on, one at a time, write worker thread";
  const WGROUP = `setEntry, sync on, ${WRITERS} concurrent writers per iteration, group commit, write worker thread`;
  const r = await bench.compare(
    bench(RAW, async () => {
      await raw.write([{ type: "put", keyspace: "objects", key, value: bytes }], { sync: true });
    }),
    bench(SYNC, async () => {
      await ungroupedStore.setEntry(`s${i++ & 255}`, "k", value(i), { sync: true });
    }),
    bench(NOSYNC, async () => {
      await ungroupedStore.setEntry(`n${i++ & 255}`, "k", value(i), { sync: false });
    }),
    bench(GROUP, async () => {
      const n = i++;
      await Promise.all(
        Array.from({ length: WRITERS }, (_, w) =>
          groupedStore.setEntry(`g${w}`, "k", value(n), { sync: true }),
        ),
      );
    }),
    bench(NOGROUP, async () => {
      const n = i++;
      await Promise.all(
        Array.from({ length: WRITERS }, (_, w) =>
          ungroupedStore.setEntry(`u${w}`, "k", value(n), { sync: true }),
        ),
      );
    }),
    bench(WSYNC, async () => {
      await workerStore.setEntry(`ws${i++ & 255}`, "k", value(i), { sync: true });
    }),
    bench(WGROUP, async () => {
      const n = i++;
      await Promise.all(
        Array.from({ length: WRITERS }, (_, w) =>
          workerStore.setEntry(`wg${w}`, "k", value(n), { sync: true }),
        ),
      );
    }),
    { time: 3000, warmupTime: 300 },
  );
  const base = r.get(RAW).latency.mean;
  const perWrite = (name: string, n: number): number => r.get(name as typeof RAW).latency.mean / n;
  const rows: [string, number][] = [
    [RAW, base],
    [SYNC, perWrite(SYNC, 1)],
    [NOSYNC, perWrite(NOSYNC, 1)],
    [GROUP, perWrite(GROUP, WRITERS)],
    [NOGROUP, perWrite(NOGROUP, WRITERS)],
    [WSYNC, perWrite(WSYNC, 1)],
    [WGROUP, perWrite(WGROUP, WRITERS)],
  ];
  const st = rocksGrouped.stats();
  const wst = rocksWorker.stats();
  // How long the event loop is blocked while 32 writers write 2,000 synced entries.
  const loopDelay = async (store: EntryStore): Promise<string> => {
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    for (let k = 0; k < 64; k++) {
      await Promise.all(
        Array.from({ length: WRITERS }, (_, w) =>
          store.setEntry(`d${w}`, "k", value(k), { sync: true }),
        ),
      );
    }
    h.disable();
    return `p50 ${(h.percentile(50) / 1e6).toFixed(2)} ms, p99 ${(h.percentile(99) / 1e6).toFixed(2)} ms, max ${(h.max / 1e6).toFixed(2)} ms`;
  };
  const mainDelay = await loopDelay(groupedStore);
  const workerDelay = await loopDelay(workerStore);
  tables.push(
    [
      "### rocksdb: single-entry set throughput",
      "",
      "| case | writes/s | ratio to baseline |",
      "|---|---|---|",
      ...rows.map(
        ([name, ms]) => `| ${name} | ${(1000 / ms).toFixed(0)} | ${(base / ms).toFixed(2)}× |`,
      ),
      "",
      `group commit engine: ${st.writes} writes in ${st.batches} RocksDB batches (${(st.writes / Math.max(1, st.batches)).toFixed(1)} per synced batch)`,
      `write-worker engine: ${wst.writes} writes in ${wst.batches} RocksDB batches (${(wst.writes / Math.max(1, wst.batches)).toFixed(1)} per synced batch)`,
      "",
      `event-loop delay (monitorEventLoopDelay, 1 ms resolution) while ${WRITERS} writers write ${WRITERS * 64} synced entries:`,
      `- group commit on the main thread: ${mainDelay}`,
      `- group commit on the write worker thread: ${workerDelay}`,
    ].join("\n"),
  );
  await groupedStore.close();
  await ungroupedStore.close();
  await workerStore.close();
  void (rocksGrouped satisfies RocksEngine);
});

// What every replica of a Raft shard pays per committed operation (the cluster's lever: see
// BENCHMARKS.md, "What holds the cluster back"): applyCommitted of 12 `set_entry`s on
// objects spread over 10,000 ids, as the cluster benchmark writes them, with the change
// log on; against one raw write of the records such a batch leaves (3 per operation, plus
// the change head and the applied index), on the same RocksDB engine (write worker, group
// commit, as odgm opens it).
test("rocksdb: applying a replicated log, 12 set_entry per batch vs a raw write of its records", async ({
  bench,
}) => {
  const BATCH = 12;
  const OBJECTS = 10_000;
  const store = await createEntryStore({
    engine: rocksWorker,
    shard: "apply/0",
    sync: false,
    changeLog: {},
  });
  const raw = await rocksWorker.openShard("apply/raw");
  const v = value(7);
  let index = 0;
  const batch = () =>
    Array.from({ length: BATCH }, () => {
      index++;
      const objectId = String(1 + ((index * 7919) % OBJECTS));
      return {
        index,
        op: { kind: "set_entry" as const, objectId, key: "f0", value: v, timestampMs: index },
      };
    });
  const records = (n: number): KvWriteOp[] => {
    const out: KvWriteOp[] = [];
    const put = (keyspace: "objects" | "system", key: Uint8Array, bytes: Uint8Array) =>
      out.push({ type: "put", keyspace, key, value: bytes });
    for (let i = 0; i < BATCH; i++) {
      const id = String(1 + (((n + i) * 7919) % OBJECTS));
      const version = BigInt(n + i);
      put("objects", encodeEntryKey(id, { str: "f0" }), encodeEntry(v, version, version));
      put(
        "objects",
        encodeMetadataKey(id),
        encodeMetaRecord({
          objectVersion: version,
          tombstone: false,
          entryCount: 1n,
          createdAtMs: 1n,
          updatedAtMs: version,
          attributes: {},
        }),
      );
      put("system", changeKey(version), new Uint8Array(40));
    }
    put("system", CHANGE_HEAD_KEY, new Uint8Array(8));
    put("system", Uint8Array.of(0, 2), new Uint8Array(8)); // the applied index
    return out;
  };
  // Every object exists and is cached, as under steady load.
  for (let i = 0; i < OBJECTS / BATCH + 1; i++) await store.applyCommitted(batch());
  let n = 0;
  const RAW = `raw write of the records of ${BATCH} operations (baseline)`;
  const APPLY = `applyCommitted of ${BATCH} set_entry operations`;
  const r = await bench.compare(
    bench(RAW, async () => {
      n += BATCH;
      await raw.write(records(n), { sync: false });
    }),
    bench(APPLY, async () => {
      await store.applyCommitted(batch());
    }),
    options,
  );
  table(`rocksdb: applying a replicated log (${BATCH} operations per batch)`, [
    [RAW, r.get(RAW).latency],
    [APPLY, r.get(APPLY).latency],
  ]);
  await store.close();
});

test("rocksdb: a Raft log compaction's work on the shard, syncApplied vs exportState", async ({
  bench,
}) => {
  // What a raft group does to its shard each time it compacts its log: now one synced
  // write (syncApplied); before, a copy of the whole shard (exportState), which the log
  // store then wrote and kept in memory. 10,000 objects of 4 entries of 64 bytes, as in
  // `bench:cluster`.
  const OBJECTS = 10_000;
  const store = await createEntryStore({ engine: rocksWorker, shard: "compact/0" });
  for (let o = 0; o < OBJECTS; o += 500) {
    await store.applyCommitted(
      Array.from({ length: 500 }, (_, k) => ({
        index: o + k + 1,
        op: {
          kind: "set_object" as const,
          objectId: `obj-${o + k}`,
          timestampMs: 1,
          entries: new Map(Array.from({ length: 4 }, (_, e) => [`f${e}`, value(e)] as const)),
        },
      })),
      { sync: false },
    );
  }
  const SYNC = "syncApplied: one synced write (baseline, what a compaction does now)";
  const EXPORT = `exportState: the whole shard, ${OBJECTS} objects (what a compaction did before)`;
  let bytes = 0;
  const r = await bench.compare(
    bench(SYNC, async () => {
      await store.syncApplied();
    }),
    bench(EXPORT, async () => {
      bytes = (await store.exportState()).byteLength;
    }),
    { time: 3000, warmupTime: 300 },
  );
  table(
    `rocksdb: a raft compaction's work on a shard of ${OBJECTS} objects (${(bytes / 2 ** 20).toFixed(1)} MiB exported)`,
    [
      [SYNC, r.get(SYNC).latency],
      [EXPORT, r.get(EXPORT).latency],
    ],
  );
  await store.close();
}, 300_000);

test("record codecs: fast paths vs protobuf-es", async ({ bench }) => {
  const meta = {
    objectVersion: 12n,
    tombstone: false,
    entryCount: 30n,
    createdAtMs: 1763800000000n,
    updatedAtMs: 1763800000000n,
    attributes: {},
  };
  const metaBytes = toBinary(ObjectMetaRecordSchema, createMessage(ObjectMetaRecordSchema, meta));
  const v = value(3);
  const entryBytes = encodeEntryRecord(v, 7n, 1763800000000n);
  const cases: [string, () => unknown, () => unknown][] = [
    [
      "ObjectMetaRecord decode",
      () => fromBinary(ObjectMetaRecordSchema, metaBytes),
      () => decodeMetaRecord(metaBytes),
    ],
    [
      "ObjectMetaRecord encode",
      () => toBinary(ObjectMetaRecordSchema, createMessage(ObjectMetaRecordSchema, meta)),
      () => encodeMetaRecord(meta),
    ],
    [
      "EntryRecord decode",
      () => fromBinary(EntryRecordSchema, entryBytes),
      () => decodeEntryRecord(entryBytes),
    ],
    [
      "EntryRecord encode",
      () =>
        toBinary(
          EntryRecordSchema,
          createMessage(EntryRecordSchema, { value: v, version: 7n, updatedAtMs: 1763800000000n }),
        ),
      () => encodeEntryRecord(v, 7n, 1763800000000n),
    ],
  ];
  const rows: string[] = [];
  for (const [name, slow, fast] of cases) {
    const SLOW = `${name}: protobuf-es (baseline)`;
    const FAST = `${name}: fast path`;
    const r = await bench.compare(
      bench(SLOW, () => {
        for (let i = 0; i < 100; i++) slow();
      }),
      bench(FAST, () => {
        for (let i = 0; i < 100; i++) fast();
      }),
      { time: 500, warmupTime: 100 },
    );
    const a = (r.get(SLOW).latency.p50 ?? Number.NaN) / 100;
    const b = (r.get(FAST).latency.p50 ?? Number.NaN) / 100;
    const ns = (ms: number): string => `${(ms * 1e6).toFixed(0)} ns`;
    rows.push(`| ${name} | ${ns(a)} | ${ns(b)} | ${(b / a).toFixed(2)}× |`);
  }
  tables.push(
    [
      "### record codecs: fast paths vs protobuf-es (median per record)",
      "",
      "| record | protobuf-es (baseline) | fast path | ratio |",
      "|---|---|---|---|",
      ...rows,
    ].join("\n"),
  );
});
