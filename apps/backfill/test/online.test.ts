// Online mode against a real odgm node (in-process, RocksDB, gRPC over h2c), with
// concurrent client writes to the very objects being converted.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import {
  DataService,
  ListLegacyObjectsRequestSchema,
  MaintenanceService,
  SetKeyRequestSchema,
  SingleObjectRequestSchema,
  type ValData,
  ValDataSchema,
} from "@oprc/grpc-api";
import { loadConfig, type OdgmNode, startOdgm } from "@oprc/odgm";
import { afterEach, describe, expect, it } from "vitest";
import { runBackfill } from "../src/index.js";
import { openOnlineTarget } from "../src/online-target.js";
import { runBin } from "./cli-process.js";
import {
  blobCount,
  COLLECTION,
  createLegacyDatabase,
  type LegacyObject,
  PARTITION,
  prng,
  rawScan,
  tempDir,
} from "./fixtures.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function node(dataDir: string): Promise<OdgmNode> {
  const n = await startOdgm(
    loadConfig({
      ODGM_DATA_DIR: dataDir,
      ODGM_HTTP_HOST: "127.0.0.1",
      ODGM_HTTP_PORT: "0",
      ODGM_LOG_LEVEL: "silent",
      ODGM_SYNC_WRITES: "false",
      ODGM_COLLECTION: JSON.stringify([{ name: COLLECTION, partitionCount: 1 }]),
    }),
  );
  return n;
}

async function setup(objects: number, entries: number) {
  const { dir, cleanup } = await tempDir();
  cleanups.push(cleanup);
  const expected = await createLegacyDatabase(dir, { objects, entries });
  const n = await node(dir);
  cleanups.push(() => n.close());
  const sessions = new Http2SessionManager(n.url);
  cleanups.push(async () => sessions.abort());
  const transport = createGrpcTransport({ baseUrl: n.url, sessionManager: sessions });
  return {
    dir,
    expected,
    node: n,
    data: createClient(DataService, transport),
    maintenance: createClient(MaintenanceService, transport),
  };
}

function entriesOf(obj: { entries: Record<number, ValData>; entriesStr: Record<string, ValData> }) {
  const m = new Map<string, ValData>();
  for (const [k, v] of Object.entries(obj.entriesStr)) m.set(k, v);
  for (const [k, v] of Object.entries(obj.entries)) m.set(k, v);
  return m;
}

