// Conversion throughput of odgm-backfill, offline and online, against the raw RocksDB
// batch-write rate of the same records measured in the same run.
//
//   cd apps/backfill && vitest bench --run bench/backfill.bench.ts
//   BENCH_OBJECTS=20000 vitest bench --run bench/backfill.bench.ts   # smaller run
//
// Dataset: BENCH_OBJECTS legacy blobs (default 100 000) of 20 numeric entries of 16
// bytes each, written raw into the `blobs` keyspace (what a pre-granular node stored).
// Cases, each on its own copy of the dataset:
// - raw: the records a conversion writes (20 entry records + metadata + blob delete per
//   object), pre-encoded values, unsynced KvShard writes of 256 objects each, 4 in
//   flight — the floor any conversion through the engine can reach;
// - offline: runBackfill against the stopped database (--parallel=32);
// - online: runBackfill through a node started in this process (gRPC over h2c,
//   ODGM_SYNC_WRITES=true as a node runs by default, --parallel=8 --batch-size=256).
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import type { KvShard, KvWriteOp } from "@oprc/entry-store";
import { openRocksEngine } from "@oprc/entry-store/rocksdb";
import { encodeEntryKey, encodeMetadataKey } from "@oprc/granular-key";
import {
  EntryRecordSchema,
  ObjDataSchema,
  ObjectMetaRecordSchema,
  ValDataSchema,
} from "@oprc/grpc-api";
import { loadConfig, startOdgm } from "@oprc/odgm";
import { afterAll, test } from "vitest";
import { runBackfill } from "../src/index.js";

const OBJECTS = Number(process.env.BENCH_OBJECTS ?? 100_000);
const ENTRIES = 20;
const COLLECTION = "bench";
const SHARD = `${COLLECTION}/0`;

const root = await mkdtemp(join(tmpdir(), "odgm-backfill-bench-"));
afterAll(() => rm(root, { recursive: true, force: true }));

function legacyKey(id: bigint): Uint8Array {
  const k = new Uint8Array(8);
  new DataView(k.buffer).setBigUint64(0, id, false);
  return k;
}

function value(i: number, k: number): Uint8Array {
  const d = new Uint8Array(16);
  new DataView(d.buffer).setUint32(0, i);
  d[4] = k;
  return d;
}

async function writeTemplate(dir: string): Promise<void> {
  const engine = await openRocksEngine({ location: dir });
  const shard = await engine.openShard(SHARD);
  let ops: KvWriteOp[] = [];
  for (let i = 1; i <= OBJECTS; i++) {
    const entries: Record<number, ReturnType<typeof create<typeof ValDataSchema>>> = {};
    for (let k = 0; k < ENTRIES; k++) entries[k] = create(ValDataSchema, { data: value(i, k) });
    ops.push({
      type: "put",
      keyspace: "blobs",
      key: legacyKey(BigInt(i)),
      value: toBinary(ObjDataSchema, create(ObjDataSchema, { entries })),
    });
    if (ops.length === 1000) {
      await shard.write(ops, { sync: false });
      ops = [];
    }
  }
  if (ops.length > 0) await shard.write(ops, { sync: true });
  await engine.close();
}

async function rawRate(dir: string): Promise<number> {
  const engine = await openRocksEngine({ location: dir });
  const shard: KvShard = await engine.openShard(SHARD);
  const entryValue = toBinary(
    EntryRecordSchema,
    create(EntryRecordSchema, {
      value: create(ValDataSchema, { data: value(1, 1) }),
      updatedAtMs: 1n,
    }),
  );
  const meta = toBinary(
    ObjectMetaRecordSchema,
    create(ObjectMetaRecordSchema, { entryCount: 20n, createdAtMs: 1n, updatedAtMs: 1n }),
  );
  const t0 = performance.now();
  const inFlight = new Set<Promise<void>>();
  let ops: KvWriteOp[] = [];
  for (let i = 1; i <= OBJECTS; i++) {
    const id = String(i);
    for (let k = 0; k < ENTRIES; k++) {
      ops.push({
        type: "put",
        keyspace: "objects",
        key: encodeEntryKey(id, { numeric: k }),
        value: entryValue,
      });
    }
    ops.push({ type: "put", keyspace: "objects", key: encodeMetadataKey(id), value: meta });
    ops.push({ type: "del", keyspace: "blobs", key: legacyKey(BigInt(i)) });
    if (i % 256 === 0 || i === OBJECTS) {
      const p = shard.write(ops, { sync: false });
      ops = [];
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
      if (inFlight.size >= 4) await Promise.race(inFlight);
    }
  }
  await Promise.all(inFlight);
  await shard.write([], { sync: true });
  const ms = performance.now() - t0;
  await engine.close();
  return ms;
}

function row(name: string, ms: number, baseMs: number): string {
  const objs = Math.round((OBJECTS * 1000) / ms);
  const ents = Math.round((OBJECTS * ENTRIES * 1000) / ms);
  return `| ${name} | ${(ms / 1000).toFixed(2)} s | ${objs.toLocaleString("en-US")} | ${ents.toLocaleString("en-US")} | ${(baseMs / ms).toFixed(2)}× |`;
}

test(`convert ${OBJECTS} blobs of ${ENTRIES} entries`, async () => {
  const template = join(root, "template");
  await writeTemplate(template);
  const copy = async (name: string): Promise<string> => {
    const dir = join(root, name);
    await cp(template, dir, { recursive: true });
    return dir;
  };

  const rawMs = await rawRate(await copy("raw"));

  const offlineDir = await copy("offline");
  const t1 = performance.now();
  const offline = await runBackfill({ collection: COLLECTION, partition: 0, dataDir: offlineDir });
  const offlineMs = performance.now() - t1;
  if (!offline.ok || offline.converted !== OBJECTS) throw new Error("offline run incomplete");

  const onlineDir = await copy("online");
  const node = await startOdgm(
    loadConfig({
      ODGM_DATA_DIR: onlineDir,
      ODGM_HTTP_HOST: "127.0.0.1",
      ODGM_HTTP_PORT: "0",
      ODGM_LOG_LEVEL: "silent",
      ODGM_COLLECTION: JSON.stringify([{ name: COLLECTION, partitionCount: 1 }]),
    }),
  );
  const t2 = performance.now();
  const online = await runBackfill({
    collection: COLLECTION,
    partition: 0,
    endpoint: node.url,
    parallel: 8,
    batchSize: 256,
  });
  const onlineMs = performance.now() - t2;
  await node.close();
  if (!online.ok || online.converted !== OBJECTS) throw new Error("online run incomplete");

  const table = [
    "| case | time | objects/s | entries/s | vs raw batch write |",
    "|---|---|---|---|---|",
    row("raw RocksDB batch write (baseline)", rawMs, rawMs),
    row("offline (`--data-dir`, --parallel=32)", offlineMs, rawMs),
    row("online (`--endpoint`, --parallel=8, --batch-size=256)", onlineMs, rawMs),
  ].join("\n");
  console.log(`\n${OBJECTS} objects × ${ENTRIES} entries\n${table}\n`);
}, 3_600_000);
