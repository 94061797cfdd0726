// A three-node cluster over TLS with mutual authentication between nodes (ODGM_TLS_CERT,
// ODGM_TLS_KEY, ODGM_TLS_CA, https:// members): writes replicate and forward as in
// cleartext, and the internal Raft service refuses callers without a certificate the
// cluster's CA signed, whatever else they present.
import { readFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ClusterService, CollectionService, DataService, RaftService } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";
import { createRaftCollection, waitFor } from "./fixtures/cluster-probe.js";

const dir = join(import.meta.dirname, "fixtures", "tls");
const file = (name: string) => join(dir, name);
const ca = readFileSync(file("ca.pem"));
let cluster: TestCluster;

/** A gRPC client trusting the cluster's CA, presenting `identity` when given. */
function clientOf<
  S extends
    | typeof DataService
    | typeof CollectionService
    | typeof RaftService
    | typeof ClusterService,
>(service: S, id: number, identity?: "node" | "rogue") {
  const nodeOptions =
    identity === undefined
      ? { ca }
      : {
          ca,
          cert: readFileSync(file(`${identity}.pem`)),
          key: readFileSync(file(`${identity}-key.pem`)),
        };
  return createClient(service, createGrpcTransport({ baseUrl: cluster.url(id), nodeOptions }));
}

beforeAll(async () => {
  cluster = await startCluster({
    tls: { cert: file("node.pem"), key: file("node-key.pem"), ca: file("ca.pem") },
  });
  await cluster.waitReady();
  const admin = clientOf(CollectionService, 1);
  await createRaftCollection(cluster, admin, { name: "kv" });
}, 180_000);
afterAll(async () => {
  await cluster?.close();
});

describe("a cluster over mutual TLS", () => {
  it("replicates: a write on one node is read on every node", async () => {
    const value = new TextEncoder().encode("over tls");
    await waitFor(
      () =>
        clientOf(DataService, 2)
          .setValue(
            { clsId: "kv", objectIdStr: "o", keyStr: "k", value: { data: value } },
            { timeoutMs: 5000 },
          )
          .then(() => true)
          .catch(() => false),
      30_000,
    );
    for (const id of cluster.ids) {
      const r = await clientOf(DataService, id).getValue({
        clsId: "kv",
        objectIdStr: "o",
        keyStr: "k",
      });
      expect(new TextDecoder().decode(r.value?.data), `node ${id}`).toBe("over tls");
    }
  });

  it("the Raft service answers UNAUTHENTICATED without a certificate the CA signed", async () => {
    const propose = (identity?: "node" | "rogue") =>
      clientOf(RaftService, 1, identity)
        .proposeBatch(
          { proposals: [{ group: "no-such-group", command: new Uint8Array([1]) }] },
          { timeoutMs: 5000 },
        )
        .then(
          (r) => ({ code: undefined, message: "", outcome: r.outcomes[0]?.outcome }),
          (e: unknown) => {
            const ce = ConnectError.from(e);
            return { code: ce.code, message: ce.rawMessage, outcome: undefined };
          },
        );
    const none = await propose();
    expect(none.code).toBe(Code.Unauthenticated);
    expect(none.message).toMatch(/client certificate signed by the cluster's CA/);
    expect((await propose("rogue")).code).toBe(Code.Unauthenticated);
    // A member's certificate gets through to the service, which does not host the group.
    const member = await propose("node");
    expect(member.code).toBeUndefined();
    expect(member.outcome).toMatchObject({
      case: "refused",
      value: { code: "unavailable", message: expect.stringMatching(/does not host group/) },
    });
  });

  it("over HTTP/1.1 the Raft service is a 401", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${cluster.url(3)}/oprc.RaftService/ProposeBatch`,
        { method: "POST", ca, headers: { "content-type": "application/json" } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end("{}");
    });
    expect(status).toBe(401);
  });

  it("a member recorded at run time must be https:// too", async () => {
    const err = await clientOf(ClusterService, 1)
      .setMember({ id: 9n, url: "http://127.0.0.1:9" })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(err?.code).toBe(Code.InvalidArgument);
    expect(err?.rawMessage).toMatch(/https:\/\/ URLs/);
  });
});
