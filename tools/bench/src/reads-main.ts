// The request paths, measured at the server: gRPC and REST driven by h2load (Debian's
// nghttp2-client, C) and Redis by redis-benchmark, 64 requests in flight, against one odgm
// child on RocksDB (WAL synced), a raw `node:http2` server answering an empty gRPC reply,
// a trivial Hono route and redis-server, all in one run. Per subject: req/s, p50/p99 from
// h2load's per-request log, and server CPU µs per request from /proc/<pid>/stat; then the
// issue-16 budgets as same-run ratios (median of per-round ratios, min–max).
// Run: npx -y pnpm@10.34.9 bench:reads [-- --quick]   (from the repository root)
import { writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import {
  BatchSetValuesRequestSchema,
  CapabilitiesRequestSchema,
  ListValuesRequestSchema,
  SetObjectRequestSchema,
  SingleKeyRequestSchema,
  SingleObjectRequestSchema,
} from "@oprc/grpc-api";
import { grpcFrame, writeBodyFile } from "./body-files.js";
import { grpcClient } from "./clients.js";
import { parseRedisBenchmarkCsv } from "./generator-output.js";
import { type H2loadRun, runH2load } from "./h2load.js";
import { startHarness } from "./harness.js";
import { fmtLoad, machineInfo } from "./machine.js";
import { odgmBin, odgmNodeFlags } from "./odgm-bin.js";
import { processCpuUs } from "./proc-stat.js";
import { killAllChildren, startChild, startChildScript } from "./processes.js";
import { startRedis } from "./redis.js";
import { pairedRatio, permutation, type Spread, spread } from "./stats.js";
import { ensureWritesTools, runTool } from "./system-tools.js";
import { fmt, fmtRatioSpread, renderTable } from "./table.js";

const { values: args } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    quick: { type: "boolean", default: false },
    rounds: { type: "string" },
    requests: { type: "string" },
  },
  strict: true,
});
const quick = args.quick;
const ROUNDS = Number(args.rounds ?? (quick ? 1 : 3));
const REQUESTS = Number(args.requests ?? (quick ? 3_000 : 10_000));
if (!(ROUNDS >= 1 && REQUESTS >= 640)) throw new Error("bad --rounds/--requests (≥ 640)");
const INFLIGHT = 64;
const { command, outFile, tmp } = startHarness("reads", { quick, giveUpMinutes: quick ? 10 : 40 });
const log = (msg: string): void => void process.stderr.write(`${msg}\n`);

const COLLECTION = "bench";
const base = { clsId: COLLECTION, partitionId: 0 };
const VALUE = { data: new TextEncoder().encode("abcdefghijklmnop") };
const entries = (n: number): Record<string, typeof VALUE> =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, VALUE]));

/** Writes one request body file (one gRPC frame of `init`). */
function body<D extends DescMessage>(name: string, schema: D, init: MessageInitShape<D>): string {
  const file = path.join(tmp, `${name}.body`);
  writeBodyFile(file, [grpcFrame(toBinary(schema, create(schema, init)))]);
  return file;
}

/** A subject: which server it loads (its pid is measured) and how. */
interface Subject {
  readonly key: string;
  readonly label: string;
  readonly server: "odgm" | "h2" | "hono" | "redis";
  /** Requests in flight (64, or 1 for the latency budget). */
  readonly inflight: number;
  readonly run: (n: number, logFile: string | undefined) => Promise<Measured>;
}
interface Measured {
  readonly rps: number;
  readonly p50Us: number;
  readonly p99Us: number;
}
interface Sample extends Measured {
  readonly cpuUs: number;
}

