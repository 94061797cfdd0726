// Leadership balancing on real processes: six raft partitions of three replicas, all of them
// led by node 1 (through the membership API), end up led two by each node, without anyone
// moving them — node 1 hands them over (ODGM_RAFT_BALANCE_LEADERS, on by default).
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CollectionService } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";
import {
  clusterView,
  createRaftCollection,
  dataClient,
  postJson,
  waitFor,
} from "./fixtures/cluster-probe.js";

const GROUPS = ["b/0", "b/1", "b/2", "b/3", "b/4", "b/5"];
let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startCluster();
  await cluster.waitReady();
  const admin = createClient(CollectionService, createGrpcTransport({ baseUrl: cluster.url(1) }));
  await createRaftCollection(cluster, admin, { name: "b", partitionCount: 6 });
}, 180_000);
afterAll(async () => {
  await cluster?.close();
});

/** How many of the six groups each node leads, as node 1 sees them. */
const leaderships = async (): Promise<number[]> => {
  const v = await clusterView(cluster.url(1));
  const c = [0, 0, 0];
  for (const g of v?.groups ?? []) {
    if (GROUPS.includes(g.group) && g.leader >= 1 && g.leader <= 3)
      c[g.leader - 1] = (c[g.leader - 1] ?? 0) + 1;
  }
  return c;
};
const handedOver = () => cluster.output(1).includes("balancing leadership");

describe("leadership balancing", () => {
  it("spreads the groups one node leads over the others", { timeout: 120_000 }, async () => {
    // Node 1 takes every group (until it leads all six, or has already begun handing them
    // back, which shows the same).
    const concentrated = await waitFor(async () => {
      for (const group of GROUPS) {
        await postJson(cluster, 1, "/api/cluster/membership", {
          group,
          change: "transfer_leader",
          nodeId: 1,
        }).catch(() => undefined);
      }
      return (await leaderships())[0] === 6 || handedOver();
    }, 30_000);
    expect(concentrated).toBeGreaterThanOrEqual(0);
    const balanced = await waitFor(async () => {
      const c = await leaderships();
      return c.every((n) => n === 2);
    }, 60_000);
    expect(
      balanced,
      `${await leaderships()}\n${cluster.output(1).slice(-3000)}`,
    ).toBeGreaterThanOrEqual(0);
    expect(handedOver()).toBe(true);
    // Writes to every partition are served where they now lead.
    for (let p = 0; p < 6; p++) {
      await dataClient(cluster, 2).setValue(
        {
          clsId: "b",
          partitionId: p,
          objectIdStr: "o",
          keyStr: "k",
          value: { data: new Uint8Array([p]) },
        },
        { timeoutMs: 5000 },
      );
    }
  });
});