describe("online backfill", () => {
  it("never loses a concurrent client write nor overwrites it with stale blob content", async () => {
    const { dir, expected, node: n, data, maintenance } = await setup(400, 6);
    const state = new Map<bigint, Map<string, ValData>>(
      expected.map((o: LegacyObject) => [o.id, new Map(o.entries)]),
    );
    const ids = expected.map((o) => o.id);
    const rand = prng(7);
    let stop = false;
    let writes = 0;
    // Four writers on disjoint objects, each awaiting its writes, so the last value of
    // every key is known. They overwrite an original entry ("0") and add a new one.
    const writer = async (w: number): Promise<void> => {
      const mine = ids.filter((_, i) => i % 4 === w);
      let seq = 0;
      while (!stop || seq < 40) {
        const id = mine[Math.floor(rand() * mine.length)] as bigint;
        const key = rand() < 0.5 ? 0 : 5000 + w;
        const value = create(ValDataSchema, { data: new TextEncoder().encode(`w${w}-${seq++}`) });
        await data.setValue(
          create(SetKeyRequestSchema, {
            clsId: COLLECTION,
            partitionId: PARTITION,
            objectId: id,
            key,
            value,
          }),
        );
        state.get(id)?.set(String(key), value);
        writes++;
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    const summary = await runBackfill({
      collection: COLLECTION,
      partition: PARTITION,
      endpoint: n.url,
      parallel: 4,
      batchSize: 8,
      verify: true,
    });
    stop = true;
    await Promise.all(writers);
    console.info(
      `${writes} client writes; tool converted ${summary.converted}, skipped ${summary.skipped}, modified concurrently ${summary.modifiedConcurrently}`,
    );
    expect(writes).toBeGreaterThanOrEqual(160);
    expect(summary).toMatchObject({
      ok: true,
      target: "online",
      failed: 0,
      remaining: 0,
      mismatches: 0,
    });
    // Every blob was converted exactly once: by the tool or by a client's first write.
    expect(summary.converted).toBeLessThanOrEqual(400);
    expect(summary.converted + summary.skipped).toBeGreaterThan(0);

    // Every object, through the service's read path, holds its blob's entries with the
    // client writes on top: nothing lost, nothing reverted.
    for (const id of ids) {
      const res = await data.get(
        create(SingleObjectRequestSchema, {
          clsId: COLLECTION,
          partitionId: PARTITION,
          objectId: id,
        }),
      );
      const got = entriesOf(res.obj ?? { entries: {}, entriesStr: {} });
      const want = state.get(id) as Map<string, ValData>;
      expect(got.size, `object ${id}`).toBe(want.size);
      for (const [k, v] of want) {
        expect(Buffer.from(got.get(k)?.data ?? []).toString("hex"), `object ${id} entry ${k}`).toBe(
          Buffer.from(v.data).toString("hex"),
        );
      }
    }
    let listed = 0;
    for await (const page of maintenance.listLegacyObjects(
      create(ListLegacyObjectsRequestSchema, { clsId: COLLECTION, partitionId: PARTITION }),
    )) {
      listed += page.objectIds.length;
    }
    expect(listed).toBe(0);
    expect(
      await n.metrics.registry.getSingleMetricAsString("odgm_objects_converted_total"),
    ).toContain(`odgm_objects_converted_total{collection="${COLLECTION}"} ${summary.converted}`);
    await n.close();
    expect(blobCount(await rawScan(dir))).toBe(0);
  });

  it("runs as a real process: offline is refused on the live node's database, online converts with a checkpoint file", async () => {
    const { dir, node: n } = await setup(150, 4);
    const offline = await runBin([
      `--collection=${COLLECTION}`,
      "--partition=0",
      `--data-dir=${dir}`,
    ]);
    expect(offline.code).toBe(3);
    expect(offline.stderr).toMatch(/\[locked\] the database in .* is held by another process/);
    expect(offline.stderr).toContain("--endpoint");

    const missing = await runBin([`--collection=nope`, "--partition=0", `--endpoint=${n.url}`]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain("[not_found]");

    const checkpoint = join(dir, "..", `${Date.now()}-checkpoint.json`);
    cleanups.push(() =>
      import("node:fs/promises").then((fs) => fs.rm(checkpoint, { force: true })),
    );
    const dry = await runBin([
      `--collection=${COLLECTION}`,
      "--partition=0",
      `--endpoint=${n.url}`,
      "--dry-run",
      "--json",
    ]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({
      dryRun: true,
      pendingAtStart: 150,
      entries: 150 * 4 + 30 * 2,
    });

    const args = [
      "--mode=entries",
      `--collection=${COLLECTION}`,
      "--partition=0",
      `--endpoint=${n.url}`,
      `--checkpoint=${checkpoint}`,
      "--throttle=100000",
      "--json",
    ];
    const run = await runBin([...args, "--verify"]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      ok: true,
      converted: 150,
      remaining: 0,
      verified: 150,
      metrics: { odgm_objects_converted_total: 150, odgm_objects_pending_conversion_total: 0 },
    });
    expect(JSON.parse(await readFile(checkpoint, "utf8"))).toMatchObject({
      collection: COLLECTION,
      converted: "150",
      complete: true,
    });
    const again = await runBin(args);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      ok: true,
      converted: 0,
      convertedAllRuns: 150,
    });
  });

  it("lists legacy ids page by page (short calls) in ascending order, after a given id", async () => {
    const { expected, node: n } = await setup(50, 1);
    const target = await openOnlineTarget({
      endpoint: n.url,
      collection: COLLECTION,
      partition: PARTITION,
      batchSize: 8,
      listPageSize: 7,
    });
    try {
      const all: bigint[] = [];
      for await (const id of target.listIds()) all.push(id);
      expect(all).toEqual(expected.map((o) => o.id));
      const after: bigint[] = [];
      for await (const id of target.listIds(expected[20]?.id)) after.push(id);
      expect(after).toEqual(expected.slice(21).map((o) => o.id));
    } finally {
      await target.close();
    }
  });
});
