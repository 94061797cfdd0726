// Three real odgm processes on loopback: replicated collections, any node answering any
// request, CAS races across nodes, and a restart of the whole cluster.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  ClusterService,
  CollectionService,
  DataService,
  RaftMessageType as MessageType,
  type RaftBatchSchema,
  type RaftMessageType,
  RaftService,
} from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
let cluster: TestCluster;

const data = (id: number) =>
  createClient(DataService, createGrpcTransport({ baseUrl: cluster.url(id) }));
const admin = (id: number) =>
  createClient(CollectionService, createGrpcTransport({ baseUrl: cluster.url(id) }));

/** Retries `fn` while the cluster settles (leader elections after start or restart). */
async function eventually<T>(fn: () => Promise<T>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

beforeAll(async () => {
  cluster = await startCluster();
  await cluster.waitReady();
}, 120_000);
afterAll(async () => {
  await cluster?.close();
});

describe("a three-node cluster", () => {
  it("creates a collection on one node and every node serves it", async () => {
    await eventually(() =>
      admin(2).createCollection({
        name: "kv",
        partitionCount: 2,
        shardType: "raft",
        replicaCount: 3,
      }),
    );
    for (const id of cluster.ids) {
      const listed = await eventually(async () => {
        const l = await admin(id).listCollections({});
        if (!l.collections.some((c) => c.name === "kv")) throw new Error("not yet");
        return l;
      });
      const kv = listed.collections.find((c) => c.name === "kv");
      expect(kv?.shardType).toBe("raft");
      expect(kv?.shardAssignments).toHaveLength(2);
    }
    await cluster.waitReady();
  });

  it("a collection created through a node the metadata group's leader is not on is there on that node at once", async () => {
    const view = async (id: number) =>
      (await (await fetch(`${cluster.url(id)}/api/cluster`)).json()) as {
        groups: { group: string; leader: number }[];
      };
    let metaLeader = 0;
    await eventually(async () => {
      metaLeader = (await view(1)).groups.find((g) => g.group === "meta")?.leader ?? 0;
      if (metaLeader === 0) throw new Error("no metadata leader yet");
    });
    const others = cluster.ids.filter((id) => id !== metaLeader);
    expect(others).toHaveLength(2);
    for (const via of others) {
      for (let i = 0; i < 3; i++) {
        const name = `fresh-${via}-${i}`;
        await admin(via).createCollection({ name, shardType: "basic" });
        // The same node, right away: its own copy of the registry already has it.
        const listed = await admin(via).listCollections({});
        expect(listed.collections.map((c) => c.name)).toContain(name);
        await data(via).setValue({
          clsId: name,
          objectIdStr: "o",
          keyStr: "k",
          value: { data: enc.encode("v") },
        });
      }
    }
  });

  it("a write on any node is readable, linearizably, from every node", async () => {
    for (const writer of cluster.ids) {
      await eventually(() =>
        data(writer).setValue({
          clsId: "kv",
          partitionId: writer % 2,
          objectIdStr: `obj-${writer}`,
          keyStr: "who",
          value: { data: enc.encode(`node ${writer}`) },
        }),
      );
      for (const reader of cluster.ids) {
        const got = await data(reader).getValue({
          clsId: "kv",
          partitionId: writer % 2,
          objectIdStr: `obj-${writer}`,
          keyStr: "who",
        });
        expect(dec.decode(got.value?.data), `read on node ${reader}`).toBe(`node ${writer}`);
        expect(got.objectVersion).toBe(1n);
      }
    }
  });

  it("CAS races across nodes have exactly one winner", async () => {
    await data(1).setValue({
      clsId: "kv",
      objectIdStr: "race",
      keyStr: "k",
      value: { data: enc.encode("0") },
    });
    for (let round = 1; round <= 5; round++) {
      const outcomes = await Promise.all(
        cluster.ids.map((id) =>
          data(id)
            .batchSetValues({
              clsId: "kv",
              objectIdStr: "race",
              values: { k: { data: enc.encode(`${round}:${id}`) } },
              expectedObjectVersion: BigInt(round),
            })
            .then(
              () => "ok",
              (err: unknown) => {
                const ce = ConnectError.from(err);
                return `${Code[ce.code]} ${ce.rawMessage} (actual ${ce.metadata.get("odgm-actual-version")})`;
              },
            ),
        ),
      );
      expect(
        outcomes.filter((o) => o === "ok"),
        `round ${round}: ${outcomes}`,
      ).toHaveLength(1);
      // The losers hear the same refusal whether they wrote to the leader or to a follower.
      const refusal = `Aborted [version_mismatch] expected object version ${round}, actual ${round + 1} (actual ${round + 1})`;
      expect(outcomes.filter((o) => o !== "ok")).toEqual([refusal, refusal]);
    }
    const got = await data(3).getValue({ clsId: "kv", objectIdStr: "race", keyStr: "k" });
    expect(got.objectVersion).toBe(6n);
  });

  it("sends each follower far fewer Raft messages than writes under concurrent load", async () => {
    // Coalescing: the appends of a Ready to one follower go out as one message, and so do
    // the follower's acknowledgements (without it: about two of each per write per peer).
    const status = (await (await fetch(`${cluster.url(1)}/api/cluster`)).json()) as {
      groups: { group: string; leader: number }[];
    };
    const leader = status.groups.find((g) => g.group === "kv/0")?.leader as number;
    const sent = async (): Promise<number> => {
      const text = await (await fetch(`${cluster.url(leader)}/metrics`)).text();
      let n = 0;
      for (const m of text.matchAll(
        /^odgm_raft_peer_messages\{peer="\d+",outcome="sent"\} (\d+)$/gm,
      ))
        n += Number(m[1]);
      return n;
    };
    const before = await sent();
    const writes = 400;
    const client = data(leader);
    await Promise.all(
      Array.from({ length: writes }, (_, i) =>
        client.setValue({
          clsId: "kv",
          partitionId: 0,
          objectIdStr: `burst-${i}`,
          keyStr: "k",
          value: { data: enc.encode(String(i)) },
        }),
      ),
    );
    // Two followers; heartbeats of both groups are in the count too.
    const perFollower = ((await sent()) - before) / 2;
    console.log(`${writes} concurrent writes: ${perFollower} Raft messages per follower`);
    expect(perFollower).toBeGreaterThan(0);
    expect(perFollower).toBeLessThan(writes / 4);
  });

  it("writes a follower's Raft log on its event loop, and on the write worker a leader's with writes in flight and a forwarding follower's", async () => {
    const status = (await (await fetch(`${cluster.url(1)}/api/cluster`)).json()) as {
      groups: { group: string; leader: number }[];
    };
    const leader = status.groups.find((g) => g.group === "kv/0")?.leader as number;
    const batches = async (id: number) => {
      const text = await (await fetch(`${cluster.url(id)}/metrics`)).text();
      const of = (thread: string) =>
        Number(
          text.match(
            new RegExp(`^odgm_raft_log_batches\\{thread="${thread}"\\} (\\d+)$`, "m"),
          )?.[1],
        );
      const sync = Number(text.match(/^odgm_raft_log_sync_seconds (\S+)$/m)?.[1]);
      return { inline: of("event_loop"), worker: of("worker"), sync };
    };
    const ids = [1, 2, 3];
    const before = await Promise.all(ids.map(batches));
    /** 300 concurrent writes to the leader (or through node `via`). */
    const burst = (prefix: string, via = leader) => {
      const client = data(via);
      return Promise.all(
        Array.from({ length: 300 }, (_, i) =>
          client.setValue({
            clsId: "kv",
            partitionId: 0,
            objectIdStr: `${prefix}-${i}`,
            keyStr: "k",
            value: { data: enc.encode(String(i)) },
          }),
        ),
      );
    };
    await burst("inline");
    const after = await Promise.all(ids.map(batches));
    for (const [i, id] of ids.entries()) {
      const was = before[i] as { inline: number; worker: number; sync: number };
      const now = after[i] as { inline: number; worker: number; sync: number };
      // Every node timed its log writes.
      expect(now.sync, `node ${id}`).toBeGreaterThan(0);
      if (id === leader) expect(now.worker - was.worker, `leader ${id}`).toBeGreaterThan(0);
      // Unless this disk's syncs took more than 10 ms lately (then they rightly go to the worker).
      else if (Math.max(was.sync, now.sync) <= 0.01)
        expect(now.inline - was.inline, `follower ${id}`).toBeGreaterThan(0);
    }
    // A follower that forwards writes has clients waiting on it: while its forwarded
    // proposals are out, its log writes go to the worker too.
    const forwarder = ids.find((id) => id !== leader) as number;
    const unforwarded = await batches(forwarder);
    await burst("forwarded", forwarder);
    expect((await batches(forwarder)).worker - unforwarded.worker).toBeGreaterThan(0);
    // The check above asserts nothing on a disk whose syncs take more than 10 ms. A follower
    // restarted with a limit no disk reaches writes its log on its event loop whatever the
    // disk; restarted with ODGM_RAFT_LOG_INLINE_MAX_MS=0, it leaves every log write to the
    // worker.
    const follower = ids.find((id) => id !== leader) as number;
    const restartWith = async (limitMs: string, prefix: string) => {
      expect(await cluster.stop(follower)).toBe(0);
      await cluster.start(follower, { ODGM_RAFT_LOG_INLINE_MAX_MS: limitMs });
      await cluster.waitReady();
      await burst(prefix);
      return batches(follower);
    };
    const unlimited = await restartWith("60000", "unlimited");
    const kvLeader = async () =>
      (
        (await (await fetch(`${cluster.url(follower)}/api/cluster`)).json()) as {
          groups: { group: string; leader: number }[];
        }
      ).groups.find((g) => g.group === "kv/0")?.leader;
    // Unless leader balancing handed it kv/0 meanwhile: a leader with writes in flight
    // rightly writes on the worker.
    if ((await kvLeader()) !== follower) expect(unlimited.inline).toBeGreaterThan(0);
    else console.log(`node ${follower} took over kv/0 after its restart; inline check skipped`);
    const restarted = await restartWith("0", "worker");
    expect(restarted.inline).toBe(0);
    expect(restarted.worker).toBeGreaterThan(0);
  });

  it("reports members, leaders and indexes on /api/cluster", async () => {
    const status = (await (await fetch(`${cluster.url(1)}/api/cluster`)).json()) as {
      members: { id: number }[];
      groups: {
        group: string;
        leader: number;
        term: number;
        voters: number[];
        snapshotsBuilt: number;
      }[];
    };
    expect(status.members.map((m) => m.id)).toEqual([1, 2, 3]);
    // The cluster routes are in the node's OpenAPI document.
    const doc = (await (await fetch(`${cluster.url(1)}/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
    };
    expect(
      Object.keys(doc.paths)
        .filter((p) => p.startsWith("/api/cluster"))
        .sort(),
    ).toEqual(["/api/cluster", "/api/cluster/members", "/api/cluster/membership"]);
    expect(status.groups.map((g) => g.group)).toEqual(["kv/0", "kv/1", "meta"]);
    for (const g of status.groups) {
      expect(g.leader).toBeGreaterThan(0);
      expect(g.voters).toEqual([1, 2, 3]);
      expect(g.snapshotsBuilt).toBe(0);
    }
    // The gRPC equivalent answers the same.
    const admin = createClient(ClusterService, createGrpcTransport({ baseUrl: cluster.url(1) }));
    const viaGrpc = await admin.getCluster({});
    expect(viaGrpc.groups.map((g) => g.group)).toEqual(["kv/0", "kv/1", "meta"]);
    const leaderView = viaGrpc.groups.find((g) => g.role === "leader");
    if (leaderView !== undefined)
      expect(leaderView.followers.map((f) => Number(f.id)).sort()).toHaveLength(2);
  });

  it("refuses malformed Raft traffic from a peer, logs it, and keeps serving", async () => {
    const raft = createClient(RaftService, createGrpcTransport({ baseUrl: cluster.url(2) }));
    const send = (batch: MessageInitShape<typeof RaftBatchSchema>) =>
      raft.stream(
        (async function* () {
          yield batch;
        })(),
      );
    // A batch meant for another node is refused outright.
    const wrongNode = await send({ fromNode: 1n, toNode: 3n, messages: [] }).then(
      () => "ok",
      (e: unknown) => ConnectError.from(e).code,
    );
    expect(wrongNode).toBe(Code.InvalidArgument);
    // Malformed messages inside a batch are dropped one by one and logged.
    await send({
      fromNode: 1n,
      toNode: 2n,
      messages: [
        { group: "kv/0", message: { type: 99 as RaftMessageType, from: 1n, to: 2n, term: 5n } },
        {
          group: "kv/0",
          message: {
            type: MessageType.SNAP,
            from: 1n,
            to: 2n,
            term: 1n,
            chunkTotal: 1n,
            snapshot: { data: new Uint8Array(64) },
          },
        },
        { group: "kv/0", message: { type: MessageType.APP, from: 1n, to: 2n, term: 2n ** 60n } },
      ],
    });
    // Bytes that are not a RaftBatch at all.
    const garbage = await fetch(`${cluster.url(2)}/oprc.RaftService/Stream`, {
      method: "POST",
      headers: { "content-type": "application/connect+proto", "connect-protocol-version": "1" },
      body: new Uint8Array([0, 0, 0, 0, 3, 0xff, 0xff, 0xff]),
    });
    // A Connect stream reports its error in the end-of-stream message, not the HTTP status.
    const answer = new TextDecoder().decode(await garbage.arrayBuffer());
    expect(answer).toMatch(/"error":\{"code":"(invalid_argument|internal)"/);
    await eventually(async () => {
      const refused = cluster.output(2).split("refused a malformed Raft message").length - 1;
      if (refused < 3) throw new Error(`${refused} refusals logged`);
    });
    const got = await data(2).getValue({ clsId: "kv", objectIdStr: "race", keyStr: "k" });
    expect(got.objectVersion).toBe(6n);
    expect((await fetch(`${cluster.url(2)}/readyz`)).status).toBe(200);
  });

  it("keeps everything across a restart of the whole cluster", async () => {
    // Peers going away one by one send GOAWAY to the others: every node still stops cleanly.
    for (const id of cluster.ids)
      expect(await cluster.stop(id), cluster.output(id).slice(-2000)).toBe(0);
    await Promise.all(cluster.ids.map((id) => cluster.start(id)));
    await cluster.waitReady();
    for (const reader of cluster.ids) {
      const got = await eventually(() =>
        data(reader).getValue({ clsId: "kv", objectIdStr: "race", keyStr: "k" }),
      );
      expect(got.objectVersion).toBe(6n);
      const o2 = await data(reader).getValue({
        clsId: "kv",
        partitionId: 0,
        objectIdStr: "obj-2",
        keyStr: "who",
      });
      expect(dec.decode(o2.value?.data)).toBe("node 2");
    }
  });

  it("a raft collection created through one node takes writes at once through every node", async () => {
    // No waiting in between: a node that has not applied the creation yet learns it from
    // the metadata group, and one whose replica is still opening waits for it to open.
    // (Last: the groups it adds change what the tests above count, and leadership balancing
    // spreads their leaders over the nodes.)
    // One replica, then three, placed (primary first) on a node the call did not go to.
    for (let i = 0; i < 6; i++) {
      const name = `fresh-raft-${i}`;
      const via = cluster.ids[i % 3] as number;
      const placed = cluster.ids[(i + 1) % 3] as number;
      const others = i % 2 === 0 ? [] : cluster.ids.filter((n) => n !== placed);
      await eventually(() =>
        admin(via).createCollection({
          name,
          shardType: "raft",
          replicaCount: 1 + others.length,
          shardAssignments: [{ primary: BigInt(placed), replica: others.map(BigInt) }],
        }),
      );
      for (const id of [placed, ...cluster.ids.filter((n) => n !== placed)]) {
        await data(id).setValue(
          { clsId: name, objectIdStr: "o", keyStr: "k", value: { data: enc.encode(`${id}`) } },
          { timeoutMs: 10_000 },
        );
      }
    }
  });
});
