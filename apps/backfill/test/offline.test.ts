import { create, toBinary } from "@bufbuild/protobuf";
import { createEntryStore, type KvEngine, type KvShard, type KvWriteOp } from "@oprc/entry-store";
import { openRocksEngine } from "@oprc/entry-store/rocksdb";
import { encodeEntryKey } from "@oprc/granular-key";
import { EntryRecordSchema, ValDataSchema } from "@oprc/grpc-api";
import { afterEach, describe, expect, it } from "vitest";
import { runBackfill } from "../src/index.js";
import { runBin } from "./cli-process.js";
import {
  blobCount,
  COLLECTION,
  checkObjects,
  createLegacyDatabase,
  PARTITION,
  rawScan,
  SHARD,
  tempDir,
} from "./fixtures.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function dataset(objects = 120, entries = 20, granularObjects = 5) {
  const { dir, cleanup } = await tempDir();
  cleanups.push(cleanup);
  const expected = await createLegacyDatabase(dir, { objects, entries, granularObjects });
  return { dir, expected };
}

const base = { collection: COLLECTION, partition: PARTITION };

describe("offline backfill", () => {
  it("converts every legacy blob into exact entries with version 0, leaving granular objects alone", async () => {
    const { dir, expected } = await dataset();
    const before = await rawScan(dir);
    expect(blobCount(before)).toBe(expected.length);
    const granularBefore = before.filter(
      ([c, k]) => c === "objects" && k.includes(Buffer.from("user-").toString("hex")),
    );

    const summary = await runBackfill({ ...base, dataDir: dir, parallel: 8, verify: true });
    expect(summary).toMatchObject({
      ok: true,
      target: "offline",
      pendingAtStart: expected.length,
      converted: expected.length,
      failed: 0,
      remaining: 0,
      mismatches: 0,
      verified: expected.length,
      metrics: {
        odgm_objects_converted_total: expected.length,
        odgm_objects_pending_conversion_total: 0,
      },
    });
    expect(summary.entries).toBe(expected.reduce((n, o) => n + o.entries.size, 0));
    expect(summary.consistencyChecked).toBe(expected.length + 5);

    const after = await rawScan(dir);
    expect(blobCount(after)).toBe(0);
    // Granular objects are byte-for-byte untouched.
    const granularAfter = after.filter(
      ([c, k]) => c === "objects" && k.includes(Buffer.from("user-").toString("hex")),
    );
    expect(granularAfter).toEqual(granularBefore);

    const engine = await openRocksEngine({ location: dir });
    try {
      const store = await createEntryStore({ engine, shard: SHARD, legacyFallback: false });
      expect(await checkObjects(store, expected)).toEqual([]);
      for (const o of expected.slice(0, 20)) {
        const meta = await store.getMetadata(o.id.toString());
        expect(meta).toMatchObject({
          version: 0n,
          legacy: false,
          entryCount: BigInt(o.entries.size),
        });
      }
      await store.close();
    } finally {
      await engine.close();
    }
  });

  it("a rerun after completion changes nothing (raw scan of every column family)", async () => {
    const { dir } = await dataset(60, 5);
    expect((await runBackfill({ ...base, dataDir: dir })).ok).toBe(true);
    const before = await rawScan(dir);
    const again = await runBackfill({ ...base, dataDir: dir, verify: true });
    expect(again).toMatchObject({ ok: true, pendingAtStart: 0, converted: 0, remaining: 0 });
    // …and through the real process too.
    const proc = await runBin([
      "--mode=entries",
      `--collection=${COLLECTION}`,
      "--partition=0",
      `--data-dir=${dir}`,
    ]);
    expect(proc.code).toBe(0);
    expect(await rawScan(dir)).toEqual(before);
  });

  it("--dry-run counts and changes nothing", async () => {
    const { dir, expected } = await dataset(50, 7, 3);
    const before = await rawScan(dir);
    const summary = await runBackfill({ ...base, dataDir: dir, dryRun: true });
    expect(summary).toMatchObject({
      ok: true,
      dryRun: true,
      pendingAtStart: 50,
      converted: 0,
      remaining: 50,
      entries: expected.reduce((n, o) => n + o.entries.size, 0),
    });
    const proc = await runBin([
      `--collection=${COLLECTION}`,
      "--partition=0",
      `--data-dir=${dir}`,
      "--dry-run",
      "--json",
    ]);
    expect(proc.code).toBe(0);
    expect(JSON.parse(proc.stdout)).toMatchObject({
      dryRun: true,
      pendingAtStart: 50,
      remaining: 50,
    });
    expect(await rawScan(dir)).toEqual(before);
  });

  it("resumes from the persisted checkpoint after an interruption", async () => {
    const { dir, expected } = await dataset(300, 3, 0);
    const controller = new AbortController();
    const first = await runBackfill({
      ...base,
      dataDir: dir,
      parallel: 2,
      checkpointIntervalMs: 1,
      onProgress: (p) => {
        if (p.phase === "convert" && p.converted >= 100) controller.abort();
      },
      signal: controller.signal,
    });
    expect(first.interrupted).toBe(true);
    expect(first.ok).toBe(false);
    expect(first.remaining).toBeGreaterThan(0);
    expect(first.converted + first.remaining).toBe(300);
    const second = await runBackfill({ ...base, dataDir: dir });
    expect(second.ok).toBe(true);
    expect(second.resumedAfter).toBeDefined();
    expect(second.converted).toBe(first.remaining);
    expect(second.convertedAllRuns).toBe(300);
    const engine = await openRocksEngine({ location: dir });
    const store = await createEntryStore({ engine, shard: SHARD, legacyFallback: false });
    expect(await checkObjects(store, expected)).toEqual([]);
    await store.close();
    await engine.close();
  });

  it("--verify catches a conversion that writes a wrong entry (injected fault)", async () => {
    const { dir } = await dataset(40, 4, 0);
    const engine = await openRocksEngine({ location: dir });
    try {
      const victimKey = Buffer.from(encodeEntryKey("31", { numeric: 7 })).toString("hex");
      const faulty = corruptingEngine(engine, (ops) =>
        ops.map((op) =>
          op.type === "put" &&
          op.keyspace === "objects" &&
          Buffer.from(op.key).toString("hex") === victimKey
            ? {
                ...op,
                value: toBinary(
                  EntryRecordSchema,
                  create(EntryRecordSchema, {
                    value: create(ValDataSchema, { data: Uint8Array.of(0xba, 0xd0) }),
                  }),
                ),
              }
            : op,
        ),
      );
      const summary = await runBackfill({ ...base, engine: faulty, verify: true });
      expect(summary.ok).toBe(false);
      expect(summary.mismatches).toBe(1);
      expect(summary.problems).toEqual([
        { kind: "mismatch", id: "31", message: 'entry "7" differs' },
      ]);
      // Without --verify the same fault goes unnoticed: verification is what catches it.
      const { dir: dir2 } = await dataset(40, 4, 0);
      const engine2 = await openRocksEngine({ location: dir2 });
      try {
        const unverified = await runBackfill({
          ...base,
          engine: corruptingEngine(engine2, (ops) => ops),
          verify: false,
        });
        expect(unverified.ok).toBe(true);
      } finally {
        await engine2.close();
      }
    } finally {
      await engine.close();
    }
  });

  it("a later --verify run catches an entry written behind the store's back", async () => {
    const { dir } = await dataset(30, 4, 0);
    expect((await runBackfill({ ...base, dataDir: dir })).ok).toBe(true);
    const engine = await openRocksEngine({ location: dir });
    const shard = await engine.openShard(SHARD);
    const stray = toBinary(
      EntryRecordSchema,
      create(EntryRecordSchema, { value: create(ValDataSchema, { data: Uint8Array.of(1) }) }),
    );
    await shard.write([
      {
        type: "put",
        keyspace: "objects",
        key: encodeEntryKey("4", { numeric: 999 }),
        value: stray,
      },
    ]);
    await engine.close();
    const before = await rawScan(dir);
    const proc = await runBin([
      `--collection=${COLLECTION}`,
      "--partition=0",
      `--data-dir=${dir}`,
      "--verify",
      "--json",
    ]);
    expect(proc.code).toBe(1);
    const summary = JSON.parse(proc.stdout);
    expect(summary.problems).toEqual([
      { kind: "inconsistent", id: "4", message: "metadata counts 4 entries, 5 are stored" },
    ]);
    // A verify run over a converted shard writes nothing.
    expect(await rawScan(dir)).toEqual(before);
  });

  it("SIGINT stops gracefully with exit 130 and a checkpoint; the rerun resumes after it", async () => {
    const { dir, expected } = await dataset(200, 2, 0);
    const args = [
      `--collection=${COLLECTION}`,
      "--partition=0",
      `--data-dir=${dir}`,
      "--parallel=1",
    ];
    const run = runBin([...args, "--throttle=40", "--json", "--checkpoint-interval=1"]);
    // Interrupt once objects are converting (a plain progress line with converted > 0).
    run.child.stderr?.on("data", (d: Buffer) => {
      if (/odgm-backfill: convert .* converted=[1-9]/.test(d.toString())) run.child.kill("SIGINT");
    });
    const first = await run;
    expect(first.code, first.stderr).toBe(130);
    expect(first.stderr).toContain("SIGINT: finishing in-flight objects and saving the checkpoint");
    const s1 = JSON.parse(first.stdout);
    expect(s1).toMatchObject({ interrupted: true, ok: false, failed: 0 });
    expect(s1.converted).toBeGreaterThan(0);
    expect(s1.converted + s1.remaining).toBe(200);

    const second = await runBin([...args, "--json"]);
    expect(second.code, second.stderr).toBe(0);
    const s2 = JSON.parse(second.stdout);
    expect(s2).toMatchObject({
      ok: true,
      converted: s1.remaining,
      remaining: 0,
      convertedAllRuns: 200,
    });
    expect(BigInt(s2.resumedAfter)).toBeGreaterThanOrEqual(expected[0]?.id ?? 0n);
    expect(blobCount(await rawScan(dir))).toBe(0);
  });

  it("the real process exits 2 on bad flags, naming the problem", async () => {
    const bad = await runBin([
      `--collection=${COLLECTION}`,
      "--partition=0",
      "--data-dir=/x",
      "--parallel=0",
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      "--parallel <n>' argument '0' is invalid. expected 1..1024, got 0",
    );
    const neither = await runBin([`--collection=${COLLECTION}`, "--partition=0"]);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain(
      "give exactly one of --data-dir (offline) and --endpoint (online)",
    );
  });

  it("keeps a blob that does not decode, reports it and exits 1", async () => {
    const { dir } = await dataset(10, 2, 0);
    const engine = await openRocksEngine({ location: dir });
    const shard = await engine.openShard(SHARD);
    const key = new Uint8Array(8);
    new DataView(key.buffer).setBigUint64(0, 5000n);
    await shard.write([
      { type: "put", keyspace: "blobs", key, value: Uint8Array.of(0xff, 0xff, 0xff) },
    ]);
    await engine.close();
    const proc = await runBin([
      `--collection=${COLLECTION}`,
      "--partition=0",
      `--data-dir=${dir}`,
      "--json",
    ]);
    expect(proc.code).toBe(1);
    const summary = JSON.parse(proc.stdout);
    expect(summary).toMatchObject({ converted: 10, failed: 1, remaining: 1, ok: false });
    expect(summary.problems[0]).toMatchObject({ kind: "failed", id: "5000" });
    expect(blobCount(await rawScan(dir))).toBe(1);
  });
});

/** An engine whose shard writes pass through `rewrite` (fault injection). */
function corruptingEngine(
  engine: KvEngine,
  rewrite: (ops: readonly KvWriteOp[]) => readonly KvWriteOp[],
): KvEngine {
  const wrapped = new Map<string, KvShard>();
  return {
    kind: engine.kind,
    listShards: () => engine.listShards(),
    close: () => engine.close(),
    async openShard(name) {
      const shard = await engine.openShard(name);
      let w = wrapped.get(name);
      if (w === undefined) {
        w = {
          name: shard.name,
          get: (ks, k) => shard.get(ks, k),
          getMany: (ks, k) => shard.getMany(ks, k),
          iterator: (ks, o) => shard.iterator(ks, o),
          write: (ops, o) => shard.write(rewrite(ops), o),
          clear: (ks, range) => shard.clear(ks, range),
        };
        wrapped.set(name, w);
      }
      return w;
    },
  };
}
