// The write-path benchmark: odgm SetValue (real `odgm` bin, RocksDB, WAL synced) next to
// Redis HSET with `appendfsync always` and a one-member etcd Put, all driven by C load
// generators (h2load, redis-benchmark and c/grpc-load.c) so the figures are the servers',
// not a Node client's. Every round runs every subject once, in a fresh order, after the
// servers have gone idle; ratios are paired per round.
// Run: npx -y pnpm@10.34.9 bench:writes [-- --quick]   (from the repository root)
import { execFileSync } from "node:child_process";
import {
  closeSync,
  fdatasyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import http2 from "node:http2";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { Client } from "@connectrpc/connect";
import type { DataService } from "@oprc/grpc-api";
import { encodeEtcdPut, encodeSetKeyRequest, grpcFrame, writeBodyFile } from "./body-files.js";
import { grpcClient } from "./clients.js";
import { type EtcdInstance, startEtcd } from "./etcd.js";
import { parseCommandStats, parseGrpcLoad, parseRedisBenchmarkCsv } from "./generator-output.js";
import { runH2load } from "./h2load.js";
import { fmtLoad, machineInfo } from "./machine.js";
import type { Sample } from "./measure.js";
import { checkComm, odgmBin, odgmListing, odgmNodeFlags } from "./odgm-bin.js";
import { processCpuUs, reapedChildrenCpuUs } from "./proc-stat.js";
import { type Child, killAllChildren, rssBytes, startChild } from "./processes.js";
import { type RedisInstance, startRedis } from "./redis.js";
import { percentile, permutation } from "./stats.js";
import { buildGrpcLoad, ensureWritesTools, runTool, toolVersion } from "./system-tools.js";
import { fmt } from "./table.js";
import {
  buildWritesMarkdown,
  ratioLines,
  renderWritesTable,
  W,
  type WriteSubjectInfo,
} from "./writes-report.js";

const { values: args } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    quick: { type: "boolean", default: false },
    rounds: { type: "string" },
    "window-ms": { type: "string" },
    "warmup-ms": { type: "string" },
    connections: { type: "string" },
    only: { type: "string" },
    out: { type: "string" },
  },
  strict: true,
});

const quick = args.quick;
const ROUNDS = Number(args.rounds ?? (quick ? 1 : 5));
const WINDOW_MS = Number(args["window-ms"] ?? (quick ? 1000 : 3000));
const WARMUP_MS = Number(args["warmup-ms"] ?? (quick ? 200 : 500));
const INFLIGHT = 64;
const CONNECTIONS = Number(args.connections ?? 64);
const DISTINCT = 10_000;
if (!(ROUNDS >= 1 && WINDOW_MS >= 100 && WARMUP_MS >= 0))
  throw new Error("bad --rounds/--window-ms/--warmup-ms");
if (!(CONNECTIONS >= 1 && INFLIGHT % CONNECTIONS === 0))
  throw new Error(`--connections must divide ${INFLIGHT} (requests in flight)`);

const PKG = fileURLToPath(new URL("..", import.meta.url));
const REPO = path.resolve(PKG, "..", "..");
const outFile = args.out ?? path.join(PKG, quick ? "RESULTS-writes.quick.md" : "RESULTS-writes.md");
const started = Date.now();

const COLLECTION = "bench";
const HOT_OBJECT = 1n;
const FIRST_DISTINCT = 1_000_001n;
const KEY = "f0";
/** 16 bytes, printable so redis-benchmark can take it as an argument; the same bytes everywhere. */
const VALUE = new TextEncoder().encode("abcdefghijklmnop");
const ETCD_HOT = "hot";
const etcdKey = (i: number): string => `k/${String(i).padStart(5, "0")}`;

// Hard bound on the whole run.
const watchdogMs = (quick ? 10 : 60) * 60_000;
setTimeout(() => {
  process.stderr.write(`bench:writes: gave up after ${watchdogMs / 60_000} min\n`);
  killAllChildren();
  cleanup();
  process.exit(3);
}, watchdogMs).unref();

const tmp = mkdtempSync(path.join(os.tmpdir(), "odgm-bench-writes-"));
function cleanup(): void {
  rmSync(tmp, { recursive: true, force: true });
}
process.on("exit", cleanup);

