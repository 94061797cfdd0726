// Every RPC method of every service a node registers, and every REST route it serves, has
// an entry in the authorization table; the table names nothing the node does not serve.
// The lists come from the running node (its services' descriptors and the REST app's
// route table), so a new method or route without an entry fails here.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REST_ACCESS, RPC_ACCESS } from "../src/index.js";
import { startTempNode, type TempNode } from "./fixtures/temp-node.js";

let n: TempNode;
beforeAll(async () => {
  n = await startTempNode({ ODGM_AUTH_TOKENS: "admin admin-token-0123456789abcdef" });
});
afterAll(async () => {
  await n?.close();
});

describe("the authorization table", () => {
  it("covers every RPC method of every registered service, and only those", () => {
    const served = n.node.served.services.flatMap((s) =>
      s.methods.map((m) => `${s.typeName}/${m.name}`),
    );
    expect(served.length).toBeGreaterThan(20);
    expect(served.filter((m) => RPC_ACCESS[m] === undefined)).toEqual([]);
    expect(Object.keys(RPC_ACCESS).filter((m) => !served.includes(m))).toEqual([]);
  });

  it("covers every REST route, and only those", () => {
    const served = [...new Set(n.node.served.routes.map((r) => `${r.method} ${r.path}`))];
    expect(served.length).toBeGreaterThan(20);
    expect(served.filter((r) => REST_ACCESS[r] === undefined)).toEqual([]);
    expect(Object.keys(REST_ACCESS).filter((r) => !served.includes(r))).toEqual([]);
  });

  it("puts the Raft service behind mutual TLS, not bearer tokens", () => {
    const raft = n.node.served.services.find((s) => s.typeName === "oprc.RaftService");
    for (const m of raft?.methods ?? []) {
      expect(RPC_ACCESS[`oprc.RaftService/${m.name}`]?.access).toBe("peer");
    }
    expect(raft?.methods.length).toBeGreaterThan(0);
  });
});
