// A node whose disk was lost or replaced restarts with empty storage under the same id. Its
// groups' leaders still count it as holding what it acknowledged, which Raft's safety rests
// on: it must not serve, vote or acknowledge as that member. It stops the group, says why
// (once, in the log and in /api/cluster) and stays not ready; the README's way back — remove
// it, start it empty as a new member, add it back — brings it back with the data.
import { rmSync } from "node:fs";
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

const enc = new TextEncoder();
const dec = new TextDecoder();
let cluster: TestCluster;
const data = (id: number) => dataClient(cluster, id);

beforeAll(async () => {
  cluster = await startCluster();
  await cluster.waitReady();
  const admin = collectionAdmin(cluster, 1);
  await createRaftCollection(cluster, admin, { name: "kv" });
}, 180_000);
afterAll(async () => {
  await cluster?.close();
});

const post = (id: number, path: string, body: unknown) => postJson(cluster, id, path, body);
const meta = async (id: number) => {
  const res = await fetch(`${cluster.url(id)}/api/cluster`).catch(() => undefined);
  if (res?.ok !== true) return undefined;
  const body = (await res.json()) as { groups: { group: string; failure?: string }[] };
  return body.groups.find((g) => g.group === "meta");
};
const put = (via: number, key: string) =>
  data(via).setValue(
    { clsId: "kv", objectIdStr: "o", keyStr: key, value: { data: enc.encode(key) } },
    { timeoutMs: 5000 },
  );

describe("a node that lost its storage", () => {
  it("refuses to go on as the member it was, and rejoins when removed and added back", {
    timeout: 120_000,
  }, async () => {
    for (let i = 0; i < 10; i++) await put(1, `k${i}`);
    // Only a leader that node 2 acknowledged entries to can tell they are gone: a new one
    // (elected because node 2 led) knows nothing of them and sends it everything. So node 2
    // does not lead the metadata group when it dies.
    if ((await leaderOf(cluster, "meta")) === 2) {
      await post(2, "/api/cluster/membership", {
        group: "meta",
        change: "transfer_leader",
        nodeId: 1,
      });
    }
    const moved = await waitFor(async () => {
      const l = await leaderOf(cluster, "meta");
      return l !== 0 && l !== 2;
    }, 30_000);
    expect(moved).toBeGreaterThanOrEqual(0);
    await cluster.stop(2, "SIGKILL");
    rmSync(cluster.dataDir(2), { recursive: true, force: true });
    await cluster.start(2);

    // The metadata group's leader counts node 2 as holding entries its new log lacks.
    const told = await waitFor(async () => /log_lost/.test((await meta(2))?.failure ?? ""), 30_000);
    expect(told, cluster.output(2).slice(-3000)).toBeGreaterThanOrEqual(0);
    expect((await meta(2))?.failure).toMatch(
      /node 2's log ends at index \d+, but its leader \(node [13]\) counts it as holding entries up to \d+: its storage lost writes it had acknowledged; remove this node from the group and add it back/,
    );
    expect((await fetch(`${cluster.url(2)}/readyz`)).status).toBe(503);
    // Reported once, not at every heartbeat.
    await new Promise((r) => setTimeout(r, 1000));
    const lines = cluster.output(2).split("\n");
    expect(lines.filter((l) => l.includes("log_lost")).length).toBe(1);
    // The other two go on.
    await put(3, "while-lost");

    // The way back: remove it, start it empty as a new member, add it back.
    await post(1, "/api/cluster/membership", { group: "*", change: "remove", nodeId: 2 });
    await cluster.stop(2);
    rmSync(cluster.dataDir(2), { recursive: true, force: true });
    await cluster.start(2, { ODGM_CLUSTER_STATE: "existing" });
    await post(1, "/api/cluster/membership", { group: "*", change: "add_learner", nodeId: 2 });
    await post(3, "/api/cluster/membership", { group: "*", change: "promote", nodeId: 2 });
    const ready = await waitFor(
      async () => (await fetch(`${cluster.url(2)}/readyz`).catch(() => undefined))?.ok === true,
      30_000,
    );
    expect(ready, cluster.output(2).slice(-3000)).toBeGreaterThanOrEqual(0);
    expect((await meta(2))?.failure).toBeUndefined();
    for (const key of ["k0", "k9", "while-lost"]) {
      const v = await data(2).getValue({ clsId: "kv", objectIdStr: "o", keyStr: key });
      expect(dec.decode(v.value?.data)).toBe(key);
    }
    await put(2, "after");
  });
});