function log(msg: string): void {
  const t = ((Date.now() - started) / 1000).toFixed(0).padStart(4);
  process.stdout.write(`[${t}s] ${msg}\n`);
}

// ------------------------------------------------------------------------------ odgm

async function startOdgm(dataDir: string): Promise<{ child: Child; url: string; port: number }> {
  const child = await startChild({
    name: "odgm",
    // The real node binary (process.execPath), not node_modules/.bin/node (a shell wrapper
    // whose pid would not be the server's).
    command: process.execPath,
    args: [...odgmNodeFlags(), odgmBin()],
    env: {
      ODGM_DATA_DIR: dataDir,
      ODGM_HTTP_HOST: "127.0.0.1",
      ODGM_HTTP_PORT: "0",
      ODGM_SYNC_WRITES: "true",
      ODGM_LOG_LEVEL: "info",
      ODGM_COLLECTION: JSON.stringify([{ name: COLLECTION, partitionCount: 1 }]),
    },
    ready: /"url":"(http:\/\/127\.0\.0\.1:(\d+))"/,
  });
  return { child, url: child.ready[1] as string, port: Number(child.ready[2]) };
}

/**
 * The transport's ceiling: a raw `node:http2` server (children/h2-grpc-child.ts) answering
 * every call with an empty gRPC reply, on the same Node as odgm. `served` asks it how many
 * calls it answered.
 */
async function startH2Ceiling(): Promise<{
  child: Child;
  port: number;
  served: () => Promise<number>;
}> {
  const child = await startChild({
    name: "h2-grpc",
    command: process.execPath,
    args: [
      "--experimental-strip-types",
      "--no-warnings",
      fileURLToPath(new URL("./children/h2-grpc-child.ts", import.meta.url)),
    ],
    ready: /BENCH_READY (\d+)/,
  });
  const port = Number(child.ready[1]);
  const served = (): Promise<number> =>
    new Promise((resolve, reject) => {
      const session = http2.connect(`http://127.0.0.1:${port}`);
      session.on("error", reject);
      const req = session.request({ ":method": "GET", ":path": "/count" });
      let text = "";
      req.setEncoding("utf8");
      req.on("data", (d: string) => {
        text += d;
      });
      req.on("end", () => {
        session.close();
        resolve(Number(text));
      });
      req.on("error", reject);
      req.end();
    });
  return { child, port, served };
}

async function odgmVersion(c: Client<typeof DataService>, objectId: bigint): Promise<number> {
  const r = await c.getValue({ clsId: COLLECTION, partitionId: 0, objectId, keyStr: KEY });
  return Number(r.objectVersion ?? 0n);
}

// --------------------------------------------------------------------------- subjects

interface WriteSubject extends WriteSubjectInfo {
  /** Server process whose CPU and RSS are charged. */
  readonly pid: number;
  /** Warm-up + measured window + checks against the server's state; throws on any failure. */
  run(): Promise<Sample>;
}

/** Successful writes the generators saw, per server pid, over the whole run (end-state check). */
const acked = new Map<number, number>();
function ack(pid: number, n: number): void {
  acked.set(pid, (acked.get(pid) ?? 0) + n);
}

/** Last measured req/s per subject: sizes the next count-based run (h2load, redis-benchmark). */
const lastRps = new Map<string, number>();
const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));
const toolTimeout = (): number => Math.max(60_000, 20 * (WARMUP_MS + WINDOW_MS));

function counts(id: string): { warm: number; main: number } {
  const est = lastRps.get(id);
  const floor = 4 * INFLIGHT;
  if (est === undefined) return { warm: 512, main: Number.NaN };
  return {
    warm: Math.round(clamp((est * WARMUP_MS) / 1000, floor, 2_000_000)),
    main: Math.round(clamp((est * WINDOW_MS) / 1000, Math.max(1000, floor), 5_000_000)),
  };
}

function cpuPerReq(us: number, n: number): number {
  return n > 0 ? us / n : Number.NaN;
}

