// Requests/s of single-value GET and PUT through the gateway at 64 concurrent connections,
// against a trivial route on the same Hono app and server (same middleware) as the baseline.
// Each iteration sends 64 requests at once over keep-alive connections, so req/s = hz × 64.
// Run: vitest bench --run
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import {
  connectNodeAdapter,
  createGrpcTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { serve } from "@hono/node-server";
import { DataService } from "@oprc/grpc-api";
import type { Hono } from "hono";
import { afterAll, test } from "vitest";
import { memoryServiceRoutes } from "../test/fixtures/memory-data-service.js";
import { createRestGateway } from "./rest-gateway.js";

const CONNECTIONS = 64;
const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });

async function listen(app: Hono<never> | { fetch: (r: Request) => Response | Promise<Response> }) {
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve(
      { fetch: app.fetch as (r: Request) => Response, port: 0, hostname: "127.0.0.1" },
      () => resolve(s),
    );
  });
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

// In-process: router transport, as inside odgm.
const inProcessApp = createRestGateway({
  data: createClient(DataService, createRouterTransport(memoryServiceRoutes())),
});
inProcessApp.get("/trivial", (c) => c.text("ok"));
const inProcess = await listen(inProcessApp);

// Standalone: gRPC over h2c to a connect-node server holding the same fixture.
const upstream = http2.createServer(connectNodeAdapter({ routes: memoryServiceRoutes() }));
await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
const sessions = new Http2SessionManager(upstreamUrl);
const standaloneApp = createRestGateway({
  data: createClient(
    DataService,
    createGrpcTransport({ baseUrl: upstreamUrl, sessionManager: sessions }),
  ),
});
const standalone = await listen(standaloneApp);

const valuePath = "/api/class/bench/0/objects/bench-obj/values/status";
const body = JSON.stringify({ value: "shipped" });
for (const base of [inProcess.url, standalone.url]) {
  await fetch(`${base}${valuePath}`, {
    method: "PUT",
    body,
    headers: { "content-type": "application/json" },
  });
}

function request(url: string, method: string, payload?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> =
      payload === undefined
        ? {}
        : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) };
    const req = http.request(url, { method, agent, headers }, (res) => {
      res.resume();
      res.on("end", () =>
        res.statusCode !== undefined && res.statusCode < 300
          ? resolve()
          : reject(new Error(`status ${res.statusCode}`)),
      );
    });
    req.on("error", reject);
    req.end(payload);
  });
}

async function burst(url: string, method = "GET", payload?: string): Promise<void> {
  const all: Promise<void>[] = [];
  for (let i = 0; i < CONNECTIONS; i++) all.push(request(url, method, payload));
  await Promise.all(all);
}

const NAMES = [
  "baseline: trivial route",
  "GET value, in-process",
  "PUT value, in-process",
  "GET value, standalone gRPC",
  "PUT value, standalone gRPC",
] as const;
const ROUNDS = 2;

afterAll(() => {
  inProcess.server.close();
  standalone.server.close();
  sessions.abort();
  upstream.close();
  agent.destroy();
});

test(`single-value GET/PUT at ${CONNECTIONS} concurrent connections`, async ({ bench }) => {
  const options = { time: 2000, warmupTime: 500 };
  // Best of ROUNDS runs of the whole group: the VM is shared, so one noisy burst would skew a ratio.
  const best = new Map<string, number>();
  for (let round = 0; round < ROUNDS; round++) {
    const r = await bench.compare(
      bench("baseline: trivial route", () => burst(`${inProcess.url}/trivial`)),
      bench("GET value, in-process", () => burst(`${inProcess.url}${valuePath}`)),
      bench("PUT value, in-process", () => burst(`${inProcess.url}${valuePath}`, "PUT", body)),
      bench("GET value, standalone gRPC", () => burst(`${standalone.url}${valuePath}`)),
      bench("PUT value, standalone gRPC", () =>
        burst(`${standalone.url}${valuePath}`, "PUT", body),
      ),
      options,
    );
    for (const name of NAMES) {
      // One iteration = CONNECTIONS requests in flight at once; latency is in ms.
      const rps = (CONNECTIONS * 1000) / r.get(name).latency.mean;
      best.set(name, Math.max(best.get(name) ?? 0, rps));
    }
  }
  const base = best.get(NAMES[0]) ?? Number.NaN;
  console.log(
    [
      "| route | requests/s | ratio to trivial route |",
      "|---|---|---|",
      ...NAMES.map(
        (n) =>
          `| ${n} | ${Math.round(best.get(n) ?? 0)} | ${((best.get(n) ?? 0) / base).toFixed(2)}× |`,
      ),
    ].join("\n"),
  );
}, 300_000);
