// Unary throughput of the handler layer, as ratios against baselines measured in the same run:
//   raw node:http2 echo   — the ceiling: HTTP/2 + gRPC framing with no RPC framework
//   connect empty RPC     — connect-node's per-call cost (grpc.health.v1.Health/Check)
//   connect GetValue      — our handler: resolve id + key, call an in-memory plane, encode
// The same raw HTTP/2 client drives all three, so differences are server-side; one more row
// uses connect-node's own gRPC client end to end. Each iteration issues `CONCURRENCY`
// calls at once on one HTTP/2 connection; requests/s = hz × CONCURRENCY.
import {
  type ClientHttp2Session,
  createServer,
  type Http2Server,
  connect as h2connect,
} from "node:http2";
import type { AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, test } from "vitest";
import type { ObjectDataPlane } from "./data-plane.js";
import { HealthCheckRequestSchema } from "./gen/grpc/health/v1/health_pb.js";
import { DataService, SingleKeyRequestSchema } from "./gen/oprc-data_pb.js";
import { createOdgmConnectRoutes } from "./odgm-connect-routes.js";

const value = { data: new Uint8Array(64).fill(7), type: 0 };
const stub = (): never => {
  throw new Error("not used by the benchmark");
};
// A minimal in-memory plane: GetValue answers from a constant, so the figure is the API layer.
const plane: ObjectDataPlane & { invokeFn: () => never; invokeObj: () => never } = {
  capabilities: () => ({ granularEntryStorage: true, eventPipelineV2: true }),
  getEntry: async (_ref, key) => ({ objectVersion: 3n, entry: { key, value, version: 3n } }),
  getObject: stub,
  deleteObject: stub,
  setObject: stub,
  mergeObject: stub,
  setEntry: stub,
  deleteEntry: stub,
  batchEntries: stub,
  listEntries: stub,
  listObjects: stub,
  stats: stub,
  invokeFn: stub,
  invokeObj: stub,
};

function frame(payload: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + payload.length);
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
}

async function listen(server: Http2Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** One unary gRPC call with node:http2 alone; resolves on the trailers. */
function rawCall(session: ClientHttp2Session, path: string, body: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
    });
    req.on("trailers", (t) => {
      if (t["grpc-status"] === "0") resolve();
      else reject(new Error(`grpc-status ${String(t["grpc-status"])}`));
    });
    req.on("error", reject);
    req.resume();
    req.end(body);
  });
}

const getValueBody = frame(
  toBinary(
    SingleKeyRequestSchema,
    create(SingleKeyRequestSchema, { clsId: "c", objectIdStr: "user-1", keyStr: "name" }),
  ),
);
const checkBody = frame(toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema)));

let odgm: Http2Server;
let echo: Http2Server;
let odgmSession: ClientHttp2Session;
let echoSession: ClientHttp2Session;
let client: ReturnType<typeof createClient<typeof DataService>>;

beforeAll(async () => {
  odgm = createServer(connectNodeAdapter({ routes: createOdgmConnectRoutes({ plane }) }));
  // The baseline: answer every request with its own gRPC frame, status OK, in trailers.
  echo = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/grpc" });
      res.addTrailers({ "grpc-status": "0" });
      res.end(Buffer.concat(chunks));
    });
  });
  const odgmUrl = await listen(odgm);
  const echoUrl = await listen(echo);
  odgmSession = h2connect(odgmUrl);
  echoSession = h2connect(echoUrl);
  client = createClient(DataService, createGrpcTransport({ baseUrl: odgmUrl }));
});

afterAll(async () => {
  odgmSession.destroy();
  echoSession.destroy();
  odgm.close();
  echo.close();
});

const many = (n: number, fn: () => Promise<unknown>): Promise<unknown[]> =>
  Promise.all(Array.from({ length: n }, fn));

const ROUNDS = 3;
const rows: string[] = [];
const NAMES = [
  "raw node:http2 echo (baseline)",
  "connect-node empty RPC (Health/Check)",
  "connect-node GetValue (in-memory plane)",
  "GetValue via connect-node gRPC client",
] as const;

for (const concurrency of [1, 64]) {
  test(`unary, concurrency ${concurrency}`, { timeout: 600_000 }, async ({ bench }) => {
    const options = { time: 1500, warmupTime: 300, iterations: 8, warmupIterations: 4 };
    // Best of ROUNDS (by median latency): the VM is shared, so one noisy burst would skew a row.
    const best = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      const r = await bench.compare(
        bench(NAMES[0], async () => {
          await many(concurrency, () => rawCall(echoSession, "/echo", getValueBody));
        }),
        bench(NAMES[1], async () => {
          await many(concurrency, () =>
            rawCall(odgmSession, "/grpc.health.v1.Health/Check", checkBody),
          );
        }),
        bench(NAMES[2], async () => {
          await many(concurrency, () =>
            rawCall(odgmSession, "/oprc.DataService/GetValue", getValueBody),
          );
        }),
        bench(NAMES[3], async () => {
          await many(concurrency, () =>
            client.getValue({ clsId: "c", objectIdStr: "user-1", keyStr: "name" }),
          );
        }),
        options,
      );
      for (const name of NAMES) {
        const p50 = r.get(name).latency.p50 ?? Number.NaN;
        best.set(name, Math.min(best.get(name) ?? Number.POSITIVE_INFINITY, p50));
      }
    }
    const rps = (name: string): number => (concurrency * 1000) / (best.get(name) ?? Number.NaN);
    const base = rps(NAMES[0]);
    for (const name of NAMES) {
      rows.push(
        `| ${concurrency} | ${name} | ${Math.round(rps(name))} | ${(rps(name) / base).toFixed(2)}× |`,
      );
    }
    if (concurrency === 64) {
      console.log(
        [
          "| concurrency | call | requests/s | ratio to raw node:http2 |",
          "|---|---|---|---|",
          ...rows,
        ].join("\n"),
      );
    }
  });
}
