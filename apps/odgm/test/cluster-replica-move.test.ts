// Moving a replica of a partition to another node, as the README describes (add the new
// one, remove the old): every node keeps answering for the partition, including one that
// holds no replica of it and still routes by the collection's original placement.
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CollectionService, DataService } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";
import { clusterView, createRaftCollection, waitFor } from "./fixtures/cluster-probe.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startCluster({ ids: [1, 2, 3, 4] });
  await cluster.waitReady();
  const admin = createClient(CollectionService, createGrpcTransport({ baseUrl: cluster.url(1) }));
  // Two replicas, on nodes 1 and 2: nodes 3 and 4 hold none.
  await createRaftCollection(cluster, admin, {
    name: "moved",
    replicaCount: 2,
    shardAssignments: [{ primary: 1n, replica: [2n] }],
  });
}, 180_000);
afterAll(async () => {
  await cluster?.close();
});

const data = (id: number) =>
  createClient(DataService, createGrpcTransport({ baseUrl: cluster.url(id) }));
const membership = async (id: number, change: string, nodeId: number): Promise<void> => {
  const res = await fetch(`${cluster.url(id)}/api/cluster/membership`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ group: "moved/0", change, nodeId }),
  });
  if (!res.ok) throw new Error(`${change} ${nodeId}: ${res.status} ${await res.text()}`);
};
const group = async (id: number) =>
  (await clusterView(cluster.url(id)))?.groups.find((g) => g.group === "moved/0");

describe("moving a replica", () => {
  it("keeps every node answering for the partition, by its original placement too", {
    timeout: 120_000,
  }, async () => {
    const put = (via: number, value: string) =>
      data(via).setValue(
        { clsId: "moved", objectIdStr: "o", keyStr: "k", value: { data: enc.encode(value) } },
        { timeoutMs: 5000 },
      );
    const get = async (via: number) =>
      dec.decode(
        (
          await data(via).getValue(
            { clsId: "moved", objectIdStr: "o", keyStr: "k" },
            { timeoutMs: 5000 },
          )
        ).value?.data,
      );
    await put(4, "before");
    // Move the replica of node 1 to node 3.
    await membership(2, "add_learner", 3);
    const leaderApplied = (await group(2))?.appliedIndex ?? 0;
    const caughtUp = await waitFor(
      async () => ((await group(3))?.appliedIndex ?? 0) >= leaderApplied,
      30_000,
    );
    expect(caughtUp, cluster.output(3).slice(-3000)).toBeGreaterThanOrEqual(0);
    await membership(2, "promote", 3);
    // Node 1 leads when it is removed: it keeps leading until the new voters know the whole
    // log is committed, hands over, and only then closes its replica.
    await membership(2, "transfer_leader", 1);
    const leads = await waitFor(async () => (await group(2))?.leader === 1, 10_000);
    expect(leads).toBeGreaterThanOrEqual(0);
    await membership(2, "remove", 1);
    const closed = await waitFor(async () => (await group(1)) === undefined, 10_000);
    expect(closed, cluster.output(1).slice(-3000)).toBeGreaterThanOrEqual(0);
    expect((await group(2))?.voters).toEqual([2, 3]);
    const newLeader = await waitFor(
      async () => [2, 3].includes((await group(2))?.leader ?? 0),
      10_000,
    );
    expect(newLeader).toBeGreaterThanOrEqual(0);
    // Node 4 routes by the placement [1, 2]: node 1 sends the call on to the voters.
    await put(4, "after");
    for (const via of [1, 2, 3, 4]) expect(await get(via), `via node ${via}`).toBe("after");
    await put(1, "through the old node");
    for (const via of [1, 2, 3, 4]) {
      expect(await get(via), `via node ${via}`).toBe("through the old node");
    }
  });
});
