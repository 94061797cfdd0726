// Many raft partitions on three real nodes. Leadership balancing: six partitions of three
// replicas, all of them led by node 1 (through the membership API), end up led two by each
// node, without anyone moving them — node 1 hands them over (ODGM_RAFT_BALANCE_LEADERS, on
// by default). Readiness: a node is not ready while a partition placed on it is still
// opening after its collection was created.
import { ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";
import {
  clusterView,
  collectionAdmin,
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
  const admin = collectionAdmin(cluster, 1);
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

  it("a node is not ready while a raft partition placed on it is still opening", {
    timeout: 60_000,
  }, async () => {
    // 48 partitions of one replica, all on node 1: it opens their groups one after the other
    // once the metadata group has applied the collection, each electing itself at once, so
    // between two of them every group it has open is led (all readiness looked at before).
    const admin = collectionAdmin(cluster, 2);
    await waitFor(
      () =>
        admin
          .createCollection({
            name: "wide",
            partitionCount: 48,
            shardType: "raft",
            replicaCount: 1,
            shardAssignments: Array.from({ length: 48 }, () => ({ primary: 1n, replica: [] })),
          })
          .then(() => true)
          .catch(() => false),
      30_000,
    );
    // Node 1 has applied the collection (its partitions are placed on it from then on) …
    const one = collectionAdmin(cluster, 1);
    await waitFor(
      async () => (await one.listCollections({})).collections.some((c) => c.name === "wide"),
      30_000,
    );
    // … and is ready again.
    await waitFor(async () => (await fetch(`${cluster.url(1)}/readyz`)).ok, 30_000);
    // Ready means every partition placed on node 1 has its group open there: a follower
    // listing of each is served at once (before, some answered "not on this node").
    for (let p = 0; p < 48; p++) {
      const listed = await (async () => {
        const ids: string[] = [];
        for await (const o of dataClient(cluster, 1).listObjects(
          { clsId: "wide", partitionId: p },
          { headers: { "odgm-read-consistency": "follower" }, timeoutMs: 5000 },
        )) {
          ids.push(o.objectId);
        }
        return ids;
      })().catch((e: unknown) => ConnectError.from(e).rawMessage);
      expect(listed, `partition ${p}`).toEqual([]);
    }
  });
});
