// Many raft partitions on three real nodes. Leadership balancing: six partitions of three
// replicas, all of them led by node 1 (through the membership API), end up led two by each
// node, without anyone moving them — node 1 hands them over (ODGM_RAFT_BALANCE_LEADERS, on
// by default). Readiness: a node is not ready while a partition placed on it is still
// opening after its collection was created. A leader whose leadership is moving (to a node
// that cannot take it) holds writes and membership changes until the move is given up.
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";
import {
  clusterView,
  collectionAdmin,
  createRaftCollection,
  dataClient,
  leaderOf,
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
/** The leader of `group` once one is known (the test fails if none is within 30 s). */
const currentLeader = async (group: string): Promise<number> => {
  await waitFor(async () => (await leaderOf(cluster, group)) !== 0, 30_000);
  const leader = await leaderOf(cluster, group);
  expect(leader).not.toBe(0);
  return leader;
};
/** Writes `key` of `object` in partition `partition` of b through node `id`: "ok" or the error. */
const write = (id: number, partition: number, object: string, key: string): Promise<string> =>
  dataClient(cluster, id)
    .setValue(
      {
        clsId: "b",
        partitionId: partition,
        objectIdStr: object,
        keyStr: key,
        value: { data: new TextEncoder().encode("v") },
      },
      { timeoutMs: 10_000 },
    )
    .then(
      () => "ok",
      (e: unknown) => `${Code[ConnectError.from(e).code]}: ${ConnectError.from(e).rawMessage}`,
    );

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

  it("applies every write forwarded by a follower while leadership moves between the others", {
    timeout: 60_000,
  }, async () => {
    const group = "b/1";
    const first = await currentLeader(group);
    const follower = first === 3 ? 2 : 3;
    const second = [1, 2, 3].find((id) => id !== first && id !== follower) as number;
    let stop = false;
    const outcomes: string[] = [];
    const writer = async (w: number) => {
      for (let n = 0; !stop; n++) {
        outcomes.push(await write(follower, 1, `hand-off-${w}`, `k${n}`));
      }
    };
    const writers = Array.from({ length: 16 }, (_, w) => writer(w));
    try {
      // Leadership goes back and forth between the two nodes the writes do not go through;
      // each hand-off is asked where the group leads at that moment.
      for (let round = 0; round < 6; round++) {
        const to = round % 2 === 0 ? second : first;
        const from = round % 2 === 0 ? first : second;
        await postJson(cluster, from, "/api/cluster/membership", {
          group,
          change: "transfer_leader",
          nodeId: to,
        });
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      stop = true;
      await Promise.all(writers);
    }
    expect(outcomes.length).toBeGreaterThan(50);
    expect(outcomes.filter((o) => o !== "ok")).toEqual([]);
  });

  it("holds a write and a membership change on a leader whose leadership is moving, until the move is given up", {
    timeout: 60_000,
  }, async () => {
    // Runs last: it stops a node and removes it from b/0.
    const group = "b/0";
    const leader = await currentLeader(group);
    const target = [1, 2, 3].find((id) => id !== leader) as number;
    await cluster.stop(target);
    // The transfer to a stopped node cannot finish: the leader refuses new entries until it
    // gives it up, one election timeout later (the admin call itself fails in the end).
    const transfer = postJson(cluster, leader, "/api/cluster/membership", {
      group,
      change: "transfer_leader",
      nodeId: target,
    }).catch((e: unknown) => (e as Error).message);
    await new Promise((r) => setTimeout(r, 100));
    const removal = postJson(cluster, leader, "/api/cluster/membership", {
      group,
      change: "remove",
      nodeId: target,
    });
    // Through the leader, and forwarded by the other live node.
    const other = [1, 2, 3].find((id) => id !== leader && id !== target) as number;
    const outcomes: string[] = [];
    for (let n = 0, end = Date.now() + 1000; Date.now() < end; n++) {
      outcomes.push(await write(n % 2 === 0 ? leader : other, 0, "moving", `k${n}`));
    }
    expect(outcomes.filter((o) => o !== "ok")).toEqual([]);
    const removed = (await removal) as { groups: Record<string, { voters: number[] }> };
    expect(removed.groups[group]?.voters).not.toContain(target);
    await transfer;
  });
});
