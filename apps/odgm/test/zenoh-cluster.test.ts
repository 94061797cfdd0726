// ODGM on Zenoh across a Raft cluster: three odgm processes on one loopback router, a raft
// partition replicated on all three. Queries reach one node and are answered as gRPC would
// (writes forwarded to the leader); a put sample, which every node receives, is applied
// once; each committed change is published once (by the leader); and after the leader is
// killed the survivors keep answering.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Config, open, type Sample, type Session } from "@eclipse-zenoh/zenoh-ts";
import {
  CollectionService,
  DataService,
  EventInfoSchema,
  ValDataSchema,
  ValueResponseSchema,
} from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";
import { createRaftCollection, leaderOf, waitFor } from "./fixtures/cluster-probe.js";
import { type RouterProcess, replies, startRouter } from "./fixtures/zenoh-router.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
const P = "oprc/zk/0";
const val = (s: string) => toBinary(ValDataSchema, create(ValDataSchema, { data: enc.encode(s) }));

let router: RouterProcess;
let cluster: TestCluster;
let session: Session;

beforeAll(async () => {
  router = await startRouter(0);
  cluster = await startCluster({
    env: { ODGM_ZENOH_ENDPOINT: `ws/127.0.0.1:${router.port}`, ODGM_ZENOH_RETRY_MS: "200" },
  });
  await cluster.waitReady();
  const admin = createClient(CollectionService, createGrpcTransport({ baseUrl: cluster.url(1) }));
  await createRaftCollection(cluster, admin, { name: "zk" });
  // Every node has a session and a token for its replica of zk/0.
  session = await open(new Config(`ws/127.0.0.1:${router.port}`, 10_000));
  expect(
    await waitFor(async () => {
      const tokens = await session.liveliness().get(`${P}/shards/*`);
      let n = 0;
      for await (const _ of tokens ?? []) n++;
      return n === 3;
    }, 60_000),
  ).toBeGreaterThanOrEqual(0);
}, 180_000);

afterAll(async () => {
  await session?.close();
  await cluster?.close();
  router?.child.kill("SIGTERM");
  await router?.exited;
});

/**
 * The one reply of an acknowledged write or a read, retried while the group elects. A query
 * with no reply is retried too: right after a node is killed, the router may still route a
 * query to the dead node's queryable, and ends it unanswered once it sees the session gone.
 */
async function answer(key: string, payload?: Uint8Array): Promise<Uint8Array> {
  let last = "";
  let bytes: Uint8Array = new Uint8Array();
  const done = await waitFor(async () => {
    const r = await replies(session, key, payload);
    if (r.length === 0) {
      last = "no reply";
      return false;
    }
    expect(r).toHaveLength(1);
    const a = r[0] as NonNullable<(typeof r)[0]>;
    if ("ok" in a) {
      last = "";
      bytes = a.ok;
      return true;
    }
    last = `${a.err.code}: ${a.err.message}`;
    if (a.err.code !== "unavailable") throw new Error(`${key}: ${last}`);
    return false;
  }, 30_000);
  if (done < 0) throw new Error(`${key}: still ${last}`);
  return bytes;
}

const valueAt = async (key: string) => {
  const r = fromBinary(ValueResponseSchema, await answer(`${P}/sobjects/o/values/${key}`));
  return {
    value: r.value === undefined ? undefined : dec.decode(r.value.data),
    v: r.objectVersion,
  };
};

describe("zenoh on a raft cluster", () => {
  it("answers each query once, applies each put once and publishes each change once", async () => {
    const changes: string[] = [];
    const sub = await session.declareSubscriber(`${P}/sobjects/o/values/*/change`, {
      handler: (s: Sample) => {
        const e = fromBinary(EventInfoSchema, s.payload().toBytes());
        changes.push(`${e.keyStr}@${e.context.version_after}`);
      },
    });
    try {
      await answer(`${P}/sobjects/o/values/a/set`, val("1"));
      expect(await valueAt("a")).toEqual({ value: "1", v: 1n });

      // A put reaches all three nodes; only the leader applies it.
      await session.put(`${P}/sobjects/o/values/b`, val("2"));
      await waitFor(async () => (await valueAt("b")).value === "2", 20_000);
      expect(await valueAt("b")).toEqual({ value: "2", v: 2n });

      // The same version on every replica, read over gRPC from each node.
      for (const id of cluster.ids) {
        const data = createClient(DataService, createGrpcTransport({ baseUrl: cluster.url(id) }));
        const r = await data.getValue(
          { clsId: "zk", objectIdStr: "o", keyStr: "b" },
          { headers: { "odgm-read-consistency": "linearizable" } },
        );
        expect(r.objectVersion).toBe(2n);
      }

      await waitFor(async () => changes.length >= 2, 20_000);
      // Give a duplicate from a follower the chance to arrive before counting.
      await answer(`${P}/sobjects/o/values/c/set`, val("3"));
      await waitFor(async () => changes.length >= 3, 20_000);
      expect(changes).toEqual(["a@1", "b@2", "c@3"]);
    } finally {
      await sub.undeclare();
    }
  });

  it("keeps answering through the survivors after the leader is killed", async () => {
    const leader = await leaderOf(cluster, "zk/0");
    expect(leader).toBeGreaterThan(0);
    await cluster.stop(leader, "SIGKILL");
    await answer(`${P}/sobjects/o/values/d/set`, val("4"));
    const d = await valueAt("d");
    expect(d.value).toBe("4");
    expect(d.v).toBe(4n);
    expect(await leaderOf(cluster, "zk/0", leader)).not.toBe(leader);
  });
});
