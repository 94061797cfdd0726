// A rolling restart of a three-node Raft cluster through the rollout phases (seed 000 §13.4),
// one node at a time, while a client keeps writing numeric-id and string-id objects of a
// replicated collection: storage phase A (dual-write) with seed 000 phase 3, then C/D
// (defaults), then seed 000 phase 4 (numeric creates warned), then the remaining blobs
// converted through the Raft log, then phase F with seed 000 phase 5. No client request
// fails beyond its retries, and every node ends with every acknowledged write.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CollectionService, DataService, MaintenanceService } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
let cluster: TestCluster;

const transport = (id: number) => createGrpcTransport({ baseUrl: cluster.url(id) });
const data = (id: number) => createClient(DataService, transport(id));

/** Codes a restarting node, a reset connection or a leader change give; the client retries them. */
const RETRIED = new Set([
  Code.Aborted, // connect-node reports a reset connection so; these writes have no CAS
  Code.Unavailable,
  Code.Canceled,
  Code.DeadlineExceeded,
  Code.Internal,
  Code.Unknown,
]);

let retries = 0;
/** Runs `fn` against node after node until it succeeds or 20 s pass. */
async function withRetries<T>(fn: (node: number) => Promise<T>, start: number): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (let attempt = 0; ; attempt++) {
    const node = cluster.ids[(start + attempt) % cluster.ids.length] as number;
    try {
      return await fn(node);
    } catch (err) {
      const e = ConnectError.from(err);
      if (!RETRIED.has(e.code) || Date.now() > deadline) throw err;
      retries++;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

const NUMERIC = [1n, 2n, 3n, 4n];
const STRINGS = ["s1", "s2", "s3", "s4"];
const ref = (o: bigint | string) =>
  typeof o === "bigint"
    ? { clsId: "r", partitionId: Number(o % 2n), objectId: o }
    : { clsId: "r", partitionId: o.length % 2, objectIdStr: o };

beforeAll(async () => {
  cluster = await startCluster({ env: { ODGM_ENABLE_GRANULAR_STORAGE: "false" } });
  await cluster.waitReady();
  await withRetries(
    (n) =>
      createClient(CollectionService, transport(n)).createCollection({
        name: "r",
        partitionCount: 2,
        shardType: "raft",
        replicaCount: 3,
      }),
    0,
  );
  await cluster.waitReady();
}, 120_000);
afterAll(async () => {
  await cluster?.close();
});

describe("a rolling restart through the rollout phases", () => {
  it("loses no acknowledged write and fails no request beyond retries", {
    timeout: 240_000,
  }, async () => {
    const last = new Map<bigint | string, string>();
    let writes = 0;
    const write = async (o: bigint | string, value: string) => {
      await withRetries(
        (n) => data(n).setValue({ ...ref(o), keyStr: "v", value: { data: enc.encode(value) } }),
        writes,
      );
      last.set(o, value);
      writes++;
    };
    // Every object exists before the rollout (phase 5 refuses numeric creates).
    for (const o of [...NUMERIC, ...STRINGS]) await write(o, "init");

    let stop = false;
    const failures: string[] = [];
    const client = (async () => {
      for (let i = 0; !stop; i++) {
        const all = [...NUMERIC, ...STRINGS];
        const o = all[i % all.length] as bigint | string;
        try {
          await write(o, `w${i}`);
        } catch (err) {
          failures.push(`${String(o)} w${i}: ${ConnectError.from(err).message}`);
        }
      }
    })();

    const roll = async (env: Record<string, string>) => {
      for (const id of cluster.ids) {
        expect(await cluster.stop(id), cluster.output(id).slice(-3000)).toBe(0);
        // The cluster started every node in phase A; each step replaces that setting.
        await cluster.start(id, { ODGM_ENABLE_GRANULAR_STORAGE: "true", ...env });
        await cluster.waitReady();
      }
    };
    try {
      await roll({}); // storage C/D: blobs no longer written
      await roll({ ODGM_NUMERIC_ID_CREATES: "warn" }); // seed 000 phase 4
      // Storage E: the blobs dual-write left are dropped through the Raft log.
      const maintenance = createClient(MaintenanceService, transport(1));
      for (const partitionId of [0, 1]) {
        const ids: bigint[] = [];
        for await (const page of maintenance.listLegacyObjects({ clsId: "r", partitionId }))
          ids.push(...page.objectIds);
        expect(ids.length).toBeGreaterThan(0);
        await withRetries(
          (n) =>
            createClient(MaintenanceService, transport(n)).convertLegacyObjects({
              clsId: "r",
              partitionId,
              objectIds: ids,
            }),
          0,
        );
      }
      // Storage F with seed 000 phase 5: each node starts only because no blob remains.
      await roll({ ODGM_BLOB_FALLBACK: "false", ODGM_NUMERIC_ID_CREATES: "refuse" });
    } finally {
      stop = true;
      await client;
    }
    console.log(`rolling restart: ${writes} writes acknowledged, ${retries} retries`);
    expect(failures).toEqual([]);
    expect(writes).toBeGreaterThan(8 * 4);
    for (const id of cluster.ids) {
      for (const [o, value] of last) {
        const got = await data(id).getValue({ ...ref(o), keyStr: "v" });
        expect(dec.decode(got.value?.data), `${String(o)} on node ${id}`).toBe(value);
      }
    }
    // Phase 5: a numeric create is refused, everywhere.
    const refused = await data(1)
      .setValue({ ...ref(99n), keyStr: "v", value: { data: enc.encode("x") } })
      .then(
        () => 0,
        (err: unknown) => ConnectError.from(err).code,
      );
    expect(refused).toBe(Code.FailedPrecondition);
  });
});
