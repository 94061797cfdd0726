// One server pipeline: an interceptor given to the node runs on every path a call can take
// — the gRPC unary fast path, connect-node (Connect / gRPC-Web), and REST's in-process
// transport — and a rejection it makes is honoured on each.
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { DataService } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OdgmNode } from "../src/index.js";
import { startTempNode, type TempNode } from "./fixtures/temp-node.js";

interface Seen {
  method: string;
  fastPath: boolean;
}
const seen: Seen[] = [];
const probe: Interceptor = (next) => async (req) => {
  // The fast path's frame is on the stack when a call came through it.
  seen.push({
    method: req.method.name,
    fastPath: /grpc-unary-fast-path/.test(new Error().stack ?? ""),
  });
  if (req.header.get("x-deny") === "1") {
    throw new ConnectError("denied by the test interceptor", Code.PermissionDenied);
  }
  const res = await next(req);
  res.header.set("x-intercepted", "yes");
  return res;
};

let temp: TempNode;
let node: OdgmNode;
beforeAll(async () => {
  temp = await startTempNode({}, undefined, { interceptors: [probe] });
  node = temp.node;
});
afterAll(async () => {
  await temp?.close();
});

const call = async (
  transport: ReturnType<typeof createGrpcTransport>,
  headers: Record<string, string> = {},
) => {
  let intercepted: string | null = null;
  const data = createClient(DataService, transport);
  try {
    await data.getValue(
      { clsId: "default", objectIdStr: "o", keyStr: "k" },
      { headers, onHeader: (h) => (intercepted = h.get("x-intercepted")) },
    );
    return { code: 0, intercepted };
  } catch (err) {
    return { code: ConnectError.from(err).code, intercepted };
  }
};

describe("one server pipeline", () => {
  it("runs the interceptor on the gRPC fast path, and the fast path is taken", async () => {
    seen.length = 0;
    const r = await call(createGrpcTransport({ baseUrl: node.url }));
    expect(r).toEqual({ code: 0, intercepted: "yes" });
    expect(seen).toEqual([{ method: "GetValue", fastPath: true }]);
  });

  it("runs it on connect-node (the Connect protocol)", async () => {
    seen.length = 0;
    const r = await call(createConnectTransport({ baseUrl: node.url, httpVersion: "2" }));
    expect(r).toEqual({ code: 0, intercepted: "yes" });
    expect(seen).toEqual([{ method: "GetValue", fastPath: false }]);
  });

  it("runs it for REST requests too", async () => {
    seen.length = 0;
    const res = await fetch(`${node.url}/api/class/default/0/objects/o/values/k`);
    expect(res.status).toBe(404);
    expect(seen.map((s) => s.method)).toEqual(["GetValue"]);
  });

  it("serves a page stream on the fast path: 300 entries of 1 KiB in several writes, whole and in order", async () => {
    const data = createClient(DataService, createGrpcTransport({ baseUrl: node.url }));
    const values: Record<string, { data: Uint8Array }> = {};
    for (let i = 0; i < 300; i++)
      values[`k${String(i).padStart(3, "0")}`] = { data: new Uint8Array(1024).fill(i % 251) };
    await data.batchSetValues({ clsId: "default", objectIdStr: "page", values });
    seen.length = 0;
    let intercepted: string | null = null;
    const got: string[] = [];
    for await (const v of data.listValues(
      { clsId: "default", objectIdStr: "page", limit: 300 },
      { onHeader: (h) => (intercepted = h.get("x-intercepted")) },
    )) {
      expect(v.value?.data).toEqual(values[v.key]?.data);
      got.push(v.key);
    }
    expect(got).toEqual(Object.keys(values));
    expect(intercepted).toBe("yes");
    expect(seen).toEqual([{ method: "ListValues", fastPath: true }]);
  });

  it("honours a rejection on every path", async () => {
    const deny = { "x-deny": "1" };
    expect((await call(createGrpcTransport({ baseUrl: node.url }), deny)).code).toBe(
      Code.PermissionDenied,
    );
    expect(
      (await call(createConnectTransport({ baseUrl: node.url, httpVersion: "2" }), deny)).code,
    ).toBe(Code.PermissionDenied);
  });
});
