// A graceful stop (SIGTERM) of a cluster node while a client writes through another node:
// the leader hands its groups to a follower first, the requests it has in flight finish,
// and the node exits without waiting out its grace for the Raft streams its peers keep open
// to it. Before this, a stopping leader went on leading for the whole grace while refusing
// the writes followers forwarded to it: every write failed until the grace ran out.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CollectionService, DataService } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";
import { createRaftCollection, leaderOf, waitFor } from "./fixtures/cluster-probe.js";

/** Far longer than a stop takes: a node that exits in half of it did not wait it out. */
const GRACE_MS = 60_000;
let cluster: TestCluster;

const data = (id: number) =>
  createClient(DataService, createGrpcTransport({ baseUrl: cluster.url(id) }));

beforeAll(async () => {
  cluster = await startCluster({ env: { ODGM_SHUTDOWN_TIMEOUT_MS: String(GRACE_MS) } });
  await cluster.waitReady();
  await createRaftCollection(
    cluster,
    createClient(CollectionService, createGrpcTransport({ baseUrl: cluster.url(1) })),
    { name: "gs" },
  );
}, 120_000);
afterAll(async () => {
  await cluster?.close();
});

/** Stops `id` with SIGTERM; resolves with its exit code and how long it took. */
async function stop(id: number): Promise<{ code: unknown; ms: number }> {
  const started = Date.now();
  const code = await cluster.stop(id, "SIGTERM");
  return { code, ms: Date.now() - started };
}

describe("a graceful stop of a cluster node", () => {
  it("hands leadership off, answers what is in flight and exits without waiting out its grace", {
    timeout: 4 * GRACE_MS,
  }, async () => {
    let leader = 0;
    const elected = async () => {
      leader = await leaderOf(cluster, "gs/0");
      return leader !== 0;
    };
    expect(await waitFor(elected, 20_000)).toBeGreaterThanOrEqual(0);
    const via = cluster.ids.find((id) => id !== leader) as number;
    const client = data(via);
    const acked: bigint[] = [];
    const failures: Code[] = [];
    let writing = true;
    let next = 1n;
    const writer = async () => {
      while (writing) {
        const objectId = next++;
        try {
          await client.setValue({
            clsId: "gs",
            partitionId: 0,
            objectId,
            key: 1,
            value: { data: new TextEncoder().encode(String(objectId)) },
          });
          acked.push(objectId);
        } catch (err) {
          failures.push(ConnectError.from(err).code);
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    };
    const writers = Array.from({ length: 4 }, writer);
    expect(await waitFor(async () => acked.length >= 100, 20_000)).toBeGreaterThanOrEqual(0);

    const stopped = await stop(leader);
    expect(stopped.code, cluster.output(leader).slice(-3000)).toBe(0);
    expect(stopped.ms).toBeLessThan(GRACE_MS / 2);
    expect(cluster.output(leader)).toContain("handed off leadership");
    expect(cluster.output(leader)).not.toContain("stopping while still leading");
    const newLeader = await leaderOf(cluster, "gs/0", leader);
    expect(cluster.ids.filter((id) => id !== leader)).toContain(newLeader);

    // Writes go on through the new leader.
    const atStop = acked.length;
    expect(await waitFor(async () => acked.length >= atStop + 100, 20_000)).toBeGreaterThanOrEqual(
      0,
    );
    writing = false;
    await Promise.all(writers);
    // A write caught by the hand-off is refused as retryable, never lost silently.
    expect(failures.filter((c) => c !== Code.Unavailable)).toEqual([]);
    console.log(
      `graceful stop of leader ${leader}: exited in ${stopped.ms} ms, ${acked.length} writes acknowledged, ${failures.length} refused as UNAVAILABLE`,
    );

    // The stopped node comes back with every acknowledged write, as does every other node.
    await cluster.start(leader);
    await cluster.waitReady();
    for (const id of cluster.ids) {
      const reader = data(id);
      for (const objectId of acked) {
        const got = await reader.getValue({ clsId: "gs", partitionId: 0, objectId, key: 1 });
        expect(new TextDecoder().decode(got.value?.data)).toBe(String(objectId));
      }
    }
  });

  it("stops a follower without waiting out its grace", { timeout: 4 * GRACE_MS }, async () => {
    const leader = await leaderOf(cluster, "gs/0");
    const follower = cluster.ids.find((id) => id !== leader) as number;
    const stopped = await stop(follower);
    expect(stopped.code, cluster.output(follower).slice(-3000)).toBe(0);
    expect(stopped.ms).toBeLessThan(GRACE_MS / 2);
    await cluster.start(follower);
    await cluster.waitReady();
  });
});
