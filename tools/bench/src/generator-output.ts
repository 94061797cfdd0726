// Parsers of what the C load generators print: h2load's summary and per-request log,
// redis-benchmark's CSV, grpc-load's JSON. Pure functions (tested with captured outputs).
import { percentileSorted } from "./stats.js";

/** h2load's end-of-run summary. */
export interface H2loadSummary {
  /** Requests per second as h2load computed it (done requests over the whole run). */
  readonly rps: number;
  readonly total: number;
  readonly started: number;
  readonly done: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly errored: number;
  readonly timeout: number;
  readonly status2xx: number;
  readonly status3xx: number;
  readonly status4xx: number;
  readonly status5xx: number;
  /** Response DATA bytes (HTTP/2 payload of DATA frames). */
  readonly dataBytes: number;
}

function match(re: RegExp, text: string, what: string): RegExpExecArray {
  const m = re.exec(text);
  if (m === null) throw new Error(`h2load output has no ${what} line:\n${text.slice(-1500)}`);
  return m;
}

/**
 * Parses h2load's summary (`finished in …, N req/s`, `requests: …`, `status codes: …`,
 * `traffic: … (N) data`).
 */
export function parseH2load(stdout: string): H2loadSummary {
  const fin = match(/finished in [\d.]+m?s, ([\d.]+) req\/s/, stdout, "finished");
  const req = match(
    /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/,
    stdout,
    "requests",
  );
  const st = match(/status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/, stdout, "status");
  const data = match(/\((\d+)\) data/, stdout, "traffic");
  const n = (m: RegExpExecArray, i: number): number => Number(m[i]);
  return {
    rps: n(fin, 1),
    total: n(req, 1),
    started: n(req, 2),
    done: n(req, 3),
    succeeded: n(req, 4),
    failed: n(req, 5),
    errored: n(req, 6),
    timeout: n(req, 7),
    status2xx: n(st, 1),
    status3xx: n(st, 2),
    status4xx: n(st, 3),
    status5xx: n(st, 4),
    dataBytes: n(data, 1),
  };
}

/** Latency percentiles (µs) of one run. */
export interface Latency {
  readonly p50Us: number;
  readonly p99Us: number;
}

/**
 * Latency of the requests in an h2load `--log-file` (tab-separated: start time µs since
 * the epoch, HTTP status, µs until the end of the response). Only 2xx lines count;
 * `count` is how many there were. Nearest-rank percentiles, as the rest of the harness.
 */
export function parseH2loadLog(text: string): Latency & { readonly count: number } {
  const us: number[] = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const cols = line.split("\t");
    if (!/^2\d\d$/.test(cols[1] ?? "")) continue;
    const v = Number(cols[2]);
    if (Number.isFinite(v)) us.push(v);
  }
  const sorted = Float64Array.from(us).sort();
  return {
    count: us.length,
    p50Us: percentileSorted(sorted, 50),
    p99Us: percentileSorted(sorted, 99),
  };
}

/** redis-benchmark's `--csv` line of one test. */
export interface RedisBenchmarkResult extends Latency {
  readonly test: string;
  readonly rps: number;
}

/**
 * Parses redis-benchmark `--csv` output (Redis ≥ 7: `"test","rps","avg_latency_ms",…,
 * "p50_latency_ms",…,"p99_latency_ms",…`); the last data line is the result.
 */
export function parseRedisBenchmarkCsv(stdout: string): RedisBenchmarkResult {
  const lines = stdout
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.startsWith('"'));
  const cells = (l: string): string[] =>
    [...l.matchAll(/"((?:[^"]|"")*)"/g)].map((m) => (m[1] ?? "").replaceAll('""', '"'));
  const header = lines.find((l) => l.startsWith('"test"'));
  const data = lines.filter((l) => !l.startsWith('"test"')).at(-1);
  if (header === undefined || data === undefined)
    throw new Error(`redis-benchmark printed no CSV result:\n${stdout.slice(-1500)}`);
  const h = cells(header);
  const d = cells(data);
  const col = (name: string): number => {
    const i = h.indexOf(name);
    const v = i < 0 ? Number.NaN : Number(d[i]);
    if (!Number.isFinite(v)) throw new Error(`redis-benchmark CSV has no number in ${name}`);
    return v;
  };
  return {
    test: d[0] ?? "",
    rps: col("rps"),
    p50Us: col("p50_latency_ms") * 1000,
    p99Us: col("p99_latency_ms") * 1000,
  };
}

/** grpc-load's final JSON object (see `c/grpc-load.c`). */
export interface GrpcLoadResult {
  readonly bodies: number;
  readonly connections: number;
  readonly inflight: number;
  readonly warmup_ms: number;
  readonly duration_ms: number;
  /** Requests sent over warm-up, window and drain. */
  readonly sent_total: number;
  /** Responses with HTTP 200 and grpc-status 0, over the whole run. */
  readonly ok_total: number;
  readonly err_total: number;
  readonly grpc_err: number;
  readonly http_err: number;
  readonly stream_err: number;
  /** Requests still unanswered when the drain gave up (or their connection died). */
  readonly incomplete: number;
  readonly window_ok: number;
  readonly window_err: number;
  /** Successful responses per second in the window. */
  readonly rps: number;
  readonly p50_us: number;
  readonly p90_us: number;
  readonly p99_us: number;
  readonly max_us: number;
  /** First failure seen (`grpc-status 3: …`, percent-decoded by {@link parseGrpcLoad}); empty when none. */
  readonly first_error: string;
}

/** Parses grpc-load's stdout: the last line that is a JSON object. */
export function parseGrpcLoad(stdout: string): GrpcLoadResult {
  const line = stdout
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.startsWith("{"))
    .at(-1);
  if (line === undefined) throw new Error(`grpc-load printed no result:\n${stdout.slice(-1500)}`);
  const r = JSON.parse(line) as GrpcLoadResult;
  let first = r.first_error;
  try {
    first = decodeURIComponent(first);
  } catch {
    // not percent-encoded
  }
  return { ...r, first_error: first };
}

/** Redis `INFO commandstats` counters of one command. */
export interface CommandStats {
  readonly calls: number;
  readonly failedCalls: number;
  readonly rejectedCalls: number;
}

/** Parses `cmdstat_<cmd>:calls=…,failed_calls=…,rejected_calls=…` from `INFO commandstats`; zeros when absent. */
export function parseCommandStats(info: string, command: string): CommandStats {
  const m = new RegExp(`^cmdstat_${command}:(.*)$`, "m").exec(info);
  const fields = new Map<string, number>();
  for (const kv of (m?.[1] ?? "").trim().split(",")) {
    const [k, v] = kv.split("=");
    if (k !== undefined && v !== undefined) fields.set(k, Number(v));
  }
  return {
    calls: fields.get("calls") ?? 0,
    failedCalls: fields.get("failed_calls") ?? 0,
    rejectedCalls: fields.get("rejected_calls") ?? 0,
  };
}
