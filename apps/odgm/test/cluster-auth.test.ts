// Authentication on a three-node cluster over mutual TLS: clients need bearer tokens on
// every node, while the members' own traffic (Raft, proposals passed to a leader, data
// calls passed to a node holding the partition) is authenticated by their certificates.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CollectionService, DataService } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";
import { createRaftCollection, waitFor } from "./fixtures/cluster-probe.js";

const dir = join(import.meta.dirname, "fixtures", "tls");
const file = (name: string) => join(dir, name);
const ca = readFileSync(file("ca.pem"));
const ADMIN = "cluster-admin-token-0123456789";
const WRITER = "cluster-writer-token-0123456789";
let cluster: TestCluster;

/** A client of node `id` sending `token`. */
function clientOf<S extends typeof DataService | typeof CollectionService>(
  service: S,
  id: number,
  token?: string,
) {
  return createClient(
    service,
    createGrpcTransport({
      baseUrl: cluster.url(id),
      nodeOptions: { ca },
      interceptors: [
        (next) => (req) => {
          if (token !== undefined) req.header.set("authorization", `Bearer ${token}`);
          return next(req);
        },
      ],
    }),
  );
}

beforeAll(async () => {
  cluster = await startCluster({
    tls: { cert: file("node.pem"), key: file("node-key.pem"), ca: file("ca.pem") },
    env: { ODGM_AUTH_TOKENS: `admin ${ADMIN}; write ${WRITER}` },
  });
  await cluster.waitReady();
  // One replica only: two of the three nodes pass every call on to the third.
  await createRaftCollection(cluster, clientOf(CollectionService, 1, ADMIN), {
    name: "single",
    replicaCount: 1,
  });
}, 180_000);
afterAll(async () => {
  await cluster?.close();
});

describe("a cluster with authentication", () => {
  it("refuses clients without a token on every node", async () => {
    for (const id of cluster.ids) {
      const err = await clientOf(DataService, id)
        .getValue({ clsId: "single", objectIdStr: "o", keyStr: "k" })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(err?.code, `node ${id}`).toBe(Code.Unauthenticated);
    }
  });

  it("members pass authorized calls to each other on their certificates", async () => {
    const value = new TextEncoder().encode("forwarded");
    for (const id of cluster.ids) {
      const ok = await waitFor(
        () =>
          clientOf(DataService, id, WRITER)
            .setValue(
              { clsId: "single", objectIdStr: `o${id}`, keyStr: "k", value: { data: value } },
              { timeoutMs: 5000 },
            )
            .then(() => true)
            .catch(() => false),
        30_000,
      );
      expect(ok, `write through node ${id}`).toBeGreaterThanOrEqual(0);
    }
    for (const id of cluster.ids) {
      for (const o of cluster.ids) {
        const r = await clientOf(DataService, id, WRITER).getValue({
          clsId: "single",
          objectIdStr: `o${o}`,
          keyStr: "k",
        });
        expect(new TextDecoder().decode(r.value?.data), `node ${id}, o${o}`).toBe("forwarded");
      }
    }
  });
});
