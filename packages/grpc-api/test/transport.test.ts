// Transport-level behaviour of the routes: message size limits, malformed bodies, the three
// protocols (gRPC, gRPC-Web, Connect) on one handler, and the standard health service.
import { execFile } from "node:child_process";
import { connect as http2Connect } from "node:http2";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createHealthService,
  DataService,
  Health,
  HealthCheckResponse_ServingStatus as ServingStatus,
  SingleObjectRequestSchema,
} from "../src/index.js";
import {
  createConnectCaller,
  createPythonCaller,
  findPythonWithGrpc,
  skipPythonInterop,
  startServer,
  type TestServer,
} from "./fixtures/harness.js";

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Sends one raw gRPC request (already framed) and returns the grpc-status trailer. */
async function rawGrpc(
  baseUrl: string,
  path: string,
  body: Uint8Array,
): Promise<{ status: string; message: string }> {
  const session = http2Connect(baseUrl);
  try {
    return await new Promise((resolve, reject) => {
      const req = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc",
        te: "trailers",
      });
      let headers: Record<string, unknown> = {};
      req.on("response", (h) => {
        headers = h;
      });
      req.on("trailers", (t) => {
        resolve({
          status: String(t["grpc-status"]),
          message: decodeURIComponent(String(t["grpc-message"] ?? "")),
        });
      });
      req.on("end", () => {
        // Trailers-only responses carry the status in the headers.
        if (headers["grpc-status"] !== undefined) {
          resolve({
            status: String(headers["grpc-status"]),
            message: decodeURIComponent(String(headers["grpc-message"] ?? "")),
          });
        }
      });
      req.on("error", reject);
      req.resume();
      req.end(Buffer.from(body));
    });
  } finally {
    session.close();
  }
}

function frame(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + payload.length);
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, 5);
  return out;
}

describe("message limits and malformed input", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ readMaxBytes: 1024, writeMaxBytes: 2048 });
    // An object whose Get response exceeds writeMaxBytes.
    await server.plane.setObject(
      { cls: "c", partition: 0, id: { kind: "numeric", id: "1", numeric: 1n } },
      {
        entries: [
          {
            key: { kind: "numeric", key: "1", numeric: 1 },
            value: { data: new Uint8Array(3000), type: 0 },
          },
        ],
      },
      { signal: new AbortController().signal, headers: new Headers() },
    );
  });
  afterAll(async () => {
    await server?.close();
  });

  const clients = skipPythonInterop ? ["connect-node"] : ["connect-node", "python"];
  it.each(clients)("oversized request and response → RESOURCE_EXHAUSTED (%s)", async (which) => {
    const c =
      which === "python" ? createPythonCaller(server.target) : createConnectCaller(server.baseUrl);
    try {
      const req = create(DataService.method.setValue.input, {
        clsId: "c",
        objectId: 2n,
        key: 1,
        value: { data: new Uint8Array(4000) },
      });
      const r = await c.call(DataService.method.setValue, req);
      expect(r.code).toBe(Code.ResourceExhausted);
      const get = await c.call(
        DataService.method.get,
        create(SingleObjectRequestSchema, { clsId: "c", objectId: 1n }),
      );
      expect(get.code).toBe(Code.ResourceExhausted);
      // The server keeps serving.
      const ok = await c.call(
        DataService.method.getValue,
        create(DataService.method.getValue.input, { clsId: "c", objectId: 1n, key: 9 }),
      );
      expect(ok.code).toBe(0);
    } finally {
      await c.close();
    }
  });

  it("a malformed protobuf body is an error status, never a crash", async () => {
    // Field 1 (cls_id, length-delimited) with a truncated length varint.
    const r = await rawGrpc(
      server.baseUrl,
      "/oprc.DataService/Get",
      frame(Uint8Array.of(0x0a, 0xff, 0xff)),
    );
    // The client's bytes: INVALID_ARGUMENT (connect-node as patched in pnpm-workspace.yaml).
    expect(r.status).toBe(String(Code.InvalidArgument));
    // Truncated envelope: declares 100 bytes, sends 3.
    const trunc = Uint8Array.of(0, 0, 0, 0, 100, 1, 2, 3);
    const r2 = await rawGrpc(server.baseUrl, "/oprc.DataService/Get", trunc);
    expect(r2.status).not.toBe("0");
    const ok = await rawGrpc(
      server.baseUrl,
      "/oprc.DataService/GetValue",
      frame(
        toBinary(
          DataService.method.getValue.input,
          create(DataService.method.getValue.input, { clsId: "c", objectId: 1n, key: 9 }),
        ),
      ),
    );
    expect(ok.status).toBe("0");
  });

  it.skipIf(skipPythonInterop)(
    "gRPC C-core sees the same status for a malformed body",
    async () => {
      const py = findPythonWithGrpc();
      if (py === undefined)
        throw new Error("python3 with grpcio is required (set ODGM_SKIP_PYTHON_INTEROP=1 to skip)");
      const script = fileURLToPath(new URL("./fixtures/grpc_call.py", import.meta.url));
      // Async: the server runs in this process, so a blocking exec would stall it.
      const { stdout } = await promisify(execFile)(py, [
        script,
        server.target,
        "/oprc.DataService/Get",
        "unary",
        "0affff",
      ]);
      const out = JSON.parse(stdout) as { code: number };
      expect([Code.InvalidArgument, Code.Internal]).toContain(out.code);
    },
  );
});

