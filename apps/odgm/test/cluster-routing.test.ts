// Any node answers any request: four nodes, a raft partition on nodes 1–3 only, and every
// kind of request sent to node 4 — which holds no replica — is answered as node 1 would,
// over gRPC and REST, also with the first replica down. With every replica down, node 4
// answers UNAVAILABLE.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CollectionService, WatchService } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";
import { createRaftCollection, dataClient, leaderOf, waitFor } from "./fixtures/cluster-probe.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
let cluster: TestCluster;
const data = (id: number) => dataClient(cluster, id);

beforeAll(async () => {
  cluster = await startCluster({ ids: [1, 2, 3, 4], env: { ODGM_RAFT_ELECTION_TICKS: "30" } });
  await cluster.waitReady();
  const admin = createClient(CollectionService, createGrpcTransport({ baseUrl: cluster.url(4) }));
  await createRaftCollection(cluster, admin, {
    name: "kv",
    shardAssignments: [{ primary: 1n, replica: [2n, 3n] }],
  });
}, 180_000);
afterAll(async () => {
  await cluster?.close();
});

describe("a node without a replica of the partition", () => {
  it("serves writes, reads, CAS and listings of it through a node that has one", async () => {
    const four = data(4);
    await waitFor(
      () =>
        four
          .setValue(
            { clsId: "kv", objectIdStr: "o", keyStr: "a", value: { data: enc.encode("1") } },
            { timeoutMs: 5000 },
          )
          .then(() => true)
          .catch(() => false),
      30_000,
    );
    await four.batchSetValues({
      clsId: "kv",
      objectIdStr: "o",
      values: { b: { data: enc.encode("2") } },
      expectedObjectVersion: 1n,
    });
    const viaFour = await four.getValue({ clsId: "kv", objectIdStr: "o", keyStr: "b" });
    const viaOne = await data(1).getValue({ clsId: "kv", objectIdStr: "o", keyStr: "b" });
    expect(dec.decode(viaFour.value?.data)).toBe("2");
    expect(viaFour.objectVersion).toBe(2n);
    expect(viaOne.objectVersion).toBe(2n);

    // A refused CAS keeps its code and message across the hop.
    const cas = await four
      .batchSetValues({
        clsId: "kv",
        objectIdStr: "o",
        values: { c: { data: enc.encode("3") } },
        expectedObjectVersion: 1n,
      })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(cas?.code).toBe(Code.Aborted);
    expect(cas?.rawMessage).toMatch(/^\[version_mismatch\] expected object version 1, actual 2/);

    const obj = await four.get({ clsId: "kv", objectIdStr: "o" });
    expect(Object.keys(obj.obj?.entriesStr ?? {}).sort()).toEqual(["a", "b"]);
    const keys: string[] = [];
    for await (const e of four.listValues({ clsId: "kv", objectIdStr: "o" })) keys.push(e.key);
    expect(keys.sort()).toEqual(["a", "b"]);
    const ids: string[] = [];
    for await (const o of four.listObjects({ clsId: "kv" })) ids.push(o.objectId);
    expect(ids).toEqual(["o"]);
    const missing = await four.get({ clsId: "kv", objectIdStr: "nope" }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e).code,
    );
    expect(missing).toBe(Code.NotFound);

    // REST reaches the same data plane.
    const rest = await fetch(`${cluster.url(4)}/api/class/kv/0/objects/o/values/a`);
    expect(rest.status).toBe(200);
    expect(await rest.text()).toContain("1");
    await four.deleteValue({ clsId: "kv", objectIdStr: "o", keyStr: "a" });
    expect(
      (await data(2).getValue({ clsId: "kv", objectIdStr: "o", keyStr: "a" })).value,
    ).toBeUndefined();

    const metrics = await (await fetch(`${cluster.url(4)}/metrics`)).text();
    expect(metrics).toMatch(/odgm_raft_forwarded_total\{kind="request"\} [1-9]/);

    // A watch is served only where a replica is: the refusal says where.
    const watch = createClient(WatchService, createGrpcTransport({ baseUrl: cluster.url(4) }));
    const refused = await (async () => {
      for await (const _ of watch.watch({ clsId: "kv" })) return undefined;
    })().then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(refused?.code).toBe(Code.FailedPrecondition);
    expect(refused?.rawMessage).toMatch(/holds no replica of kv\/0: .*\(node 1, node 2, node 3\)/);
  });

  it("lists through the next replica when the first is down; REST reads may ask for follower consistency", {
    timeout: 60_000,
  }, async () => {
    await cluster.stop(1, "SIGKILL");
    const four = data(4);
    // Follower reads: node 1 may have led the group, and a linearizable read would wait for
    // the election, which is not what this is about.
    const follower = { "odgm-read-consistency": "follower" };
    const ids: string[] = [];
    for await (const o of four.listObjects({ clsId: "kv" }, { headers: follower })) {
      ids.push(o.objectId);
    }
    expect(ids).toEqual(["o"]);
    const keys: string[] = [];
    for await (const e of four.listValues(
      { clsId: "kv", objectIdStr: "o" },
      { headers: follower },
    )) {
      keys.push(e.key);
    }
    expect(keys).toEqual(["b"]);
    const listed = await fetch(`${cluster.url(4)}/api/class/kv/0/objects`, { headers: follower });
    expect(listed.status).toBe(200);
    expect(await listed.text()).toContain('"objectId":"o"');
    const read = await fetch(`${cluster.url(4)}/api/class/kv/0/objects/o/values/b`, {
      headers: follower,
    });
    expect(read.status).toBe(200);
    // The header reaches the data plane: a value it does not know is refused.
    const bad = await fetch(`${cluster.url(4)}/api/class/kv/0/objects/o/values/b`, {
      headers: { "odgm-read-consistency": "eventually" },
    });
    expect(bad.status).toBe(400);
  });

  it("a write the leader's refused connection never carried is UNAVAILABLE, said not applied, with the leader's address", {
    timeout: 60_000,
  }, async () => {
    // Node 1 is down (the case before): with the leader of nodes 2 and 3 killed as well, the
    // other one still takes it for the leader until its election timeout (1.5-3 s here: 30
    // ticks, so a loaded machine does not run it out first), and its connection to it is
    // refused.
    let leader = 0;
    await waitFor(async () => {
      leader = await leaderOf(cluster, "kv/0", 1);
      return leader !== 0;
    }, 30_000);
    expect([2, 3]).toContain(leader);
    const survivor = leader === 2 ? 3 : 2;
    await cluster.stop(leader, "SIGKILL");
    const [grpc, rest] = await Promise.all([
      data(survivor)
        .setValue(
          { clsId: "kv", objectIdStr: "o", keyStr: "x", value: { data: enc.encode("1") } },
          { timeoutMs: 10_000 },
        )
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        ),
      fetch(`${cluster.url(survivor)}/api/class/kv/0/objects/o/values/y`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: '{"value":1}',
      }),
    ]);
    expect(grpc?.code).toBe(Code.Unavailable);
    expect(grpc?.rawMessage).toMatch(
      new RegExp(
        `leader \\(node ${leader}\\) of group kv/0: the connection was refused, so the operation was not applied`,
      ),
    );
    expect(grpc?.metadata.get("odgm-leader-hint")).toBe(cluster.url(leader));
    expect(rest.status).toBe(503);
    expect(rest.headers.get("retry-after")).toBe("1");
    expect(rest.headers.get("odgm-leader-hint")).toBe(cluster.url(leader));
  });

  it("answers UNAVAILABLE when no replica can be reached", { timeout: 60_000 }, async () => {
    for (const id of [1, 2, 3]) await cluster.stop(id, "SIGKILL");
    const err = await data(4)
      .getValue({ clsId: "kv", objectIdStr: "o", keyStr: "b" }, { timeoutMs: 10_000 })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(err?.code).toBe(Code.Unavailable);
    expect(err?.rawMessage).toMatch(/no node holding this partition could be reached/);
  });
});
