import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { createClient } from "@connectrpc/connect";
import {
  connectNodeAdapter,
  createGrpcTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { runRestSuite } from "@oprc/conformance";
import { DataService, OprcFunction } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServedGateway, serveGateway } from "../src/index.js";
import { memoryServiceRoutes } from "./fixtures/memory-data-service.js";
import { gatewayTarget } from "./gateway-target.js";

/** A real HTTP/2 (h2c) Connect server on 127.0.0.1 serving the fixture, speaking gRPC. */
async function startUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http2.createServer(connectNodeAdapter({ routes: memoryServiceRoutes() }));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
      }),
  };
}

// The gateway standalone: gRPC over HTTP/2 to a remote node, real HTTP requests to the gateway.
runRestSuite("standalone (gRPC to an h2c server, @hono/node-server + fetch)", {
  fixture: true,
  propertyRuns: 40,
  start: async () => {
    const upstream = await startUpstream();
    const sessionManager = new Http2SessionManager(upstream.url);
    const transport = createGrpcTransport({ baseUrl: upstream.url, sessionManager });
    return gatewayTarget(
      {
        data: createClient(DataService, transport),
        functions: createClient(OprcFunction, transport),
        close: async () => {
          sessionManager.abort();
          await upstream.close();
        },
      },
      true,
    );
  },
});

describe("serveGateway (what the odgm-gateway bin runs)", () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let gateway: ServedGateway;
  beforeAll(async () => {
    upstream = await startUpstream();
    gateway = await serveGateway({ endpoint: upstream.url, hostname: "127.0.0.1", port: 0 });
  });
  afterAll(async () => {
    await gateway.close();
    await upstream.close();
  });

  it("serves the seed example against the remote node and reports ready", async () => {
    const obj = `${gateway.url}/api/class/order/0/objects/ord_2025_09_12345`;
    expect((await fetch(obj, { method: "PUT" })).status).toBe(204);
    const put = await fetch(`${obj}/values/status`, {
      method: "PUT",
      body: JSON.stringify({ value: "shipped" }),
      headers: { "content-type": "application/json" },
    });
    expect(put.status).toBe(204);
    const got = await fetch(`${obj}/values/status`);
    expect(((await got.json()) as { value: string }).value).toBe("shipped");
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
    expect(
      (await fetch(`${gateway.url}/api/class/order/0/invokes/echo`, { method: "POST", body: "x" }))
        .status,
    ).toBe(200);
    // No metrics provider in standalone mode: /metrics is not routed.
    expect((await fetch(`${gateway.url}/metrics`)).status).toBe(404);
  });

  it("answers 503 on /readyz and data routes when the upstream is gone, then recovers", async () => {
    const dead = await serveGateway({
      endpoint: "http://127.0.0.1:1",
      hostname: "127.0.0.1",
      port: 0,
      timeoutMs: 2000,
    });
    try {
      const ready = await fetch(`${dead.url}/readyz`);
      expect(ready.status).toBe(503);
      const res = await fetch(`${dead.url}/api/class/order/0/objects/x`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("unavailable");
      expect(body.error.message).not.toContain("127.0.0.1");
      expect((await fetch(`${dead.url}/healthz`)).status).toBe(200);
    } finally {
      await dead.close();
    }
  });
});