describe("protocols and health", () => {
  let server: TestServer;
  const health = createHealthService();
  beforeAll(async () => {
    server = await startServer({ health });
    await server.plane.setEntry(
      { cls: "c", partition: 0, id: { kind: "string", id: "o" } },
      { key: { kind: "string", key: "k" }, value: { data: utf8("v"), type: 0 } },
      { signal: new AbortController().signal, headers: new Headers() },
    );
  });
  afterAll(async () => {
    await server?.close();
  });

  it.each([
    ["gRPC", () => createGrpcTransport({ baseUrl: server.baseUrl })],
    ["gRPC-Web", () => createGrpcWebTransport({ baseUrl: server.baseUrl, httpVersion: "2" })],
    ["Connect", () => createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "2" })],
  ])("%s: unary, streaming and error statuses", async (_name, transport) => {
    const client = createClient(DataService, transport());
    const gv = await client.getValue({ clsId: "c", objectIdStr: "O", keyStr: "K" });
    expect(new TextDecoder().decode(gv.value?.data)).toBe("v");
    const list = [];
    for await (const e of client.listValues({ clsId: "c", objectIdStr: "o" })) list.push(e.key);
    expect(list).toEqual(["k"]);
    const err = await client.get({ clsId: "c", objectIdStr: "missing" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.NotFound);
    const bad = await client.get({ clsId: "c" }).catch((e: unknown) => e);
    expect((bad as ConnectError).code).toBe(Code.InvalidArgument);
  });

  it("grpc.health.v1: Check, List and Watch", async () => {
    const client = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
    expect((await client.check({ service: "" })).status).toBe(ServingStatus.SERVING);
    expect((await client.check({ service: "oprc.DataService" })).status).toBe(
      ServingStatus.SERVING,
    );
    const unknown = await client.check({ service: "nope" }).catch((e: unknown) => e);
    expect((unknown as ConnectError).code).toBe(Code.NotFound);
    expect(Object.keys((await client.list({})).statuses).sort()).toEqual([
      "",
      "oprc.DataService",
      "oprc.OprcFunction",
    ]);

    const ac = new AbortController();
    const seen: ServingStatus[] = [];
    const stream = client.watch({ service: "oprc.DataService" }, { signal: ac.signal });
    const it = stream[Symbol.asyncIterator]();
    seen.push((await it.next()).value.status);
    health.setStatus("oprc.DataService", ServingStatus.NOT_SERVING);
    seen.push((await it.next()).value.status);
    health.setStatus("oprc.DataService", ServingStatus.SERVING);
    seen.push((await it.next()).value.status);
    ac.abort();
    await it.return?.();
    expect(seen).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING, ServingStatus.SERVING]);
  });

  it.skipIf(skipPythonInterop)("grpc C-core health Check", async () => {
    const c = createPythonCaller(server.target);
    try {
      const r = await c.call(
        Health.method.check,
        create(Health.method.check.input, { service: "" }),
      );
      expect(r.code).toBe(0);
      expect(r.responses[0]?.status).toBe(ServingStatus.SERVING);
      const u = await c.call(
        Health.method.check,
        create(Health.method.check.input, { service: "nope" }),
      );
      expect(u.code).toBe(Code.NotFound);
    } finally {
      await c.close();
    }
  });
});