/** A count-based run (h2load, redis-benchmark): warm-up run, measured run, counter check. */
async function countBased(o: {
  id: string;
  pid: number;
  counter: () => Promise<number>;
  /** One run of `n` requests; `measured` runs also return latency. */
  go: (n: number, measured: boolean) => Promise<{ rps: number; p50Us: number; p99Us: number }>;
}): Promise<Sample> {
  const c0 = await o.counter();
  let { warm, main } = counts(o.id);
  const w = await o.go(warm, false);
  if (!Number.isFinite(main)) {
    lastRps.set(o.id, w.rps);
    main = counts(o.id).main;
  }
  const cpu0 = processCpuUs(o.pid);
  const cc0 = reapedChildrenCpuUs();
  const r = await o.go(main, true);
  const cc1 = reapedChildrenCpuUs();
  const cpu1 = processCpuUs(o.pid);
  const c1 = await o.counter();
  ack(o.pid, warm + main);
  if (c1 - c0 !== warm + main)
    throw new Error(`server counted ${c1 - c0} writes, the generator ${warm + main} successes`);
  lastRps.set(o.id, r.rps);
  return {
    rps: r.rps,
    p50Us: r.p50Us,
    p99Us: r.p99Us,
    cpuUsPerReq: cpuPerReq(cpu1 - cpu0, main),
    clientCpuUsPerReq: cpuPerReq(cc1 - cc0, main),
    rssBytes: rssBytes(o.pid),
    requests: main,
    errors: 0,
  };
}

/** An h2load run at INFLIGHT over `connections`, logged when measured. */
function h2load(o: {
  port: number;
  path: string;
  body: string;
  n: number;
  connections: number;
  /** Bytes of response DATA per request: exactly (odgm's empty reply: 5) or at least. */
  data: { exact: number } | { atLeast: number };
  measured: boolean;
}): Promise<{ rps: number; p50Us: number; p99Us: number }> {
  return runH2load({
    ...o,
    inflight: INFLIGHT,
    timeoutMs: toolTimeout(),
    ...(o.measured ? { logFile: path.join(tmp, "h2load.log") } : {}),
  });
}

/** A grpc-load run: timed window, grpc-status of every answer checked, then the counter. */
async function grpcLoadRun(o: {
  bin: string;
  pid: number;
  port: number;
  path: string;
  body: string;
  counter: () => Promise<number>;
}): Promise<Sample> {
  const c0 = await o.counter();
  let cpuA = Number.NaN;
  let cpuB = Number.NaN;
  const cc0 = reapedChildrenCpuUs();
  const out = await runTool(
    o.bin,
    [
      "--port",
      String(o.port),
      "--path",
      o.path,
      "--bodies",
      o.body,
      "--connections",
      String(CONNECTIONS),
      "--inflight",
      String(INFLIGHT),
      "--warmup-ms",
      String(WARMUP_MS),
      "--duration-ms",
      String(WINDOW_MS),
    ],
    {
      timeoutMs: toolTimeout(),
      onLine: (l) => {
        if (l === "window-start") cpuA = processCpuUs(o.pid);
        else if (l === "window-end") cpuB = processCpuUs(o.pid);
      },
    },
  );
  const cc1 = reapedChildrenCpuUs();
  const r = parseGrpcLoad(out.stdout);
  ack(o.pid, r.ok_total);
  if (r.err_total > 0 || r.incomplete > 0 || r.window_ok === 0)
    throw new Error(
      `grpc-load: ${r.ok_total} ok, ${r.err_total} failed (${r.grpc_err} gRPC, ${r.http_err} HTTP, ${r.stream_err} reset), ${r.incomplete} unanswered; first: ${r.first_error}`,
    );
  const c1 = await o.counter();
  if (c1 - c0 !== r.ok_total)
    throw new Error(`server counted ${c1 - c0} writes, grpc-load ${r.ok_total} successes`);
  return {
    rps: r.rps,
    p50Us: r.p50_us,
    p99Us: r.p99_us,
    cpuUsPerReq: cpuPerReq(cpuB - cpuA, r.window_ok),
    clientCpuUsPerReq: cpuPerReq(cc1 - cc0, r.ok_total),
    rssBytes: rssBytes(o.pid),
    requests: r.window_ok,
    errors: 0,
  };
}

