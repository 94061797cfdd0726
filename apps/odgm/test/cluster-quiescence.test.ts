// Quiescence on three real nodes (ODGM_RAFT_QUIESCE, on by default): idle groups stop their
// heartbeats, so an idle cluster sends no Raft messages at all (only a keep-alive batch per
// peer and tick); a write wakes its group and is served as before; and when the node leading
// quiescent groups dies, or is cut off from the others, the others notice its silence and
// elect new leaders for them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";
import {
  clusterView,
  collectionAdmin,
  createRaftCollection,
  dataClient,
  waitFor,
} from "./fixtures/cluster-probe.js";

const PARTITIONS = 4;
const GROUPS = Array.from({ length: PARTITIONS }, (_, p) => `q/${p}`);
const enc = new TextEncoder();
const dec = new TextDecoder();
let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startCluster({ faultProxy: true });
  await cluster.waitReady();
  await createRaftCollection(cluster, collectionAdmin(cluster, 1), {
    name: "q",
    partitionCount: PARTITIONS,
  });
}, 180_000);
afterAll(async () => {
  await cluster?.close();
});

const live = () => cluster.ids.filter((id) => cluster.proc(id) !== undefined);
/** Whether every group of every node in `ids` is quiescent there. */
const allQuiescent = async (ids: readonly number[]) => {
  for (const id of ids) {
    const v = await clusterView(cluster.url(id));
    if (v === undefined || v.groups.length < GROUPS.length + 1) return false;
    if (!v.groups.every((g) => g.quiescent === true)) return false;
  }
  return true;
};
/** Raft messages node `id` has sent to its peers (`odgm_raft_peer_messages`, summed). */
const messagesSent = async (id: number) => {
  const text = await (await fetch(`${cluster.url(id)}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^odgm_raft_peer_messages\{[^}]*outcome="sent"[^}]*\} (\d+)/gm))
    n += Number(m[1]);
  return n;
};
const put = (via: number, object: string, value: string) =>
  dataClient(cluster, via).setValue(
    { clsId: "q", objectIdStr: object, keyStr: "k", value: { data: enc.encode(value) } },
    { timeoutMs: 5000 },
  );
const get = async (via: number, object: string) =>
  dec.decode(
    (
      await dataClient(cluster, via).getValue(
        { clsId: "q", objectIdStr: object, keyStr: "k" },
        { timeoutMs: 5000 },
      )
    ).value?.data,
  );
/** Writes object `o<i>` for i < n through `via`, retrying while a partition elects (bounded). */
const writeAll = async (via: number, n: number, value: string) => {
  for (let i = 0; i < n; i++) {
    const done = await waitFor(
      () =>
        put(via, `o${i}`, value).then(
          () => true,
          () => false,
        ),
      20_000,
      100,
    );
    expect(done, `write of o${i} through node ${via}`).toBeGreaterThanOrEqual(0);
  }
};
/** Waits until every live node's view of every group names a leader among `among`. */
const ledBy = (among: readonly number[]) =>
  waitFor(async () => {
    for (const id of among) {
      const v = await clusterView(cluster.url(id));
      for (const g of GROUPS) {
        const leader = v?.groups.find((x) => x.group === g)?.leader ?? 0;
        if (!among.includes(leader)) return false;
      }
    }
    return true;
  }, 30_000);
/** The node leading the most data groups, as node `via` sees them. */
const busiestLeader = async (via: number) => {
  const v = await clusterView(cluster.url(via));
  const count = new Map<number, number>();
  for (const g of v?.groups ?? [])
    if (GROUPS.includes(g.group)) count.set(g.leader, (count.get(g.leader) ?? 0) + 1);
  return [...count].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 0;
};

describe("quiescence of idle groups", () => {
  it("an idle cluster sends no Raft messages; a write wakes its group", {
    timeout: 60_000,
  }, async () => {
    await writeAll(1, 8, "a");
    // A 2 s window (40 ticks) in which no node sends a Raft message. On a starved machine (CI
    // runs other cluster files beside this one) a keep-alive can arrive later than the
    // 500 ms after which a peer counts as silent, and the groups rightly wake: up to three
    // windows, each after the groups are quiescent again; a group that never quiesces, or
    // wakes without cause, fails all three.
    const noisy: string[] = [];
    for (let window = 0; window < 3; window++) {
      expect(await waitFor(() => allQuiescent(cluster.ids), 20_000)).toBeGreaterThanOrEqual(0);
      const before = await Promise.all(cluster.ids.map(messagesSent));
      await new Promise((r) => setTimeout(r, 2000));
      const after = await Promise.all(cluster.ids.map(messagesSent));
      if (after.every((n, i) => n === before[i])) break;
      noisy.push(`window ${window + 1}: sent ${after.map((n, i) => n - (before[i] ?? 0))}`);
    }
    expect(noisy.length, noisy.join("; ")).toBeLessThan(3);
    // Served as before: a write through a node that may lead nothing, a read on each node.
    await writeAll(2, 8, "b");
    for (const id of cluster.ids)
      for (let i = 0; i < 8; i++) expect(await get(id, `o${i}`)).toBe("b");
    expect(await waitFor(() => allQuiescent(cluster.ids), 20_000)).toBeGreaterThanOrEqual(0);
  });

  it("when the node leading quiescent groups dies, the others elect new leaders", {
    timeout: 90_000,
  }, async () => {
    expect(await waitFor(() => allQuiescent(cluster.ids), 20_000)).toBeGreaterThanOrEqual(0);
    const victim = await busiestLeader(1);
    expect(victim).toBeGreaterThan(0);
    const others = cluster.ids.filter((id) => id !== victim);
    const killedAt = Date.now();
    await cluster.stop(victim, "SIGKILL");
    expect(await ledBy(others), "every group led by a survivor").toBeGreaterThanOrEqual(0);
    console.log(
      `quiescence: new leaders ${Date.now() - killedAt} ms after kill -9 of node ${victim}`,
    );
    await writeAll(others[0] as number, 8, "c");
    await cluster.start(victim);
    await cluster.waitReady();
    for (let i = 0; i < 8; i++) expect(await get(victim, `o${i}`)).toBe("c");
  });

  it("when the node leading quiescent groups is cut off, the others notice its silence", {
    timeout: 90_000,
  }, async () => {
    expect(await waitFor(() => allQuiescent(live()), 20_000)).toBeGreaterThanOrEqual(0);
    const victim = await busiestLeader(1);
    const others = cluster.ids.filter((id) => id !== victim);
    const proxy = cluster.proxy;
    if (proxy === undefined) throw new Error("no fault proxy");
    const cutAt = Date.now();
    proxy.isolate(victim);
    try {
      expect(await ledBy(others), "every group led by a survivor").toBeGreaterThanOrEqual(0);
      console.log(
        `quiescence: new leaders ${Date.now() - cutAt} ms after node ${victim} was cut off`,
      );
      await writeAll(others[0] as number, 8, "d");
    } finally {
      proxy.heal();
    }
    // Healed, the cut-off node follows the new leaders and serves what they wrote.
    expect(
      await waitFor(async () => {
        const values = await Promise.all(
          Array.from({ length: 8 }, (_, i) => get(victim, `o${i}`).catch(() => "")),
        );
        return values.every((v) => v === "d");
      }, 30_000),
    ).toBeGreaterThanOrEqual(0);
  });
});
