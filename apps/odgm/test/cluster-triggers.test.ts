// Triggers on a raft partition replicated on three real nodes fire once per committed
// mutation cluster-wide — from the group's leader, after apply, in commit order — whichever
// node the write came through; after a leadership hand-off the new leader goes on without
// firing anything twice, and after the leader is killed no event is fired twice and every
// write acknowledged once the new leader took over fires (the README's at-most-once window
// covers only what the killed leader had applied and not yet dispatched).
import { fromBinary } from "@bufbuild/protobuf";
import { EventType, TriggerPayloadSchema } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";
import {
  collectionAdmin,
  createRaftCollection,
  dataClient,
  leaderOf,
  postJson,
  waitFor,
} from "./fixtures/cluster-probe.js";
import {
  type FunctionServer,
  type ReceivedCall,
  startFunctionServer,
} from "./fixtures/function-server.js";

const enc = new TextEncoder();
let cluster: TestCluster;
let functions: FunctionServer;

beforeAll(async () => {
  functions = await startFunctionServer();
  cluster = await startCluster();
  await cluster.waitReady();
  const admin = collectionAdmin(cluster, 1);
  await createRaftCollection(cluster, admin, {
    name: "c",
    invocations: { fnRoutes: { "on-k": { url: functions.url } } },
  });
  // Object "o" fires `on-k` on every create and update of its entry "k".
  const target = { clsId: "c", partitionId: 0, fnId: "on-k" };
  await waitFor(
    () =>
      dataClient(cluster, 1)
        .set(
          {
            clsId: "c",
            objectIdStr: "o",
            object: {
              event: { dataTriggerStr: { k: { onCreate: [target], onUpdate: [target] } } },
            },
          },
          { timeoutMs: 5000 },
        )
        .then(() => true)
        .catch(() => false),
    30_000,
  );
}, 180_000);
afterAll(async () => {
  await cluster?.close();
  await functions?.close();
});

/** The object version each `on-k` call reports, in arrival order. */
const versions = (): number[] =>
  functions.calls
    .filter((c: ReceivedCall) => c.request.fnId === "on-k")
    .map((c) => {
      const info = fromBinary(TriggerPayloadSchema, c.request.payload).eventInfo;
      expect([EventType.DATA_CREATE, EventType.DATA_UPDATE]).toContain(info?.eventType);
      return Number(info?.context.object_version);
    });
/** Writes `k` through `via`. */
const write = (via: number, value: string) =>
  dataClient(cluster, via).batchSetValues(
    { clsId: "c", objectIdStr: "o", values: { k: { data: enc.encode(value) } } },
    { timeoutMs: 5000 },
  );
/** The object's version, read linearizably through `via`. */
const version = async (via: number): Promise<number> => {
  const r = await dataClient(cluster, via).getValue(
    { clsId: "c", objectIdStr: "o", keyStr: "k" },
    { timeoutMs: 5000 },
  );
  return Number(r.objectVersion);
};
/** Waits until `n` calls have arrived, then a while longer for any extra one. */
const settle = async (n: number): Promise<number[]> => {
  await waitFor(async () => versions().length >= n, 30_000);
  await new Promise((r) => setTimeout(r, 1500));
  return versions();
};

describe("triggers of a raft partition", () => {
  it("fire once per mutation, in commit order, whichever node the writes come through", {
    timeout: 120_000,
  }, async () => {
    for (let i = 0; i < 30; i++) await write(1 + (i % 3), `v${i}`);
    // Versions 2..31: the object's creation (with its trigger configuration) is version 1.
    const seen = await settle(30);
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => i + 2));

    // A leadership hand-off: the new leader fires from where the old one stopped.
    const leader = await leaderOf(cluster, "c/0");
    const next = leader === 3 ? 1 : leader + 1;
    await postJson(cluster, next, "/api/cluster/membership", {
      group: "c/0",
      change: "transfer_leader",
      nodeId: next,
    });
    await waitFor(async () => (await leaderOf(cluster, "c/0")) === next, 30_000);
    for (let i = 30; i < 50; i++) await write(1 + (i % 3), `v${i}`);
    expect(await settle(50)).toEqual(Array.from({ length: 50 }, (_, i) => i + 2));
  });

  it("fire nothing twice after the leader is killed, and fire every write acknowledged after", {
    timeout: 120_000,
  }, async () => {
    const before = versions().length;
    const leader = await leaderOf(cluster, "c/0");
    await cluster.stop(leader, "SIGKILL");
    const survivors = [1, 2, 3].filter((id) => id !== leader);
    // Writes through the survivors until the new leader has acknowledged ten of them.
    const acked: number[] = [];
    // Sequential writes, so the version read right after each acknowledgement is its own.
    for (let i = 0; acked.length < 10 && i < 500; i++) {
      const via = survivors[i % 2] as number;
      try {
        await write(via, `w${i}`);
        acked.push(await version(via));
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    expect(acked).toHaveLength(10);
    const seen = await settle(before + 10);
    expect(new Set(seen).size).toBe(seen.length);
    for (const v of acked) expect(seen).toContain(v);
    // In commit order: each version above the one before.
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThan(seen[i - 1] as number);
  });
});