/**
 * Writes `n` requests of a body file once each (grpc-load `--max-requests`), before anything
 * is measured: every distinct object or key exists, so measured writes are all updates.
 */
async function prefill(o: {
  bin: string;
  pid: number;
  port: number;
  path: string;
  body: string;
  n: number;
}): Promise<void> {
  const out = await runTool(
    o.bin,
    [
      "--port",
      String(o.port),
      "--path",
      o.path,
      "--bodies",
      o.body,
      "--connections",
      String(CONNECTIONS),
      "--inflight",
      String(INFLIGHT),
      "--warmup-ms",
      "0",
      "--duration-ms",
      "600000",
      "--max-requests",
      String(o.n),
    ],
    { timeoutMs: 600_000 },
  );
  const r = parseGrpcLoad(out.stdout);
  ack(o.pid, r.ok_total);
  if (r.ok_total !== o.n || r.err_total > 0)
    throw new Error(`prefill of ${o.path}: ${r.ok_total}/${o.n} ok; first error: ${r.first_error}`);
}

async function redisHset(
  redis: RedisInstance,
  key: string,
  n: number,
  random: boolean,
): Promise<{ rps: number; p50Us: number; p99Us: number }> {
  const out = await runTool(
    "redis-benchmark",
    [
      "-h",
      "127.0.0.1",
      "-p",
      String(redis.port),
      "-c",
      String(CONNECTIONS),
      "-P",
      "1",
      "-n",
      String(n),
      ...(random ? ["-r", String(DISTINCT)] : []),
      "--csv",
      "hset",
      key,
      KEY,
      new TextDecoder().decode(VALUE),
    ],
    { timeoutMs: toolTimeout() },
  );
  return parseRedisBenchmarkCsv(out.stdout);
}

async function redisHsetCalls(redis: RedisInstance): Promise<number> {
  const s = parseCommandStats(await redis.client.info("commandstats"), "hset");
  if (s.failedCalls > 0 || s.rejectedCalls > 0)
    throw new Error(`redis: ${s.failedCalls} failed / ${s.rejectedCalls} rejected HSET calls`);
  return s.calls;
}

/**
 * Waits (up to 5 s) until every server is idle — less than 5% of a core over 200 ms — so
 * one subject's after-effects (RocksDB flushing memtables, etcd snapshotting) are not
 * charged to the next one.
 */
async function settle(pids: readonly number[], say: (msg: string) => void): Promise<void> {
  const total = (): number => pids.reduce((a, p) => a + processCpuUs(p), 0);
  const deadline = Date.now() + 5000;
  let busy = 0;
  while (Date.now() < deadline) {
    const a = total();
    await new Promise((r) => setTimeout(r, 200));
    busy = (total() - a) / 200_000;
    if (busy < 0.05) return;
  }
  say(`  (servers still busy after 5 s: ${(busy * 100).toFixed(0)}% of a core; measuring anyway)`);
}

