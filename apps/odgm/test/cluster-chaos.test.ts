// Faults a real cluster must survive, through a fault proxy between every pair of nodes:
// an isolated minority commits nothing while the majority continues and healing converges;
// and a Jepsen-style register workload under a kill -9 and partition nemesis stays
// linearizable (checked with raft-log's WGL checker; "unknown" counts as a failure).
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CollectionService } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runChaosRound } from "./fixtures/chaos-round.js";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";
import { createRaftCollection, dataClient, leaderOf, waitFor } from "./fixtures/cluster-probe.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
let cluster: TestCluster;
const data = (id: number) => dataClient(cluster, id);

beforeAll(async () => {
  cluster = await startCluster({ faultProxy: true });
  await cluster.waitReady();
  const admin = createClient(CollectionService, createGrpcTransport({ baseUrl: cluster.url(1) }));
  await createRaftCollection(cluster, admin, { name: "kv" });
}, 180_000);
afterAll(async () => {
  await cluster?.close();
});

const proxy = () => {
  if (cluster.proxy === undefined) throw new Error("no proxy");
  return cluster.proxy;
};

describe("partitions", () => {
  it("an isolated leader commits nothing; the majority elects and continues; healing converges", {
    timeout: 120_000,
  }, async () => {
    const old = await leaderOf(cluster, "kv/0");
    expect(old).toBeGreaterThan(0);
    const others = cluster.ids.filter((id) => id !== old);
    proxy().isolate(old);
    // The minority side: its write and its linearizable read fail.
    const lost = await data(old)
      .setValue(
        { clsId: "kv", objectIdStr: "p", keyStr: "minority", value: { data: enc.encode("x") } },
        { timeoutMs: 4000 },
      )
      .then(
        () => "ok",
        (e: unknown) => ConnectError.from(e).code,
      );
    expect(lost).not.toBe("ok");
    const read = await data(old)
      .getValue({ clsId: "kv", objectIdStr: "p", keyStr: "minority" }, { timeoutMs: 4000 })
      .then(
        () => "ok",
        (e: unknown) => ConnectError.from(e).code,
      );
    expect(read).not.toBe("ok");
    // The majority side: a new leader, and writes commit.
    const elected = await waitFor(async () => {
      const l = await leaderOf(cluster, "kv/0", old);
      return l !== 0 && others.includes(l);
    }, 20_000);
    expect(elected).toBeGreaterThanOrEqual(0);
    await waitFor(
      () =>
        data(others[0] as number)
          .setValue(
            { clsId: "kv", objectIdStr: "p", keyStr: "majority", value: { data: enc.encode("y") } },
            { timeoutMs: 3000 },
          )
          .then(() => true)
          .catch(() => false),
      20_000,
    );
    proxy().heal();
    // Healed: the old leader serves the majority's write and never the minority's.
    const got = await waitFor(
      () =>
        data(old)
          .getValue({ clsId: "kv", objectIdStr: "p", keyStr: "majority" }, { timeoutMs: 3000 })
          .then((r) => dec.decode(r.value?.data) === "y")
          .catch(() => false),
      30_000,
    );
    expect(got).toBeGreaterThanOrEqual(0);
    for (const id of cluster.ids) {
      const r = await data(id).getValue({ clsId: "kv", objectIdStr: "p", keyStr: "minority" });
      expect(r.value, `node ${id} has the minority's write`).toBeUndefined();
    }
  });

  it("a leader that can hear but not be heard (one-way cut) is replaced; the cluster converges", {
    timeout: 120_000,
  }, async () => {
    const old = await leaderOf(cluster, "kv/0");
    for (const id of cluster.ids) if (id !== old) proxy().cut(old, id);
    const replaced = await waitFor(async () => {
      const l = await leaderOf(cluster, "kv/0", old);
      return l !== 0;
    }, 20_000);
    expect(replaced).toBeGreaterThanOrEqual(0);
    const other = cluster.ids.find((id) => id !== old) as number;
    await waitFor(
      () =>
        data(other)
          .setValue(
            { clsId: "kv", objectIdStr: "q", keyStr: "k", value: { data: enc.encode("1") } },
            { timeoutMs: 3000 },
          )
          .then(() => true)
          .catch(() => false),
      20_000,
    );
    proxy().heal();
    const converged = await waitFor(
      () =>
        data(old)
          .getValue({ clsId: "kv", objectIdStr: "q", keyStr: "k" }, { timeoutMs: 3000 })
          .then((r) => r.objectVersion === 1n)
          .catch(() => false),
      30_000,
    );
    expect(converged).toBeGreaterThanOrEqual(0);
    const code = await data(old)
      .getValue({ clsId: "kv", objectIdStr: "q", keyStr: "k" })
      .then(
        () => Code.Unknown - Code.Unknown,
        (e: unknown) => ConnectError.from(e).code,
      );
    expect(code).toBe(0);
  });
});

describe("linearizability (Jepsen-style register workload, WGL-checked)", () => {
  it("stays linearizable under a kill -9 and partition nemesis, round after round", {
    timeout: 300_000,
  }, async () => {
    // Two rounds on one collection, as `pnpm chaos` runs them (each on registers of its own).
    const seconds = Number(process.env.ODGM_CHAOS_SECONDS ?? 20);
    for (const round of [1, 2]) {
      const r = await runChaosRound(cluster, {
        collection: "kv",
        round,
        seconds: seconds / 2,
        seed: 6 + round,
      });
      console.log(`linearizability: ${r.summary}`);
      expect(r.result.ok).toBeGreaterThan(25);
      expect(r.check.verdict, `history kept at ${r.dump}`).toBe("ok");
    }
  });
});
