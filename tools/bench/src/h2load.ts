// One h2load run (Debian's nghttp2-client) against a local server, with every answer
// checked: all requests done with a 2xx status and, for gRPC, enough response DATA (an
// error is a trailers-only answer with none). Latency percentiles come from h2load's
// per-request log.
import { readFileSync, rmSync } from "node:fs";
import { type H2loadSummary, parseH2load, parseH2loadLog } from "./generator-output.js";
import { runTool } from "./system-tools.js";

/** Options of {@link runH2load}. */
export interface H2loadRun {
  readonly port: number;
  /** Request path, e.g. `/oprc.DataService/GetValue`. */
  readonly path: string;
  /** File holding the request body (one gRPC frame for gRPC); none sends GETs. */
  readonly body?: string;
  /** Requests in total. */
  readonly n: number;
  /** Connections; the requests in flight are spread over them. */
  readonly connections: number;
  /** Requests in flight in total (a multiple of `connections`). */
  readonly inflight: number;
  /** HTTP/1.1 instead of HTTP/2 (then one request in flight per connection). */
  readonly h1?: boolean;
  /** Bytes of response DATA per request: exactly, or at least. */
  readonly data: { readonly exact: number } | { readonly atLeast: number };
  /** Extra request headers (`name: value`; `:method: PUT` changes the method). */
  readonly headers?: readonly string[];
  /** Where to write the per-request log; without one, no percentiles. */
  readonly logFile?: string;
  readonly timeoutMs: number;
}

/** What one run measured (percentiles NaN without a log file). */
export interface H2loadResult {
  readonly rps: number;
  readonly p50Us: number;
  readonly p99Us: number;
}

/** Runs h2load once; throws unless every request succeeded. */
export async function runH2load(o: H2loadRun): Promise<H2loadResult> {
  if (o.logFile !== undefined) rmSync(o.logFile, { force: true });
  const grpc = o.body !== undefined && !o.h1;
  const out = await runTool(
    "h2load",
    [
      "-n",
      String(o.n),
      "-c",
      String(o.connections),
      ...(o.h1 ? ["--h1"] : ["-m", String(o.inflight / o.connections)]),
      "-t",
      "1",
      ...(o.body === undefined ? [] : ["-d", o.body]),
      ...(grpc ? ["-H", "content-type: application/grpc", "-H", "te: trailers"] : []),
      ...(o.headers ?? []).flatMap((h) => ["-H", h]),
      ...(o.logFile === undefined ? [] : [`--log-file=${o.logFile}`]),
      `http://127.0.0.1:${o.port}${o.path}`,
    ],
    { timeoutMs: o.timeoutMs },
  );
  const s: H2loadSummary = parseH2load(out.stdout);
  const bad =
    s.done !== o.n ||
    s.succeeded !== o.n ||
    s.status2xx !== o.n ||
    s.failed + s.errored + s.timeout + s.status3xx + s.status4xx + s.status5xx > 0;
  if (bad) throw new Error(`h2load: not every request succeeded:\n${out.stdout.slice(-800)}`);
  const dataOk =
    "exact" in o.data ? s.dataBytes === o.data.exact * o.n : s.dataBytes >= o.data.atLeast * o.n;
  if (!dataOk)
    throw new Error(
      `h2load: ${s.dataBytes} response DATA bytes for ${o.n} requests (gRPC errors?)`,
    );
  if (o.logFile === undefined) return { rps: s.rps, p50Us: Number.NaN, p99Us: Number.NaN };
  const lat = parseH2loadLog(readFileSync(o.logFile, "latin1"));
  if (lat.count !== o.n)
    throw new Error(`h2load log has ${lat.count} lines with a 2xx status, expected ${o.n}`);
  return { rps: s.rps, p50Us: lat.p50Us, p99Us: lat.p99Us };
}
