import http from "node:http";
import type { Client } from "@connectrpc/connect";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DataService, Health } from "@oprc/grpc-api";

/** Per-call bound: a hung request fails instead of stalling the run. */
export const CALL_TIMEOUT_MS = 10_000;

/**
 * A connect-node gRPC client of `DataService`. One transport shares one HTTP/2 session
 * for every concurrent call (how a service would hold its client).
 */
export function grpcClient(baseUrl: string): Client<typeof DataService> {
  return createClient(
    DataService,
    createGrpcTransport({ baseUrl, defaultTimeoutMs: CALL_TIMEOUT_MS }),
  );
}

/** A connect-node gRPC client of the standard health service (`grpc.health.v1.Health`). */
export function healthClient(baseUrl: string): Client<typeof Health> {
  return createClient(Health, createGrpcTransport({ baseUrl, defaultTimeoutMs: CALL_TIMEOUT_MS }));
}

/** An HTTP/1.1 keep-alive client bound to one server: `maxSockets` = the highest concurrency. */
export interface HttpClient {
  /** Sends a request and drains the answer; rejects on a non-2xx status. */
  request(method: string, path: string, body?: string): Promise<string>;
  /** Closes pooled sockets. */
  close(): void;
}

/** Creates an {@link HttpClient} for `http://127.0.0.1:<port>`. */
export function httpClient(port: number, maxSockets: number): HttpClient {
  const agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  const jsonHeaders = { "content-type": "application/json" };
  return {
    request(method, path, body) {
      return new Promise<string>((resolve, reject) => {
        const req = http.request(
          {
            host: "127.0.0.1",
            port,
            method,
            path,
            agent,
            ...(body === undefined ? {} : { headers: jsonHeaders }),
          },
          (res) => {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (d: string) => {
              text += d;
            });
            res.on("end", () => {
              const status = res.statusCode ?? 0;
              if (status >= 200 && status < 300) resolve(text);
              else reject(new Error(`HTTP ${status} ${method} ${path}: ${text.slice(0, 200)}`));
            });
            res.on("error", reject);
          },
        );
        req.setTimeout(CALL_TIMEOUT_MS, () => req.destroy(new Error("request timed out")));
        req.on("error", reject);
        req.end(body);
      });
    },
    close: () => agent.destroy(),
  };
}

/**
 * Deterministic pseudo-random object index in `1..n` for call `seq` of client `worker`
 * (spreads reads and writes over the data set; same sequence every run).
 */
export function pick(worker: number, seq: number, n: number): number {
  let x = (Math.imul(worker + 1, 0x9e3779b1) ^ Math.imul(seq + 1, 0x85ebca6b)) >>> 0;
  x = (x ^ (x >>> 16)) >>> 0;
  x = Math.imul(x, 0x7feb352d) >>> 0;
  x = (x ^ (x >>> 15)) >>> 0;
  return (x % n) + 1;
}