async function main(): Promise<void> {
  ensureWritesTools(log);
  const machine = machineInfo();
  const odgm = await startChild({
    name: "odgm",
    command: process.execPath,
    args: [...odgmNodeFlags(), odgmBin()],
    env: {
      ODGM_DATA_DIR: path.join(tmp, "odgm"),
      ODGM_HTTP_HOST: "127.0.0.1",
      ODGM_HTTP_PORT: "0",
      ODGM_SYNC_WRITES: "true",
      ODGM_LOG_LEVEL: "info",
      ODGM_COLLECTION: JSON.stringify([{ name: COLLECTION, partitionCount: 1 }]),
    },
    ready: /"url":"(http:\/\/127\.0\.0\.1:(\d+))"/,
  });
  const odgmPort = Number(odgm.ready[2]);
  const h2 = await startChildScript("h2-grpc", "./children/h2-grpc-child.ts");
  const hono = await startChildScript("hono", "./children/hono-child.ts");
  const redis = await startRedis("redis");
  const pids = {
    odgm: odgm.pid,
    h2: h2.child.pid,
    hono: hono.child.pid,
    redis: redis.child.pid,
  };

  // Data: object 1 and "o1" with one entry; 100 with 100 entries; 256 with 256.
  const data = grpcClient(odgm.ready[1] as string);
  await data.setValue({ ...base, objectId: 1n, keyStr: "k", value: VALUE });
  await data.setValue({ ...base, objectIdStr: "o1", keyStr: "k", value: VALUE });
  await data.batchSetValues({ ...base, objectId: 100n, values: entries(100) });
  await data.batchSetValues({ ...base, objectId: 256n, values: entries(256) });
  await redis.client.hset("h", "k", "abcdefghijklmnop");

  const timeoutMs = 10 * 60_000;
  const grpc =
    (
      rpc: string,
      file: string,
      dataCheck: H2loadRun["data"],
      port = odgmPort,
      inflight = INFLIGHT,
      connections = 1,
    ) =>
    (n: number, logFile: string | undefined) =>
      runH2load({
        port,
        path: rpc,
        body: file,
        n,
        connections,
        inflight,
        data: dataCheck,
        timeoutMs,
        ...(logFile === undefined ? {} : { logFile }),
      });
  const h1 =
    (port: number, urlPath: string, atLeast: number, put?: string) =>
    (n: number, logFile: string | undefined) =>
      runH2load({
        port,
        path: urlPath,
        n,
        connections: INFLIGHT,
        inflight: INFLIGHT,
        h1: true,
        data: { atLeast },
        timeoutMs,
        ...(put === undefined
          ? {}
          : { body: put, headers: [":method: PUT", "content-type: application/json"] }),
        ...(logFile === undefined ? {} : { logFile }),
      });
  const restPut = path.join(tmp, "rest-put.json");
  writeFileSync(restPut, JSON.stringify({ value: "abcdefghijklmnop" }));
  const empty = body("capabilities", CapabilitiesRequestSchema, {});
  const getValue = body("getvalue", SingleKeyRequestSchema, { ...base, objectId: 1n, keyStr: "k" });
  const getValueStr = body("getvalue-str", SingleKeyRequestSchema, {
    ...base,
    objectIdStr: "o1",
    keyStr: "k",
  });
  const getEntry256 = body("getvalue-256", SingleKeyRequestSchema, {
    ...base,
    objectId: 256n,
    keyStr: "k7",
  });
  const get100 = body("get-100", SingleObjectRequestSchema, { ...base, objectId: 100n });
  const get256 = body("get-256", SingleObjectRequestSchema, { ...base, objectId: 256n });
  const list100 = body("list-100", ListValuesRequestSchema, {
    ...base,
    objectId: 100n,
    limit: 100,
  });
  const setObject = body("set", SetObjectRequestSchema, {
    ...base,
    objectId: 7n,
    object: { entriesStr: { k: VALUE } },
  });
  const batch50 = body("batch-50", BatchSetValuesRequestSchema, {
    ...base,
    objectId: 8n,
    values: entries(50),
  });
  const odgmRpc = (
    key: string,
    label: string,
    method: string,
    file: string,
    check: H2loadRun["data"],
    inflight = INFLIGHT,
  ): Subject => ({
    key,
    label,
    server: "odgm",
    inflight,
    run: grpc(`/oprc.DataService/${method}`, file, check, odgmPort, inflight),
  });
  const subjects: Subject[] = [
    {
      key: "h2.empty",
      label: "raw node:http2, empty gRPC reply",
      server: "h2",
      inflight: INFLIGHT,
      run: grpc("/oprc.DataService/Capabilities", empty, { exact: 5 }, h2.port),
    },
    odgmRpc("grpc.Capabilities", "gRPC Capabilities (empty request)", "Capabilities", empty, {
      atLeast: 6,
    }),
    // The same two calls from 64 connections with one call in flight each, as bench:writes
    // and bench:cluster drive writes: what a connection costs Node's HTTP/2 per call.
    {
      key: "h2.empty.c64",
      label: `raw node:http2, empty gRPC reply, ${INFLIGHT} connections`,
      server: "h2",
      inflight: INFLIGHT,
      run: grpc("/oprc.DataService/Capabilities", empty, { exact: 5 }, h2.port, INFLIGHT, INFLIGHT),
    },
    {
      key: "grpc.Capabilities.c64",
      label: `gRPC Capabilities (empty request), ${INFLIGHT} connections`,
      server: "odgm",
      inflight: INFLIGHT,
      run: grpc(
        "/oprc.DataService/Capabilities",
        empty,
        { atLeast: 6 },
        odgmPort,
        INFLIGHT,
        INFLIGHT,
      ),
    },
    odgmRpc("grpc.GetValue", "gRPC GetValue, numeric id", "GetValue", getValue, { atLeast: 20 }),
    odgmRpc("grpc.GetValue.str", "gRPC GetValue, string id", "GetValue", getValueStr, {
      atLeast: 20,
    }),
    odgmRpc(
      "grpc.GetValue.256",
      "gRPC GetValue of one entry of a 256-entry object",
      "GetValue",
      getEntry256,
      { atLeast: 20 },
    ),
    odgmRpc("grpc.Get.100", "gRPC Get of a 100-entry object", "Get", get100, { atLeast: 2000 }),
    odgmRpc("grpc.Get.256", "gRPC Get of a 256-entry object", "Get", get256, { atLeast: 5120 }),
    odgmRpc("grpc.ListValues.100", "gRPC ListValues of 100 (stream)", "ListValues", list100, {
      atLeast: 2000,
    }),
    odgmRpc(
      "grpc.ListValues.100@1",
      "gRPC ListValues of 100, 1 in flight (whole stream)",
      "ListValues",
      list100,
      { atLeast: 2000 },
      1,
    ),
    odgmRpc("grpc.Set", "gRPC Set (SetObject, 1 entry, WAL synced)", "Set", setObject, {
      exact: 5,
    }),
    odgmRpc(
      "grpc.BatchSetValues.50",
      "gRPC BatchSetValues of 50 (WAL synced)",
      "BatchSetValues",
      batch50,
      { exact: 5 },
    ),
    {
      key: "rest.GET",
      label: "REST GET value, HTTP/1.1",
      server: "odgm",
      inflight: INFLIGHT,
      run: h1(odgmPort, `/api/class/${COLLECTION}/0/objects/1/values/k`, 10),
    },
    {
      key: "rest.PUT",
      label: "REST PUT value, HTTP/1.1 (WAL synced)",
      server: "odgm",
      inflight: INFLIGHT,
      run: h1(odgmPort, `/api/class/${COLLECTION}/0/objects/2/values/k`, 0, restPut),
    },
    {
      key: "hono.GET",
      label: "trivial Hono route, HTTP/1.1",
      server: "hono",
      inflight: INFLIGHT,
      run: h1(hono.port, "/", 2),
    },
    {
      key: "redis.HGET",
      label: "Redis HGET (redis-benchmark)",
      server: "redis",
      inflight: INFLIGHT,
      run: async (n) => {
        const out = await runTool(
          "redis-benchmark",
          [
            ...["-h", "127.0.0.1", "-p", String(redis.port), "-c", String(INFLIGHT)],
            ...["-n", String(n), "--csv", "hget", "h", "k"],
          ],
          { timeoutMs },
        );
        const r = parseRedisBenchmarkCsv(out.stdout);
        return { rps: r.rps, p50Us: r.p50Us, p99Us: r.p99Us };
      },
    },
  ];

  const samples = new Map<string, Sample[]>(subjects.map((s) => [s.key, []]));
  const logFile = path.join(tmp, "h2load.log");
  for (let round = 0; round < ROUNDS; round++) {
    for (const i of permutation(subjects.length, round)) {
      const s = subjects[i] as Subject;
      const n = s.inflight === 1 ? Math.max(200, Math.round(REQUESTS / 20)) : REQUESTS;
      await s.run(Math.max(64, Math.round(n / 10)), undefined); // warm-up
      const pid = pids[s.server];
      const cpu0 = processCpuUs(pid);
      const m = await s.run(n, s.server === "redis" ? undefined : logFile);
      const cpu = processCpuUs(pid) - cpu0;
      (samples.get(s.key) as Sample[]).push({ ...m, cpuUs: cpu / n });
      log(
        `round ${round + 1}/${ROUNDS} ${s.key}: ${fmt(m.rps)} req/s, p99 ${fmt(m.p99Us)} µs, ${fmt(cpu / n)} µs CPU/req`,
      );
    }
  }
  const loadEnd = os.loadavg();
  await Promise.all([odgm, h2.child, hono.child].map((c) => c.stop()));
  await redis.stop();

  const of = (key: string, f: (s: Sample) => number) => (samples.get(key) ?? []).map((s) => f(s));
  const med = (key: string, f: (s: Sample) => number): number => spread(of(key, f)).median;
  const rows = subjects.map((s) => [
    s.label,
    String(s.inflight),
    fmt(med(s.key, (x) => x.rps)),
    fmt(med(s.key, (x) => x.p50Us)),
    fmt(med(s.key, (x) => x.p99Us)),
    fmt(med(s.key, (x) => x.cpuUs)),
  ]);
  const r = (a: string, b: string, f: (s: Sample) => number): Spread =>
    pairedRatio(of(a, f), of(b, f));
  const rps = (s: Sample) => s.rps;
  const cpu = (s: Sample) => s.cpuUs;
  const budget = (what: string, s: Spread, goal: number, atMost: boolean): string[] => [
    what,
    fmtRatioSpread(s),
    `${atMost ? "≤" : "≥"} ${goal}×`,
    Number.isNaN(s.median)
      ? "not measured"
      : (atMost ? s.median <= goal : s.median >= goal)
        ? "met"
        : "not met",
  ];
  const list1 = spread(of("grpc.ListValues.100@1", (s) => s.p50Us));
  const perConnection = [
    ["raw node:http2, empty reply", "h2.empty.c64", "h2.empty"],
    ["odgm, Capabilities", "grpc.Capabilities.c64", "grpc.Capabilities"],
  ].map(([what, many, one]) => [
    what as string,
    fmtRatioSpread(r(many as string, one as string, cpu)),
    fmtRatioSpread(r(many as string, one as string, rps)),
  ]);
  const overRaw = [
    ["one connection", "grpc.Capabilities", "h2.empty"],
    [`${INFLIGHT} connections`, "grpc.Capabilities.c64", "h2.empty.c64"],
  ].map(([what, a, b]) => [
    what as string,
    fmtRatioSpread(r(a as string, b as string, cpu)),
    fmtRatioSpread(r(a as string, b as string, rps)),
  ]);
  const budgets = [
    budget(
      "gRPC GetValue req/s vs raw node:http2",
      r("grpc.GetValue", "h2.empty", rps),
      0.6,
      false,
    ),
    budget(
      "gRPC GetValue server CPU/request vs Redis HGET",
      r("grpc.GetValue", "redis.HGET", cpu),
      5,
      true,
    ),
    budget(
      "REST GET value req/s vs trivial Hono route",
      r("rest.GET", "hono.GET", rps),
      0.5,
      false,
    ),
    budget(
      "string-id vs numeric-id GetValue p99",
      r("grpc.GetValue.str", "grpc.GetValue", (s) => s.p99Us),
      1.15,
      true,
    ),
    budget(
      "GetValue on a 256-entry object vs Get of it, server CPU/request",
      r("grpc.GetValue.256", "grpc.Get.256", cpu),
      1.4,
      true,
    ),
    budget(
      "BatchSetValues(50) vs Set (1 entry), server CPU/request",
      r("grpc.BatchSetValues.50", "grpc.Set", cpu),
      2,
      true,
    ),
  ];
  const text = [
    "# Request paths at the server: h2load and redis-benchmark",
    "",
    `Command: \`${command}\` — ${ROUNDS} round(s) of ${REQUESTS} requests per subject (h2load: one HTTP/2 connection with ${INFLIGHT} streams in flight for gRPC unless a subject names ${INFLIGHT} connections (one call in flight on each), ${INFLIGHT} HTTP/1.1 connections for REST and Hono; redis-benchmark: ${INFLIGHT} connections), after a warm-up of a tenth as many; subjects in a fresh order each round; medians over rounds.`,
    `Machine: ${machine.cores} × ${machine.cpuModel}, Node ${machine.node}, load ${fmtLoad(machine.loadStart)} at the start, ${fmtLoad(loadEnd)} at the end. Date: ${new Date().toISOString().slice(0, 10)}.`,
    "",
    "Server CPU is the serving process's user+system time from `/proc/<pid>/stat` over the measured run, divided by its requests; the load generators are C programs in their own processes.",
    "",
    renderTable(
      ["subject", "in flight", "req/s", "p50 µs", "p99 µs", "server CPU µs/req"],
      rows,
      [1, 2, 3, 4, 5],
    ),
    "## Budgets (issue 16), same-run ratios: median (min–max) over rounds",
    "",
    renderTable(["budget", "measured", "goal", "verdict"], budgets),
    `## ${INFLIGHT} connections with one call each vs one connection with ${INFLIGHT} streams`,
    "",
    renderTable(["server", "CPU/request", "req/s"], perConnection),
    "odgm's Capabilities against the raw reply, by how the calls arrive:",
    "",
    renderTable(["calls over", "CPU/request", "req/s"], overRaw),
    `ListValues of 100 at 1 in flight: the whole stream takes ${fmt(list1.median)} µs at the median (p50 over requests; min–max over rounds ${fmt(list1.min)}–${fmt(list1.max)} µs), an upper bound of the time to its first message (budget ≤ 5 ms: ${list1.median <= 5000 ? "met" : "not met"}). h2load times whole responses, not first messages.`,
    "",
  ].join("\n");
  writeFileSync(outFile, text);
  process.stdout.write(text);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(`bench:reads failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    killAllChildren();
    process.exit(1);
  },
);