/** Median µs of 100 × (write 4 KiB + fdatasync) in `dir`: what one durable write costs on this disk. */
function fsyncProbeUs(dir: string): number {
  const file = path.join(dir, "fsync-probe");
  const fd = openSync(file, "w");
  const buf = Buffer.alloc(4096, 7);
  const us: number[] = [];
  try {
    for (let i = 0; i < 100; i++) {
      const t = performance.now();
      writeSync(fd, buf, 0, buf.length, 0);
      fdatasyncSync(fd);
      us.push((performance.now() - t) * 1000);
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  return percentile(us, 50);
}

function dfType(dir: string): string {
  try {
    const line =
      execFileSync("df", ["-T", dir], { encoding: "utf8" }).trim().split("\n").at(-1) ?? "";
    const [dev, type] = line.split(/\s+/);
    return `${type} (${dev})`;
  } catch {
    return "?";
  }
}

// -------------------------------------------------------------------------------- run

async function main(): Promise<void> {
  const machine = machineInfo();
  log(
    `bench:writes: ${ROUNDS} round(s), ${WARMUP_MS} ms warm-up + ${WINDOW_MS} ms per measurement, ${INFLIGHT} in flight over ${CONNECTIONS} connection(s); temp dir ${tmp}`,
  );
  ensureWritesTools(log);
  const grpcLoad = buildGrpcLoad(tmp);
  const bin = odgmBin();

  // Body files, encoded before anything is timed.
  const bodies = path.join(tmp, "bodies");
  mkdirSync(bodies);
  const odgmOne = path.join(bodies, "odgm-one.bin");
  const odgmMany = path.join(bodies, "odgm-10k.bin");
  const etcdOne = path.join(bodies, "etcd-one.bin");
  const etcdMany = path.join(bodies, "etcd-10k.bin");
  const setValue = (objectId: bigint): Uint8Array =>
    grpcFrame(
      encodeSetKeyRequest({
        collection: COLLECTION,
        partition: 0,
        objectId,
        key: KEY,
        value: VALUE,
      }),
    );
  writeBodyFile(odgmOne, [setValue(HOT_OBJECT)]);
  writeBodyFile(
    odgmMany,
    Array.from({ length: DISTINCT }, (_, i) => setValue(FIRST_DISTINCT + BigInt(i))),
  );
  const enc = new TextEncoder();
  writeBodyFile(etcdOne, [grpcFrame(encodeEtcdPut(enc.encode(ETCD_HOT), VALUE))]);
  writeBodyFile(
    etcdMany,
    Array.from({ length: DISTINCT }, (_, i) =>
      grpcFrame(encodeEtcdPut(enc.encode(etcdKey(i)), VALUE)),
    ),
  );

  const stops: (() => Promise<void>)[] = [];
  try {
    const odgmDir = path.join(tmp, "odgm");
    const redisDir = path.join(tmp, "redis");
    const etcdDir = path.join(tmp, "etcd");
    for (const d of [odgmDir, redisDir, etcdDir]) mkdirSync(d);
    const odgm = await startOdgm(odgmDir);
    stops.push(() => odgm.child.stop());
    checkComm(odgm.child.pid, "node");
    log(`odgm ${bin} pid ${odgm.child.pid} at ${odgm.url}`);
    const redis = await startRedis("redis-aof", { aofDir: redisDir });
    stops.push(() => redis.stop());
    checkComm(redis.child.pid, "redis-server");
    const aof = (await redis.client.config("GET", "appendfsync")) as string[];
    log(
      `redis-server pid ${redis.child.pid} port ${redis.port} (appendonly yes, ${aof.join(" ")})`,
    );
    const etcd: EtcdInstance = await startEtcd("etcd", etcdDir);
    stops.push(() => etcd.stop());
    checkComm(etcd.child.pid, "etcd");
    log(`etcd pid ${etcd.child.pid} client port ${etcd.port}`);
    const h2 = await startH2Ceiling();
    stops.push(() => h2.child.stop());
    checkComm(h2.child.pid, "node");
    log(`raw node:http2 server pid ${h2.child.pid} port ${h2.port}`);

    // A real gRPC client (connect-node) for the checks: one call through it first.
    const client = grpcClient(odgm.url);
    await client.setValue({
      clsId: COLLECTION,
      partitionId: 0,
      objectIdStr: "probe",
      keyStr: KEY,
      value: { data: VALUE },
    });
    const probe = await client.getValue({
      clsId: COLLECTION,
      partitionId: 0,
      objectIdStr: "probe",
      keyStr: KEY,
    });
    if (probe.objectVersion !== 1n) throw new Error("odgm probe write did not read back");
    await client.delete({ clsId: COLLECTION, partitionId: 0, objectIdStr: "probe" });

    const etcdRev0 = await etcd.revision();

    // Every object and key exists before the first measurement (writes are updates).
    log(`prefilling ${DISTINCT} odgm objects, etcd keys and Redis keys (and each hot one)`);
    const odgmAt = {
      bin: grpcLoad,
      pid: odgm.child.pid,
      port: odgm.port,
      path: "/oprc.DataService/SetValue",
    };
    const etcdAt = {
      bin: grpcLoad,
      pid: etcd.child.pid,
      port: etcd.port,
      path: "/etcdserverpb.KV/Put",
    };
    await prefill({ ...odgmAt, body: odgmMany, n: DISTINCT });
    await prefill({ ...odgmAt, body: odgmOne, n: 1 });
    await prefill({ ...etcdAt, body: etcdMany, n: DISTINCT });
    await prefill({ ...etcdAt, body: etcdOne, n: 1 });
    const pipe = redis.client.pipeline();
    // redis-benchmark -r writes __rand_int__ as 12 zero-padded digits.
    for (let i = 0; i < DISTINCT; i++)
      pipe.hset(`h:${String(i).padStart(12, "0")}`, KEY, Buffer.from(VALUE));
    pipe.hset("h:hot", KEY, Buffer.from(VALUE));
    await pipe.exec();
    ack(redis.child.pid, DISTINCT + 1);
    const listing = async (): Promise<number> => (await odgmListing(client, COLLECTION)).versionSum;
    const hot = (): Promise<number> => odgmVersion(client, HOT_OBJECT);

    const h2c = (c: number): string => `h2load -c ${c} -m ${INFLIGHT / c}`;
    const gl = `grpc-load -c ${CONNECTIONS} (${INFLIGHT} in flight)`;
    const subjects: WriteSubject[] = [
      {
        id: W.odgmOne,
        server: "odgm SetValue",
        generator: h2c(CONNECTIONS),
        target: "one object (same key)",
        pid: odgm.child.pid,
        run: () =>
          countBased({
            id: W.odgmOne,
            pid: odgm.child.pid,
            counter: hot,
            go: (n, measured) =>
              h2load({
                port: odgm.port,
                path: "/oprc.DataService/SetValue",
                body: odgmOne,
                n,
                connections: CONNECTIONS,
                data: { exact: 5 },
                measured,
              }),
          }),
      },
      {
        id: W.odgmMany,
        server: "odgm SetValue",
        generator: gl,
        target: `${DISTINCT} objects`,
        pid: odgm.child.pid,
        run: () =>
          grpcLoadRun({
            bin: grpcLoad,
            pid: odgm.child.pid,
            port: odgm.port,
            path: "/oprc.DataService/SetValue",
            body: odgmMany,
            counter: listing,
          }),
      },
      {
        id: W.odgmOneGl,
        server: "odgm SetValue",
        generator: gl,
        target: "one object (cross-check)",
        pid: odgm.child.pid,
        run: () =>
          grpcLoadRun({
            bin: grpcLoad,
            pid: odgm.child.pid,
            port: odgm.port,
            path: "/oprc.DataService/SetValue",
            body: odgmOne,
            counter: hot,
          }),
      },
      {
        id: W.odgmOneConn,
        server: "odgm SetValue",
        generator: h2c(1),
        target: "one object, one connection",
        pid: odgm.child.pid,
        run: () =>
          countBased({
            id: W.odgmOneConn,
            pid: odgm.child.pid,
            counter: hot,
            go: (n, measured) =>
              h2load({
                port: odgm.port,
                path: "/oprc.DataService/SetValue",
                body: odgmOne,
                n,
                connections: 1,
                data: { exact: 5 },
                measured,
              }),
          }),
      },
      {
        id: W.redisOne,
        server: "Redis HSET (AOF fsync always)",
        generator: `redis-benchmark -c ${CONNECTIONS} -P 1`,
        target: "one key",
        pid: redis.child.pid,
        run: () =>
          countBased({
            id: W.redisOne,
            pid: redis.child.pid,
            counter: () => redisHsetCalls(redis),
            go: (n) => redisHset(redis, "h:hot", n, false),
          }),
      },
      {
        id: W.redisMany,
        server: "Redis HSET (AOF fsync always)",
        generator: `redis-benchmark -c ${CONNECTIONS} -P 1 -r ${DISTINCT}`,
        target: `${DISTINCT} keys (random)`,
        pid: redis.child.pid,
        run: () =>
          countBased({
            id: W.redisMany,
            pid: redis.child.pid,
            counter: () => redisHsetCalls(redis),
            go: (n) => redisHset(redis, "h:__rand_int__", n, true),
          }),
      },
      {
        id: W.etcdOne,
        server: "etcd Put",
        generator: h2c(CONNECTIONS),
        target: "one key",
        pid: etcd.child.pid,
        run: () =>
          countBased({
            id: W.etcdOne,
            pid: etcd.child.pid,
            counter: () => etcd.revision(),
            go: (n, measured) =>
              h2load({
                port: etcd.port,
                path: "/etcdserverpb.KV/Put",
                body: etcdOne,
                n,
                connections: CONNECTIONS,
                data: { atLeast: 5 },
                measured,
              }),
          }),
      },
      {
        id: W.etcdMany,
        server: "etcd Put",
        generator: gl,
        target: `${DISTINCT} keys`,
        pid: etcd.child.pid,
        run: () =>
          grpcLoadRun({
            bin: grpcLoad,
            pid: etcd.child.pid,
            port: etcd.port,
            path: "/etcdserverpb.KV/Put",
            body: etcdMany,
            counter: () => etcd.revision(),
          }),
      },
      {
        id: W.etcdOneGl,
        server: "etcd Put",
        generator: gl,
        target: "one key (cross-check)",
        pid: etcd.child.pid,
        run: () =>
          grpcLoadRun({
            bin: grpcLoad,
            pid: etcd.child.pid,
            port: etcd.port,
            path: "/etcdserverpb.KV/Put",
            body: etcdOne,
            counter: () => etcd.revision(),
          }),
      },
      {
        id: W.h2Empty,
        server: "raw node:http2 (no storage)",
        generator: gl,
        target: "gRPC-framed empty reply: the transport's ceiling",
        pid: h2.child.pid,
        run: () =>
          grpcLoadRun({
            bin: grpcLoad,
            pid: h2.child.pid,
            port: h2.port,
            path: "/oprc.DataService/SetValue",
            body: odgmMany,
            counter: h2.served,
          }),
      },
    ];
    const fsyncUs = fsyncProbeUs(tmp);
    log(`this disk: 4 KiB write + fdatasync, median ${fmt(fsyncUs)} µs`);
    const servers = [odgm.child.pid, redis.child.pid, etcd.child.pid];
    const only = args.only === undefined ? undefined : new RegExp(args.only);
    const runs = subjects.filter((s) => only === undefined || only.test(s.id));
    if (runs.length === 0) throw new Error(`--only ${args.only} matches no subject`);

    const results = new Map<string, (Sample | undefined)[]>();
    const failures: string[] = [];
    const roundLoad: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      roundLoad.push(os.loadavg()[0] ?? Number.NaN);
      const order = permutation(runs.length, r);
      for (let i = 0; i < runs.length; i++) {
        const s = runs[order[i] as number] as WriteSubject;
        await settle(servers, log);
        let list = results.get(s.id);
        if (list === undefined) {
          list = Array.from({ length: ROUNDS }, () => undefined);
          results.set(s.id, list);
        }
        try {
          const sample = await s.run();
          list[r] = sample;
          log(
            `round ${r + 1}/${ROUNDS} ${s.id.padEnd(28)} ${fmt(sample.rps).padStart(8)} req/s  p50 ${fmt(sample.p50Us / 1000).padStart(6)} ms  p99 ${fmt(sample.p99Us / 1000).padStart(6)} ms  server ${fmt(sample.cpuUsPerReq).padStart(5)} µs/req  client ${fmt(sample.clientCpuUsPerReq).padStart(5)} µs/req`,
          );
        } catch (err) {
          const msg = `round ${r + 1} ${s.id}: FAILED ${(err as Error).message}`;
          log(msg);
          failures.push(msg);
          // A subject that cannot run at all is a broken harness, not noise: stop.
          if (r === 0) throw err;
        }
      }
    }

    // The end state of every server, against what the generators saw succeed.
    const checks: string[] = [];
    const list = await odgmListing(client, COLLECTION);
    const stats = await client.stats({});
    const live = stats.shards.reduce((a, s) => a + Number(s.count), 0);
    const hotVersion = await hot();
    const wantObjects = DISTINCT + 1;
    const odgmAcked = acked.get(odgm.child.pid) ?? 0;
    const objOk =
      list.count === wantObjects && live === wantObjects && list.versionSum === odgmAcked;
    if (!objOk) failures.push("odgm end state mismatch");
    checks.push(
      `odgm: ListObjects lists ${list.count} live objects and Stats counts ${live} (expected ${wantObjects}: the hot object + ${DISTINCT} distinct); the sum of their versions is ${list.versionSum} (hot object ${hotVersion}) against ${odgmAcked} successful SetValue calls seen by the generators, prefill included — ${objOk ? "ok" : "MISMATCH"}`,
    );
    checks.push(
      "odgm, per measurement: the hot object's version (GetValue through connect-node) rose by exactly the number of h2load/grpc-load successes; for the 10k subject the sum of all object versions (ListObjects) did; h2load runs also had every status 2xx and exactly 5 response DATA bytes per request (an empty SetValue reply; a gRPC error is a trailers-only answer without DATA); grpc-load checks `grpc-status: 0` on every answer",
    );
    {
      const n = await etcd.countPrefix("k/");
      const puts = (await etcd.revision()) - etcdRev0;
      const want = acked.get(etcd.child.pid) ?? 0;
      const ok = n === DISTINCT && puts === want;
      if (!ok) failures.push("etcd end state mismatch");
      checks.push(
        `etcd: ${n} keys under k/ (expected ${DISTINCT}); the revision rose by ${puts} against ${want} successful Puts seen by the generators, prefill included — ${ok ? "ok" : "MISMATCH"}; per measurement the revision rose by exactly the successes`,
      );
    }
    {
      const size = await redis.client.dbsize();
      const calls = await redisHsetCalls(redis);
      const want = acked.get(redis.child.pid) ?? 0;
      const ok = size === DISTINCT + 1 && calls === want;
      if (!ok) failures.push("redis end state mismatch");
      checks.push(
        `Redis: ${size} keys (expected ${DISTINCT + 1}: the hot key + the ${DISTINCT} \`h:__rand_int__\` keys of -r ${DISTINCT}); ${calls} HSET calls, 0 failed or rejected, against ${want} requests completed (prefill included) — ${ok ? "ok" : "MISMATCH"}; per measurement \`cmdstat_hset\` calls rose by exactly the requests redis-benchmark sent`,
      );
    }
    for (const f of failures) checks.push(`FAILED: ${f}`);

    const info = {
      command: `npx -y pnpm@10.34.9 bench:writes${process.argv
        .slice(2)
        .filter((a) => a !== "--")
        .map((a) => ` ${/^[\w@.=/:-]+$/.test(a) ? a : `'${a}'`}`)
        .join("")
        .replace(/^ /, " -- ")}`,
      date: new Date(started).toISOString(),
      machine,
      loadEnd: os.loadavg(),
      roundLoad,
      dataFs: `${dfType(tmp)}; 4 KiB write + fdatasync: median ${fmt(fsyncUs)} µs (100 before round 1)`,
      rounds: ROUNDS,
      warmupMs: WARMUP_MS,
      windowMs: WINDOW_MS,
      inflight: INFLIGHT,
      connections: CONNECTIONS,
      distinct: DISTINCT,
      versions: [
        `odgm ${JSON.parse(readFileSync(path.join(REPO, "apps", "odgm", "package.json"), "utf8")).version} (dist) on node ${process.version}`,
        toolVersion("redis-server"),
        toolVersion("etcd"),
        toolVersion("h2load"),
        `grpc-load (c/grpc-load.c, ${toolVersion("gcc")}, libnghttp2)`,
      ],
      checks,
      totalSeconds: (Date.now() - started) / 1000,
      only: args.only,
    };
    const shown = subjects.filter((s) => results.has(s.id));
    writeFileSync(outFile, buildWritesMarkdown(info, shown, results));
    process.stdout.write(`\n${renderWritesTable(shown, results)}\n`);
    for (const l of ratioLines(results)) process.stdout.write(`${l}\n`);
    process.stdout.write("\n");
    for (const c of checks) process.stdout.write(`- ${c}\n`);
    log(`wrote ${outFile} (load average now ${fmtLoad(info.loadEnd)})`);
    if (failures.length > 0) process.exitCode = 1;
  } finally {
    for (const s of stops.reverse()) await s().catch(() => {});
    killAllChildren();
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (err: unknown) => {
    process.stderr.write(
      `bench:writes failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    killAllChildren();
    cleanup();
    process.exit(1);
  },
);
