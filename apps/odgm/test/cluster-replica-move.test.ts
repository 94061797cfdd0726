// Moving a replica of a partition to another node, as the README describes (add the new
// one, remove the old): every node keeps answering for the partition, including one that
// holds no replica of it and routes by the replica set the metadata group records; and a
// node removed from a group while it was down does not serve a stale replica when it is back.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  ChangeMembershipRequest_Change,
  ClusterService,
  CollectionService,
  DataService,
} from "@oprc/grpc-api";
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
const membership = async (
  id: number,
  change: string,
  nodeId: number,
  groupId = "moved/0",
): Promise<{ voters: number[]; learners: number[] }> => {
  const res = await fetch(`${cluster.url(id)}/api/cluster/membership`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ group: groupId, change, nodeId }),
  });
  if (!res.ok) throw new Error(`${change} ${nodeId}: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as {
    groups: Record<string, { voters: number[]; learners: number[] }>;
  };
  return body.groups[groupId] as { voters: number[]; learners: number[] };
};
/** The status, and the error body when refused, of a membership change. */
const refusal = async (id: number, change: string, nodeId: number, groupId: string) => {
  const res = await fetch(`${cluster.url(id)}/api/cluster/membership`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ group: groupId, change, nodeId }),
  });
  const body = (await res.json()) as { error?: { code: string; message: string } };
  return { status: res.status, ...body.error };
};
const group = async (id: number, groupId = "moved/0") =>
  (await clusterView(cluster.url(id)))?.groups.find((g) => g.group === groupId);
/** The replica set of `groupId` that node `id` knows from the metadata group. */
const recorded = async (id: number, groupId: string) => {
  const res = await fetch(`${cluster.url(id)}/api/cluster`).catch(() => undefined);
  if (res?.ok !== true) return undefined;
  const body = (await res.json()) as { replicas: { group: string; voters: number[] }[] };
  return body.replicas.find((r) => r.group === groupId);
};
const put = (via: number, value: string, cls = "moved") =>
  data(via).setValue(
    { clsId: cls, objectIdStr: "o", keyStr: "k", value: { data: enc.encode(value) } },
    { timeoutMs: 5000 },
  );
const get = async (via: number, cls = "moved") =>
  dec.decode(
    (await data(via).getValue({ clsId: cls, objectIdStr: "o", keyStr: "k" }, { timeoutMs: 5000 }))
      .value?.data,
  );
/** Adds `nodeId` to `groupId` through node `via` and promotes it once it has caught up. */
const addVoter = async (via: number, nodeId: number, groupId: string) => {
  // Each change answers with the membership it resulted in.
  expect((await membership(via, "add_learner", nodeId, groupId)).learners).toContain(nodeId);
  const leaderApplied = (await group(via, groupId))?.appliedIndex ?? 0;
  const caughtUp = await waitFor(
    async () => ((await group(nodeId, groupId))?.appliedIndex ?? 0) >= leaderApplied,
    30_000,
  );
  expect(caughtUp, cluster.output(nodeId).slice(-3000)).toBeGreaterThanOrEqual(0);
  const promoted = await membership(via, "promote", nodeId, groupId);
  expect(promoted.voters).toContain(nodeId);
  expect(promoted.learners).not.toContain(nodeId);
};

describe("moving a replica", () => {
  it("keeps every node answering for the partition, by its original placement too", {
    timeout: 120_000,
  }, async () => {
    await put(4, "before");
    // Move the replica of node 1 to node 3.
    await addVoter(2, 3, "moved/0");
    // Node 1 leads when it is removed: it keeps leading until the new voters know the whole
    // log is committed, hands over, and only then closes its replica.
    // A transfer not done within three election timeouts answers UNAVAILABLE ("retry
    // later"): on a loaded machine it can take longer, so it is asked again (a CI run
    // failed here once, 503 after 1.5 s).
    const transferred = await waitFor(
      async () => (await refusal(2, "transfer_leader", 1, "moved/0")).status === 200,
      20_000,
    );
    expect(transferred).toBeGreaterThanOrEqual(0);
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
    // Node 4 routes by the placement [1, 2] until it learns the new replica set, node 1
    // sends the call on to the voters; either way it arrives.
    await put(4, "after");
    for (const via of [1, 2, 3, 4]) expect(await get(via), `via node ${via}`).toBe("after");
    await put(1, "through the old node");
    for (const via of [1, 2, 3, 4]) {
      expect(await get(via), `via node ${via}`).toBe("through the old node");
    }
  });

  it("routes by the replica set the metadata group records once the placed nodes are gone", {
    timeout: 120_000,
  }, async () => {
    const admin = createClient(CollectionService, createGrpcTransport({ baseUrl: cluster.url(2) }));
    // One replica, on node 1; moved to node 3, then node 1 stops for good.
    await createRaftCollection(cluster, admin, {
      name: "single",
      replicaCount: 1,
      shardAssignments: [{ primary: 1n, replica: [] }],
    });
    await put(4, "one", "single");
    await addVoter(1, 3, "single/0");
    await membership(1, "remove", 1, "single/0");
    const closed = await waitFor(async () => (await group(1, "single/0")) === undefined, 10_000);
    expect(closed, cluster.output(1).slice(-3000)).toBeGreaterThanOrEqual(0);
    // The new leader records the replica set; every node learns it.
    const known = await waitFor(async () => {
      for (const id of [1, 2, 3, 4]) {
        if ((await recorded(id, "single/0"))?.voters.join() !== "3") return false;
      }
      return true;
    }, 15_000);
    expect(known, cluster.output(3).slice(-3000)).toBeGreaterThanOrEqual(0);
    // Node 1 recorded it as it applied its removal; node 3 leads once node 1 has handed over
    // (or, should that message be lost, after an election timeout). Killed before then, the
    // group has no leader until node 3 notices, and writes are refused for a retry.
    const leads = await waitFor(async () => (await group(3, "single/0"))?.leader === 3, 10_000);
    expect(leads, cluster.output(3).slice(-3000)).toBeGreaterThanOrEqual(0);
    await cluster.stop(1, "SIGKILL");
    // Nodes 2 and 4 hold no replica; the placement says node 1, which is gone.
    await put(4, "two", "single");
    await put(2, "three", "single");
    for (const via of [2, 3, 4]) expect(await get(via, "single"), `via node ${via}`).toBe("three");
    await cluster.start(1);
    await cluster.waitReady();
    expect(await get(1, "single")).toBe("three");
  });

  it("retires a replica whose node was removed from the group while it was down", {
    timeout: 180_000,
  }, async () => {
    const admin = createClient(CollectionService, createGrpcTransport({ baseUrl: cluster.url(1) }));
    await createRaftCollection(cluster, admin, {
      name: "trio",
      replicaCount: 3,
      shardAssignments: [{ primary: 1n, replica: [2n, 3n] }],
    });
    await put(1, "before", "trio");
    // Node 2 goes down; node 4 replaces it meanwhile (once the group has a leader again,
    // should node 2 have led it).
    await cluster.stop(2, "SIGKILL");
    const led = await waitFor(
      async () => [1, 3].includes((await group(1, "trio/0"))?.leader ?? 0),
      30_000,
    );
    expect(led).toBeGreaterThanOrEqual(0);
    await addVoter(1, 4, "trio/0");
    expect((await membership(1, "remove", 2, "trio/0")).voters.sort()).toEqual([1, 3, 4]);
    await put(4, "while node 2 was down", "trio");
    // Node 2 comes back with its replica and the configuration that had it; it hears of its
    // removal from the metadata group and closes the replica, which no leader talks to.
    await cluster.start(2);
    const retired = await waitFor(async () => (await group(2, "trio/0")) === undefined, 30_000);
    expect(retired, cluster.output(2).slice(-3000)).toBeGreaterThanOrEqual(0);
    expect((await recorded(2, "trio/0"))?.voters.sort()).toEqual([1, 3, 4]);
    expect(await get(2, "trio")).toBe("while node 2 was down");
    await put(2, "through node 2", "trio");
    for (const via of [1, 2, 3, 4]) {
      expect(await get(via, "trio"), `via node ${via}`).toBe("through node 2");
    }
    // A restart keeps it retired.
    await cluster.stop(2);
    await cluster.start(2);
    await cluster.waitReady();
    expect(await group(2, "trio/0")).toBeUndefined();
    expect(await get(2, "trio")).toBe("through node 2");
  });

  it("refuses membership changes that would weaken a group, saying why", {
    timeout: 120_000,
  }, async () => {
    // trio/0 has the voters 1, 3 and 4 now; node 2 was removed from it.
    const refused = (status: number, code: string, message: RegExp) =>
      expect.objectContaining({ status, code, message: expect.stringMatching(message) });
    expect(await refusal(3, "add_learner", 9, "trio/0")).toEqual(
      refused(400, "failed_precondition", /node 9 is not a member of the cluster/),
    );
    expect(await refusal(3, "promote", 2, "trio/0")).toEqual(
      refused(400, "failed_precondition", /node 2 is not a learner of group trio\/0/),
    );
    expect(await refusal(3, "transfer_leader", 2, "trio/0")).toEqual(
      refused(400, "failed_precondition", /node 2 is not a voter/),
    );
    // Raft would demote the voter.
    expect(await refusal(2, "add_learner", 1, "trio/0")).toEqual(
      refused(400, "failed_precondition", /node 1 is already a voter/),
    );
    expect(await refusal(2, "add_learner", 2, "trio/7")).toEqual(
      refused(404, "not_found", /no raft group trio\/7/),
    );
    expect(await refusal(4, "remove", 3, "single/0")).toEqual(
      refused(400, "failed_precondition", /node 3 is the only voter/),
    );
    // The same through gRPC.
    const admin = createClient(ClusterService, createGrpcTransport({ baseUrl: cluster.url(1) }));
    const err = await admin
      .changeMembership({
        group: "trio/0",
        change: ChangeMembershipRequest_Change.PROMOTE,
        nodeId: 2n,
      })
      .catch((e: unknown) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
    // Removing a node that is not in the group changes nothing.
    expect((await membership(3, "remove", 2, "trio/0")).voters.sort()).toEqual([1, 3, 4]);
    // A learner that cannot catch up (its node is down) is not promoted: a voter that cannot
    // vote would count toward every quorum.
    await cluster.stop(2, "SIGKILL");
    expect((await membership(3, "add_learner", 2, "trio/0")).learners).toEqual([2]);
    await put(1, "after node 2 was added as a learner", "trio");
    // Asked of a voter that does not lead: the leader waits, refuses, and the refusal comes back.
    const leader = (await group(1, "trio/0"))?.leader;
    const follower = [1, 3, 4].find((id) => id !== leader) as number;
    expect(await refusal(follower, "promote", 2, "trio/0")).toEqual(
      refused(400, "failed_precondition", /learner 2 of group trio\/0 has acknowledged/),
    );
    expect((await membership(3, "remove", 2, "trio/0")).learners).toEqual([]);
    await cluster.start(2);
  });
});
