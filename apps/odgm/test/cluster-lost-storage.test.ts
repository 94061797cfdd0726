// A node whose disk was lost or replaced restarts with empty storage under the same id. Its
// groups' leaders still count it as holding what it acknowledged, which Raft's safety rests
// on: it must not serve, vote or acknowledge as that member. It stops the group, says why
// (once, in the log and in /api/cluster) and stays not ready; the README's way back — remove
// it, start it empty as a new member, add it back — brings it back with the data. Where it
// led (so no leader remembers what it acknowledged), the others still refuse it by its new
// incarnation, so that it cannot make up a quorum with one of them.
import { rmSync } from "node:fs";
import { Code } from "@connectrpc/connect";
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

const enc = new TextEncoder();
const dec = new TextDecoder();
let cluster: TestCluster;
const data = (id: number) => dataClient(cluster, id);

beforeAll(async () => {
  // Leadership stays where the test puts it.
  cluster = await startCluster({ env: { ODGM_RAFT_BALANCE_LEADERS: "false" } });
  await cluster.waitReady();
  const admin = collectionAdmin(cluster, 1);
  await createRaftCollection(cluster, admin, { name: "kv" });
}, 180_000);
afterAll(async () => {
  await cluster?.close();
});

const post = (id: number, path: string, body: unknown) => postJson(cluster, id, path, body);
const status = (id: number) => clusterView(cluster.url(id));
const meta = async (id: number) => (await status(id))?.groups.find((g) => g.group === "meta");
const ready = (id: number) =>
  waitFor(
    async () => (await fetch(`${cluster.url(id)}/readyz`).catch(() => undefined))?.ok === true,
    30_000,
  );
const value = async (via: number, key: string) =>
  dec.decode(
    (await data(via).getValue({ clsId: "kv", objectIdStr: "o", keyStr: key })).value?.data,
  );
/** The README's way back: remove node 2, start it empty as a new member, add it back. */
const replaceNode2 = async () => {
  await post(1, "/api/cluster/membership", { group: "*", change: "remove", nodeId: 2 });
  await cluster.stop(2);
  rmSync(cluster.dataDir(2), { recursive: true, force: true });
  await cluster.start(2, { ODGM_CLUSTER_STATE: "existing" });
  await post(1, "/api/cluster/membership", { group: "*", change: "add_learner", nodeId: 2 });
  await post(3, "/api/cluster/membership", { group: "*", change: "promote", nodeId: 2 });
  expect(await ready(2), cluster.output(2).slice(-3000)).toBeGreaterThanOrEqual(0);
};
const put = (via: number, key: string) =>
  data(via).setValue(
    { clsId: "kv", objectIdStr: "o", keyStr: key, value: { data: enc.encode(key) } },
    { timeoutMs: 5000 },
  );
/** Whether one attempt of {@link put} succeeded. */
const wrote = (via: number, key: string) =>
  put(via, key).then(
    () => true,
    () => false,
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

    await replaceNode2();
    expect((await meta(2))?.failure).toBeUndefined();
    for (const key of ["k0", "k9", "while-lost"]) expect(await value(2, key)).toBe(key);
    await put(2, "after");
    // Every node knows node 2 by its new incarnation.
    const incarnation = (await status(2))?.incarnation;
    const recorded = await waitFor(async () => {
      for (const id of [1, 3]) {
        const m = (await status(id))?.members.find((x) => x.id === 2);
        if (m?.incarnation !== incarnation) return false;
      }
      return true;
    }, 10_000);
    expect(recorded).toBeGreaterThanOrEqual(0);
  });

  it("is refused where it led, so it cannot make up a quorum with one of the others", {
    timeout: 150_000,
  }, async () => {
    // Node 2 leads the metadata group and the partition: no leader after it remembers what
    // it acknowledged, so only its incarnation tells it apart.
    for (const group of ["meta", "kv/0"]) {
      const led = await waitFor(async () => {
        if ((await leaderOf(cluster, group)) === 2) return true;
        await post(1, "/api/cluster/membership", {
          group,
          change: "transfer_leader",
          nodeId: 2,
        }).catch(() => undefined);
        return false;
      }, 30_000);
      expect(led, `node 2 leads ${group}`).toBeGreaterThanOrEqual(0);
    }
    for (let i = 0; i < 10; i++) await put(2, `led${i}`);
    await cluster.stop(2, "SIGKILL");
    rmSync(cluster.dataDir(2), { recursive: true, force: true });
    await cluster.start(2);

    const refused = await waitFor(
      async () => /incarnation/.test((await status(2))?.failure ?? ""),
      30_000,
    );
    expect(refused, cluster.output(2).slice(-3000)).toBeGreaterThanOrEqual(0);
    expect((await status(2))?.failure).toMatch(
      /^the cluster knows node 2 as incarnation \d+( \(node [13] addresses it so\))?, but this data directory is incarnation \d+: it was wiped or replaced/,
    );
    expect(`${cluster.output(1)}${cluster.output(3)}`).toMatch(
      /refusing the Raft messages of node 2: its data directory is incarnation \d+, not \d+ as the cluster records/,
    );
    const readyz = await fetch(`${cluster.url(2)}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.text()).toMatch(/not ready \(cluster the cluster knows node 2 as/);
    const refusals = async (id: number) => {
      const text = await (await fetch(`${cluster.url(id)}/metrics`)).text();
      return Number(/^odgm_raft_refused_batches_total\{peer="2"\} (\d+)/m.exec(text)?.[1] ?? 0);
    };
    expect((await refusals(1)) + (await refusals(3))).toBeGreaterThan(0);
    // It knows no collections now: a request is UNAVAILABLE with the reason, not NOT_FOUND.
    await expect(value(2, "led0")).rejects.toMatchObject({
      code: Code.Unavailable,
      rawMessage: expect.stringMatching(/wiped or replaced/),
    });

    // The partition's leader never counts what node 2 acknowledges now (it would, counting
    // it as the member it was, within a second or two).
    const counted = await waitFor(async () => {
      const l = await leaderOf(cluster, "kv/0", 2);
      const g = l === 0 ? undefined : (await status(l))?.groups.find((x) => x.group === "kv/0");
      const f = g?.followers.find((x) => x.id === 2);
      return g !== undefined && f !== undefined && f.match >= g.commitIndex;
    }, 8000);
    expect(counted, "node 2's acknowledgements were counted").toBe(-1);
    // Nodes 3 and 2 are two of three, but node 2 is not the member that acknowledged what
    // was committed: node 3 alone cannot commit.
    await cluster.stop(1, "SIGKILL");
    // Tried for ten election timeouts and more: counting node 2, node 3 would lead and commit.
    const committed = await waitFor(() => wrote(3, "without-1"), 10_000, 200);
    expect(committed, "a write committed without node 1").toBe(-1);
    await cluster.start(1);
    const back = await waitFor(() => wrote(3, "back"), 30_000);
    expect(back, cluster.output(3).slice(-3000)).toBeGreaterThanOrEqual(0);
    for (const key of ["led0", "led9", "after", "back"]) expect(await value(3, key)).toBe(key);

    await replaceNode2();
    expect((await status(2))?.failure).toBeUndefined();
    for (const key of ["led0", "led9", "back"]) expect(await value(2, key)).toBe(key);
  });
});
