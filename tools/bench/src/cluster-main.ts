// bench:cluster — durable writes to a three-node ODGM cluster (one Raft-replicated
// partition, three replicas) next to a three-member etcd 3.4 cluster, both on loopback and
// driven by the same C load generator (grpc-load) at 1 and 64 requests in flight, in the
// same run; plus one odgm node serving a `basic` collection next to a one-replica `raft`
// collection (what Raft itself costs on one node), and a sharded raft collection (three
// partitions, each led by another node) written by a partition-aware client. Every
// server writes durably (odgm: WAL synced, Raft log synced; etcd: WAL fsync). Load goes to
// the group's leader (etcd: its leader) unless the subject says otherwise; server CPU is
// the sum over every member's process (utime + stime from /proc) in the measured window,
// per successful write.
// Every round runs every subject once, in a fresh order. Each measurement is checked:
// odgm's object versions (etcd's revision) rose by exactly the successes the generator saw.
// `--other <checkout>` adds a second three-node cluster built from another checkout, as
// subjects of the same rounds: two builds compared in one run.
import { execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs, promisify } from "node:util";
import type { Client } from "@connectrpc/connect";
import type { DataService } from "@oprc/grpc-api";
import { encodeEtcdPut, encodeSetKeyRequest, grpcFrame, writeBodyFile } from "./body-files.js";
import { grpcClient } from "./clients.js";
import { parseGrpcLoad } from "./generator-output.js";
import { fmtLoad, machineInfo } from "./machine.js";
import { checkComm, clusterMemberEnv, odgmBin, odgmListing, odgmNodeFlags } from "./odgm-bin.js";
import {
  idlePercent,
  type MachineCpu,
  machineCpu,
  processCpuUs,
  type ThreadCpu,
  type ThreadCpuRow,
  threadCpu,
  threadCpuDelta,
} from "./proc-stat.js";
import { type Child, killAllChildren, startChild } from "./processes.js";
import { freePort } from "./redis.js";
import { meanInterval, pairedRatios, percentile, permutation, spread } from "./stats.js";
import { buildGrpcLoad, ensureWritesTools, runTool, toolVersion } from "./system-tools.js";

const run = promisify(execFile);
const { values: args } = parseArgs({
  // `pnpm bench:cluster -- --quick` passes the `--` through.
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    quick: { type: "boolean", default: false },
    rounds: { type: "string" },
    // Unrecorded rounds before the first recorded one (the first round after the prefill
    // ran slower than the later ones in 17 of 20 runs, 2026-11-26; with one unrecorded
    // round, V8's compiler threads still took 9-15 % of the first recorded window's samples
    // and 1-4 % of later ones, 2026-11-27).
    "warmup-rounds": { type: "string" },
    "window-ms": { type: "string" },
    out: { type: "string" },
    // Profiling aids: run only these subjects (comma-separated ids), and write V8 CPU
    // profiles of the three-node cluster's members into a directory (`node --cpu-prof`).
    only: { type: "string" },
    "cpu-prof": { type: "string" },
    // Linux `perf record` of the measured processes during each measured window only (not
    // the prefill), into a directory; odgm runs with `--perf-basic-prof` so JavaScript
    // frames have names. Read with `perf report -i FILE --sort pid,sym` (perf's `pid` key is
    // per thread, shown as tid:comm; perf 6.1 has no `tid` key).
    perf: { type: "string" },
    // Another checkout (built: apps/odgm/dist) to run as a second three-node cluster, the
    // subjects odgm3-other/1 and odgm3-other/64, interleaved with the others in every round.
    other: { type: "string" },
    // Extra Node flags for every odgm process (space-separated), e.g. GC settings to compare.
    "node-flags": { type: "string" },
    // What serves odgm's cleartext HTTP/2 (ODGM_H2C_ENGINE: lean, the default, or node).
    "h2c-engine": { type: "string" },
    // Where each member's CPU went in every window: µs per write by thread name, user/system,
    // and the µs its threads were runnable but waited for a CPU (run queue).
    threads: { type: "boolean", default: false },
    // How many objects (etcd: keys) the writes are spread over; 1 is one hot object.
    objects: { type: "string" },
  },
  strict: true,
});
const quick = args.quick;
const ROUNDS = Number(args.rounds ?? (quick ? 1 : 5));
const WARMUP_ROUNDS = Number(args["warmup-rounds"] ?? (quick ? 0 : 2));
const WINDOW_MS = Number(args["window-ms"] ?? (quick ? 1000 : 3000));
const WARMUP_MS = quick ? 200 : 500;
const DISTINCT = Number(args.objects ?? 10_000);
const KEY = "f0";
/** Partitions of the sharded collection: one led by each node. */
const SHARDS = 3;
/** Requests in flight to partition `p`'s leader: 64 in all (22, 21, 21). */
const inflightOf = (p: number): number => Math.floor(64 / SHARDS) + (p < 64 % SHARDS ? 1 : 0);
const VALUE = new TextEncoder().encode("abcdefghijklmnop");
const PKG = fileURLToPath(new URL("..", import.meta.url));
const outFile =
  args.out ?? path.join(PKG, quick ? "RESULTS-cluster.quick.md" : "RESULTS-cluster.md");
if (!(ROUNDS >= 1 && WARMUP_ROUNDS >= 0 && WINDOW_MS >= 100))
  throw new Error("bad --rounds/--warmup-rounds/--window-ms");
if (!(Number.isInteger(DISTINCT) && DISTINCT >= 1)) throw new Error("bad --objects");

const started = Date.now();
const tmp = mkdtempSync(path.join(os.tmpdir(), "odgm-bench-cluster-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
if (args.perf !== undefined) mkdirSync(args.perf, { recursive: true });
setTimeout(
  () => {
    process.stderr.write("bench:cluster: gave up after the watchdog's limit\n");
    killAllChildren();
    process.exit(3);
  },
  (quick ? 10 : 40) * 60_000,
).unref();

function log(msg: string): void {
  const t = ((Date.now() - started) / 1000).toFixed(0).padStart(4);
  process.stdout.write(`[${t}s] ${msg}\n`);
}

// ------------------------------------------------------------------------------ odgm

const onlySubjects = args.only?.split(",");
/**
 * Node flags of an odgm member: those its checkout's `pnpm odgm` starts it with (`flags`),
 * then CPU profiles (of this checkout's three-node cluster: `profiled`), perf maps and
 * `--node-flags` when asked.
 */
function nodeArgs(profiled: boolean, flags: readonly string[]): string[] {
  const dir = args["cpu-prof"];
  const perf = args.perf;
  return [
    ...flags,
    ...(dir === undefined || !profiled ? [] : ["--cpu-prof", "--cpu-prof-dir", path.resolve(dir)]),
    // V8 writes a log beside the perf map: into the perf directory, not the working one.
    ...(perf === undefined
      ? []
      : ["--perf-basic-prof", `--logfile=${path.resolve(perf, "v8-%p.log")}`]),
    ...(args["node-flags"]?.split(" ").filter((f) => f !== "") ?? []),
  ];
}

let perfRecords = 0;
/** Starts `perf record` of `pids` when `--perf` asked for it; the returned function stops it. */
function startPerf(pids: readonly number[]): () => void {
  const dir = args.perf;
  if (dir === undefined) return () => undefined;
  const file = path.resolve(dir, `window-${++perfRecords}.data`);
  const perf = spawn(
    "perf",
    ["record", "-q", "-F", "997", "-g", "-o", file, "-p", pids.join(",")],
    {
      stdio: "ignore",
    },
  );
  perf.on("error", (err) => log(`  perf record could not run: ${err.message}`));
  log(`  perf record of ${pids.join(", ")} -> ${file}`);
  return () => perf.kill("SIGINT");
}

interface OdgmNode {
  readonly id: number;
  readonly port: number;
  readonly child: Child;
  readonly client: Client<typeof DataService>;
}

/** `--other`: the checkout whose odgm runs as the second three-node cluster. */
const otherRoot = args.other === undefined ? undefined : path.resolve(args.other);

/**
 * The Node flags a checkout's `pnpm odgm` starts odgm with (its
 * `apps/odgm/scripts/node-flags.mjs`): for `--other`, a change of those is compared too.
 */
async function nodeFlagsOf(root: string): Promise<string[]> {
  const file = path.join(root, "apps", "odgm", "scripts", "node-flags.mjs");
  try {
    return ((await import(pathToFileURL(file).href)) as { NODE_FLAGS: string[] }).NODE_FLAGS;
  } catch (err) {
    throw new Error(`--other: cannot read ${file}: ${(err as Error).message}`);
  }
}

/**
 * Starts `count` odgm members of one cluster: this checkout's build, or with `other` (the
 * `--other` checkout's root and Node flags) that checkout's, its data directories and
 * process names marked `other`.
 */
async function startOdgmNodes(
  count: number,
  collections: readonly object[],
  other?: { readonly root: string; readonly flags: readonly string[] },
): Promise<OdgmNode[]> {
  const ports: number[] = [];
  for (let i = 0; i < count; i++) ports.push(await freePort());
  const members = ports.map((p, i) => `${i + 1}=http://127.0.0.1:${p}`).join(",");
  const bin = odgmBin(other?.root);
  const tag = other === undefined ? "odgm" : "odgm-other";
  return Promise.all(
    ports.map(async (port, i) => {
      const dataDir = path.join(tmp, `${tag}-${count}-${i + 1}`);
      mkdirSync(dataDir);
      const child = await startChild({
        name: `${tag}-${i + 1}`,
        command: process.execPath,
        args: [
          ...nodeArgs(count === 3 && other === undefined, other?.flags ?? odgmNodeFlags()),
          bin,
        ],
        env: {
          ...clusterMemberEnv(i + 1, members, dataDir, port),
          ODGM_SYNC_WRITES: "true",
          // The bench places the sharded collection's leaders itself (one per node); the
          // balancer would otherwise trade them against the other groups' leaders mid-run.
          ODGM_RAFT_BALANCE_LEADERS: "false",
          ODGM_LOG_LEVEL: "info",
          ODGM_COLLECTION: JSON.stringify(collections),
          ...(args["h2c-engine"] === undefined ? {} : { ODGM_H2C_ENGINE: args["h2c-engine"] }),
        },
        ready: /odgm listening/,
        timeoutMs: 60_000,
      });
      checkComm(child.pid, "node");
      return { id: i + 1, port, child, client: grpcClient(`http://127.0.0.1:${port}`) };
    }),
  );
}

/** The node leading `group`, once every node agrees there is one. */
async function odgmLeader(nodes: readonly OdgmNode[], group: string): Promise<OdgmNode> {
  for (let attempt = 0; attempt < 300; attempt++) {
    const seen = new Set<number>();
    for (const n of nodes) {
      try {
        const res = await fetch(`http://127.0.0.1:${n.port}/api/cluster`);
        const body = (await res.json()) as { groups?: { group: string; leader: string }[] };
        const g = body.groups?.find((x) => x.group === group);
        seen.add(Number(g?.leader ?? 0));
      } catch {
        seen.add(0);
      }
    }
    const [only] = [...seen];
    if (seen.size === 1 && only !== undefined && only > 0) {
      const leader = nodes.find((n) => n.id === only);
      if (leader !== undefined) return leader;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`group ${group} has no agreed leader`);
}

/** Sum of the versions of every object of one partition of `cls` (each successful SetValue adds one). */
async function versionSum(
  c: Client<typeof DataService>,
  cls: string,
  partition = 0,
): Promise<number> {
  return (await odgmListing(c, cls, partition)).versionSum;
}

/** Hands the leadership of `group` to node `to` (admin API) and waits until every node agrees. */
async function moveLeader(nodes: readonly OdgmNode[], group: string, to: number): Promise<void> {
  const current = await odgmLeader(nodes, group);
  if (current.id === to) return;
  const res = await fetch(`http://127.0.0.1:${current.port}/api/cluster/membership`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ group, change: "transfer_leader", nodeId: to }),
  });
  if (!res.ok)
    throw new Error(`transfer of ${group} to node ${to}: ${res.status} ${await res.text()}`);
  for (let attempt = 0; attempt < 100; attempt++) {
    if ((await odgmLeader(nodes, group)).id === to) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`node ${to} did not take over ${group}`);
}

// ------------------------------------------------------------------------------ etcd

interface EtcdCluster {
  readonly members: { readonly child: Child; readonly port: number }[];
  endpoints(): string;
  leaderPort(): Promise<number>;
  revision(): Promise<number>;
}

async function startEtcdCluster(): Promise<EtcdCluster> {
  const ports = [];
  for (let i = 0; i < 3; i++) ports.push({ client: await freePort(), peer: await freePort() });
  const initial = ports.map((p, i) => `e${i + 1}=http://127.0.0.1:${p.peer}`).join(",");
  const members = await Promise.all(
    ports.map(async (p, i) => {
      const url = `http://127.0.0.1:${p.client}`;
      const peer = `http://127.0.0.1:${p.peer}`;
      const child = await startChild({
        name: `etcd-${i + 1}`,
        command: "etcd",
        args: [
          ...["--name", `e${i + 1}`, "--data-dir", path.join(tmp, `etcd-${i + 1}`)],
          ...["--listen-client-urls", url, "--advertise-client-urls", url],
          ...["--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer],
          ...["--initial-cluster", initial, "--initial-cluster-state", "new"],
          ...["--logger", "zap", "--log-outputs", "stderr"],
        ],
        ready: /serving client traffic|ready to serve client requests/,
        timeoutMs: 60_000,
      });
      checkComm(child.pid, "etcd");
      return { child, port: p.client };
    }),
  );
  const endpoints = (): string => members.map((m) => `127.0.0.1:${m.port}`).join(",");
  const ctl = async (argv: string[]): Promise<unknown> => {
    const { stdout } = await run(
      "etcdctl",
      ["--endpoints", endpoints(), "--command-timeout=10s", ...argv, "-w", "json"],
      { env: { ...process.env, ETCDCTL_API: "3" }, timeout: 20_000 },
    );
    return JSON.parse(stdout);
  };
  return {
    members,
    endpoints,
    async leaderPort() {
      const st = (await ctl(["endpoint", "status"])) as {
        Endpoint: string;
        Status: { header: { member_id: number }; leader: number };
      }[];
      const lead = st.find((s) => s.Status.header.member_id === s.Status.leader);
      if (lead === undefined) throw new Error("etcd has no leader");
      return Number(lead.Endpoint.split(":").at(-1));
    },
    async revision() {
      const r = (await ctl(["get", "revision-probe"])) as { header?: { revision?: number } };
      if (typeof r.header?.revision !== "number") throw new Error("etcdctl printed no revision");
      return r.header.revision;
    },
  };
}

// ------------------------------------------------------------------------------ load

interface Sample {
  rps: number;
  p50Us: number;
  p99Us: number;
  cpuUsPerWrite: number;
  /**
   * Share of the machine's CPU time (all cores) left idle in the window, %. A subject that
   * leaves CPU idle while its clients wait is held back by waiting (disk syncs, a chain of
   * stages, a thread that cannot keep up: see `--threads`), not by CPU alone.
   */
  idlePct: number;
}

/** Where one grpc-load process sends: a server's port, a body file, requests in flight. */
interface LoadTarget {
  readonly port: number;
  readonly body: string;
  readonly inflight: number;
}

/**
 * Runs one grpc-load per target at once (a partition-aware client: one per partition
 * leader) and sums them: the window runs from the first generator's start to the last one's
 * end, the writes are all generators' successes in their windows, p50/p99 the
 * request-weighted mean of theirs.
 */
async function grpcLoad(o: {
  bin: string;
  targets: readonly LoadTarget[];
  path: string;
  pids: readonly number[];
  counter: () => Promise<number>;
  maxRequests?: number;
}): Promise<Sample> {
  const c0 = await o.counter();
  let cpuA = Number.NaN;
  let cpuB = Number.NaN;
  let machineA: MachineCpu | undefined;
  let machineB: MachineCpu | undefined;
  let windowUs = Number.NaN;
  const cpu = (): number => o.pids.reduce((s, pid) => s + processCpuUs(pid), 0);
  let threadsA: Map<number, ThreadCpu>[] = [];
  let threadsB: Map<number, ThreadCpu>[] = [];
  const threads = (): Map<number, ThreadCpu>[] => (args.threads ? o.pids.map(threadCpu) : []);
  let stopPerf = (): void => undefined;
  let windowsStarted = 0;
  let windowsEnded = 0;
  const outs = await Promise.all(
    o.targets.map((t) =>
      runTool(
        o.bin,
        [
          ...["--port", String(t.port), "--path", o.path, "--bodies", t.body],
          ...["--connections", String(t.inflight), "--inflight", String(t.inflight)],
          ...(o.maxRequests === undefined
            ? ["--warmup-ms", String(WARMUP_MS), "--duration-ms", String(WINDOW_MS)]
            : [
                ...["--warmup-ms", "0", "--duration-ms", "600000"],
                ...["--max-requests", String(o.maxRequests)],
              ]),
        ],
        {
          timeoutMs: 660_000,
          onLine: (l) => {
            if (l === "window-start" && windowsStarted++ === 0) {
              cpuA = cpu();
              machineA = machineCpu();
              windowUs = -performance.now() * 1000;
              threadsA = threads();
              if (o.maxRequests === undefined) stopPerf = startPerf(o.pids);
            } else if (l === "window-end" && ++windowsEnded === o.targets.length) {
              stopPerf();
              cpuB = cpu();
              machineB = machineCpu();
              windowUs += performance.now() * 1000;
              threadsB = threads();
            }
          },
        },
      ),
    ),
  );
  const each = outs.map((out) => parseGrpcLoad(out.stdout));
  for (const r of each) {
    if (r.err_total > 0 || r.incomplete > 0 || r.ok_total === 0) {
      throw new Error(
        `grpc-load on ${o.path}: ${r.ok_total} ok, ${r.err_total} failed, ${r.incomplete} unanswered; first: ${r.first_error}`,
      );
    }
  }
  const sum = (f: (r: (typeof each)[number]) => number): number =>
    each.reduce((s, r) => s + f(r), 0);
  const windowOk = sum((r) => r.window_ok);
  const weighted = (f: (r: (typeof each)[number]) => number): number =>
    windowOk > 0 ? sum((r) => f(r) * r.window_ok) / windowOk : Number.NaN;
  const r = {
    ok_total: sum((r) => r.ok_total),
    window_ok: windowOk,
    rps: sum((r) => r.rps),
    p50_us: weighted((r) => r.p50_us),
    p99_us: weighted((r) => r.p99_us),
  };
  const c1 = await o.counter();
  if (c1 - c0 !== r.ok_total) {
    throw new Error(`the server counted ${c1 - c0} writes, grpc-load ${r.ok_total} successes`);
  }
  /** Running or waiting for a CPU, as a share of the window (per thread when several). */
  const runnablePct = (t: ThreadCpuRow) =>
    ((100 * (t.userUs + t.systemUs + t.runQueueUs)) / (windowUs * t.threads)).toFixed(0);
  for (const [i, pid] of o.pids.entries()) {
    const a = threadsA[i];
    const b = threadsB[i];
    if (a === undefined || b === undefined || r.window_ok === 0) continue;
    const rows = threadCpuDelta(pid, a, b).map(
      (t) =>
        `${t.comm}×${t.threads} ${(t.userUs / r.window_ok).toFixed(0)}u+${(t.systemUs / r.window_ok).toFixed(0)}s (${(t.runQueueUs / r.window_ok).toFixed(0)} waiting for a CPU; runnable ${runnablePct(t)} % of the window)`,
    );
    log(`  pid ${pid} µs/write by thread: ${rows.join(", ")}`);
  }
  return {
    rps: r.rps,
    p50Us: r.p50_us,
    p99Us: r.p99_us,
    cpuUsPerWrite: r.window_ok > 0 ? (cpuB - cpuA) / r.window_ok : Number.NaN,
    idlePct:
      machineA === undefined || machineB === undefined
        ? Number.NaN
        : idlePercent(machineA, machineB),
  };
}

// ------------------------------------------------------------------------------ main

interface Subject {
  readonly id: string;
  readonly what: string;
  readonly measure: () => Promise<Sample>;
}

const RATIOS: readonly { label: string; a: string; b: string }[] = [
  { label: "ODGM 3 nodes / etcd 3 members, 64 in flight", a: "odgm3/64", b: "etcd3/64" },
  { label: "ODGM 3 nodes / etcd 3 members, 1 in flight", a: "odgm3/1", b: "etcd3/1" },
  {
    label: "ODGM 3 nodes: via a follower / via the leader, 64",
    a: "odgm3-follower/64",
    b: "odgm3/64",
  },
  {
    label: "ODGM 3 nodes, 3 partitions led by 3 nodes / etcd 3 members, 64",
    a: "odgm3-sharded/64",
    b: "etcd3/64",
  },
  { label: "one node: raft, 1 replica / basic, 64 in flight", a: "raft1/64", b: "basic/64" },
  { label: "ODGM 3 nodes / one node basic, 64 in flight", a: "odgm3/64", b: "basic/64" },
  {
    label: "this checkout / the --other checkout, 64 in flight",
    a: "odgm3/64",
    b: "odgm3-other/64",
  },
  { label: "this checkout / the --other checkout, 1 in flight", a: "odgm3/1", b: "odgm3-other/1" },
  {
    label: "this checkout / the --other checkout, via a follower, 64",
    a: "odgm3-follower/64",
    b: "odgm3-other-follower/64",
  },
];

/** A checkout's commit, marked when it has uncommitted changes. */
async function commitOf(root: string): Promise<string> {
  try {
    const head = (await run("git", ["-C", root, "rev-parse", "--short", "HEAD"])).stdout.trim();
    const dirty = (await run("git", ["-C", root, "status", "--porcelain"])).stdout.trim();
    return dirty === "" ? head : `${head} with uncommitted changes`;
  } catch {
    return "not a git checkout";
  }
}

async function main(): Promise<void> {
  const machine = machineInfo();
  log(
    `bench:cluster: ${WARMUP_ROUNDS} unrecorded + ${ROUNDS} round(s), ${WARMUP_MS} ms warm-up + ${WINDOW_MS} ms per measurement; temp dir ${tmp}`,
  );
  // A missing or stale build of the other checkout fails now, not after the prefill.
  if (otherRoot !== undefined) odgmBin(otherRoot);
  const otherFlags = otherRoot === undefined ? undefined : await nodeFlagsOf(otherRoot);
  const commits = {
    here: await commitOf(PKG),
    other: otherRoot === undefined ? undefined : await commitOf(otherRoot),
  };
  if (otherRoot !== undefined)
    log(`--other: ${otherRoot} (${commits.other}), Node flags ${otherFlags?.join(" ")}`);
  ensureWritesTools(log);
  const bin = buildGrpcLoad(tmp);

  const bodies = path.join(tmp, "bodies");
  mkdirSync(bodies);
  const odgmBody = (cls: string, partition = 0, objects = DISTINCT): string => {
    const file = path.join(bodies, `${cls}-${partition}.bin`);
    writeBodyFile(
      file,
      Array.from({ length: objects }, (_, i) =>
        grpcFrame(
          encodeSetKeyRequest({
            collection: cls,
            partition,
            objectId: BigInt(i + 1),
            key: KEY,
            value: VALUE,
          }),
        ),
      ),
    );
    return file;
  };
  const enc = new TextEncoder();
  const etcdBody = path.join(bodies, "etcd.bin");
  writeBodyFile(
    etcdBody,
    Array.from({ length: DISTINCT }, (_, i) =>
      grpcFrame(encodeEtcdPut(enc.encode(`k/${String(i).padStart(5, "0")}`), VALUE)),
    ),
  );
  const replicated = odgmBody("replicated");
  const basicBody = odgmBody("plain");
  const raft1Body = odgmBody("raft1");
  // The same number of objects, spread over the partitions of a sharded collection.
  const perPartition = Math.ceil(DISTINCT / SHARDS);
  const shardBodies = Array.from({ length: SHARDS }, (_, p) =>
    odgmBody("sharded", p, perPartition),
  );

  // The --other cluster holds the same collections and the same prefilled data: a cluster
  // with fewer groups and records than the one it is compared with ran faster on the same
  // build (the control pair, odgm3/64 against odgm3-other/64, read 0.91–0.94×, 2026-11-29).
  const collections = [
    { name: "replicated", partitionCount: 1, shardType: "raft", replicaCount: 3 },
    { name: "sharded", partitionCount: SHARDS, shardType: "raft", replicaCount: 3 },
  ] as const;
  const cluster = await startOdgmNodes(3, collections);
  const single = await startOdgmNodes(1, [
    { name: "plain", partitionCount: 1 },
    { name: "raft1", partitionCount: 1, shardType: "raft", replicaCount: 1 },
  ]);
  const other =
    otherRoot === undefined || otherFlags === undefined
      ? []
      : await startOdgmNodes(3, collections, { root: otherRoot, flags: otherFlags });
  const etcd = await startEtcdCluster();
  log(
    `odgm cluster pids ${cluster.map((n) => n.child.pid).join(", ")}; single node pid ${single[0]?.child.pid}; etcd pids ${etcd.members.map((m) => m.child.pid).join(", ")}`,
  );
  try {
    const leader = await odgmLeader(cluster, "replicated/0");
    const follower = cluster.find((n) => n !== leader) as OdgmNode;
    const otherLeader = other.length > 0 ? await odgmLeader(other, "replicated/0") : undefined;
    const otherFollower = other.find((n) => n !== otherLeader);
    const otherPids = other.map((n) => n.child.pid);
    const one = single[0] as OdgmNode;
    await odgmLeader(single, "raft1/0");
    // Partition p of the sharded collection led by node p + 1: each node leads one.
    const shardsOf = async (nodes: readonly OdgmNode[]) => {
      for (let p = 0; p < SHARDS; p++) await moveLeader(nodes, `sharded/${p}`, p + 1);
      const leaders = nodes.slice(0, SHARDS);
      const targets: LoadTarget[] = leaders.map((n, p) => ({
        port: n.port,
        body: shardBodies[p] as string,
        inflight: inflightOf(p),
      }));
      const sum = async (): Promise<number> => {
        let total = 0;
        for (const [p, n] of leaders.entries()) total += await versionSum(n.client, "sharded", p);
        return total;
      };
      return { targets, sum };
    };
    const { targets: shardTargets, sum: shardedSum } = await shardsOf(cluster);
    const otherShards = other.length > 0 ? await shardsOf(other) : undefined;
    const etcdPort = await etcd.leaderPort();
    const clusterPids = cluster.map((n) => n.child.pid);
    const etcdPids = etcd.members.map((m) => m.child.pid);
    const setValue = "/oprc.DataService/SetValue";

    log("prefilling (every measured write is an update)");
    const fill = (
      port: number,
      body: string,
      pids: readonly number[],
      counter: () => Promise<number>,
      p = setValue,
    ) =>
      grpcLoad({
        bin,
        targets: [{ port, body, inflight: 64 }],
        path: p,
        pids,
        counter,
        maxRequests: DISTINCT,
      });
    await fill(leader.port, replicated, clusterPids, () => versionSum(leader.client, "replicated"));
    if (otherLeader !== undefined)
      await fill(otherLeader.port, replicated, otherPids, () =>
        versionSum(otherLeader.client, "replicated"),
      );
    await grpcLoad({
      bin,
      targets: shardTargets,
      path: setValue,
      pids: clusterPids,
      counter: shardedSum,
      maxRequests: perPartition,
    });
    if (otherShards !== undefined)
      await grpcLoad({
        bin,
        targets: otherShards.targets,
        path: setValue,
        pids: otherPids,
        counter: otherShards.sum,
        maxRequests: perPartition,
      });
    await fill(one.port, basicBody, [one.child.pid], () => versionSum(one.client, "plain"));
    await fill(one.port, raft1Body, [one.child.pid], () => versionSum(one.client, "raft1"));
    await fill(etcdPort, etcdBody, etcdPids, () => etcd.revision(), "/etcdserverpb.KV/Put");

    /** SetValue to the replicated partition's leader `to` of a three-node cluster (`pids`). */
    const toLeader = (to: OdgmNode, pids: readonly number[], inflight: number) => () =>
      grpcLoad({
        bin,
        targets: [{ port: to.port, body: replicated, inflight }],
        path: setValue,
        pids,
        counter: () => versionSum(to.client, "replicated"),
      });
    /** SetValue at 64 in flight to `to`, a follower, which forwards it to `leader`. */
    const toFollower = (to: OdgmNode, leader: OdgmNode, pids: readonly number[]) => () =>
      grpcLoad({
        bin,
        targets: [{ port: to.port, body: replicated, inflight: 64 }],
        path: setValue,
        pids,
        counter: () => versionSum(leader.client, "replicated"),
      });
    const subjects: Subject[] = [];
    for (const inflight of [1, 64]) {
      subjects.push(
        {
          id: `odgm3/${inflight}`,
          what: `odgm, 3 nodes, raft partition with 3 replicas, SetValue to the leader, ${inflight} in flight`,
          measure: toLeader(leader, clusterPids, inflight),
        },
        {
          id: `etcd3/${inflight}`,
          what: `etcd 3.4, 3 members, Put to the leader, ${inflight} in flight`,
          measure: () =>
            grpcLoad({
              bin,
              targets: [{ port: etcdPort, body: etcdBody, inflight }],
              path: "/etcdserverpb.KV/Put",
              pids: etcdPids,
              counter: () => etcd.revision(),
            }),
        },
      );
      if (otherLeader !== undefined)
        subjects.push({
          id: `odgm3-other/${inflight}`,
          what: `as \`odgm3/${inflight}\`, with the odgm of ${otherRoot} (${commits.other})`,
          measure: toLeader(otherLeader, otherPids, inflight),
        });
    }
    subjects.push(
      {
        id: "odgm3-sharded/64",
        what: `odgm, 3 nodes, raft collection of ${SHARDS} partitions with 3 replicas, each partition led by another node; SetValue to each partition's leader (a partition-aware client: one generator per leader), 64 in flight in all`,
        measure: () =>
          grpcLoad({
            bin,
            targets: shardTargets,
            path: setValue,
            pids: clusterPids,
            counter: shardedSum,
          }),
      },
      {
        id: "odgm3-follower/64",
        what: "odgm, 3 nodes, SetValue to a follower (forwarded to the leader), 64 in flight",
        measure: toFollower(follower, leader, clusterPids),
      },
      ...(otherLeader === undefined || otherFollower === undefined
        ? []
        : [
            {
              id: "odgm3-other-follower/64",
              what: `as \`odgm3-follower/64\`, with the odgm of ${otherRoot} (${commits.other})`,
              measure: toFollower(otherFollower, otherLeader, otherPids),
            },
          ]),
      ...(
        [
          ["basic/64", "basic collection", basicBody, "plain"],
          ["raft1/64", "raft collection with 1 replica", raft1Body, "raft1"],
        ] as const
      ).map(([id, kind, body, cls]) => ({
        id,
        what: `odgm, one node, ${kind}, 64 in flight`,
        measure: () =>
          grpcLoad({
            bin,
            targets: [{ port: one.port, body, inflight: 64 }],
            path: setValue,
            pids: [one.child.pid],
            counter: () => versionSum(one.client, cls),
          }),
      })),
    );

    if (onlySubjects !== undefined) {
      const unknown = onlySubjects.filter((id) => !subjects.some((s) => s.id === id));
      if (unknown.length > 0) throw new Error(`--only: no subject ${unknown.join(", ")}`);
      subjects.splice(0, subjects.length, ...subjects.filter((s) => onlySubjects.includes(s.id)));
    }
    const results = new Map<string, Sample[]>(subjects.map((s) => [s.id, []]));
    for (let round = 1 - WARMUP_ROUNDS; round <= ROUNDS; round++) {
      for (const i of permutation(subjects.length, round)) {
        const s = subjects[i] as Subject;
        const sample = await s.measure();
        if (round >= 1) results.get(s.id)?.push(sample);
        log(
          `${round >= 1 ? `round ${round}/${ROUNDS}` : "unrecorded"} ${s.id.padEnd(18)} ${Math.round(sample.rps).toString().padStart(6)} writes/s  p50 ${(sample.p50Us / 1000).toFixed(2)} ms  p99 ${(sample.p99Us / 1000).toFixed(2)} ms  CPU ${sample.cpuUsPerWrite.toFixed(0)} µs/write  machine idle ${sample.idlePct.toFixed(0)} %`,
        );
      }
    }

    const med = (id: string, f: (s: Sample) => number): number =>
      percentile((results.get(id) ?? []).map(f), 50);
    const ratio = (a: string, b: string, f: (s: Sample) => number): string => {
      const per = pairedRatios((results.get(a) ?? []).map(f), (results.get(b) ?? []).map(f));
      const s = spread(per);
      const m = meanInterval(per);
      const interval = Number.isFinite(m.low)
        ? `, 95 % CI ${m.low.toFixed(3)}–${m.high.toFixed(3)}×`
        : "";
      return `${s.median.toFixed(2)}× (${s.min.toFixed(2)}–${s.max.toFixed(2)}×; mean ${m.mean.toFixed(3)}×${interval})`;
    };
    const ratios = RATIOS.filter((r) => results.has(r.a) && results.has(r.b));
    const lines = [
      "# Cluster writes: a three-node ODGM cluster vs a three-member etcd",
      "",
      "Generated by `tools/bench/src/cluster-main.ts`. Durable writes (odgm: RocksDB WAL and Raft log synced; etcd: WAL fsync), all on loopback on one machine, driven by grpc-load (C, libnghttp2) over as many connections as requests in flight. Load goes to the leader unless a subject says otherwise. Server CPU is the sum of every member process's utime + stime over the measured window, per successful write. Machine idle is the share of all cores' time (/proc/stat: idle and iowait) nobody used in the window, load generator included. **Ratios are the figures**: absolute numbers depend on the machine.",
      "",
      "| | |",
      "|---|---|",
      "| command | `npx -y pnpm@10.34.9 bench:cluster` |",
      `| date | ${new Date().toISOString()} |`,
      `| machine | ${machine.cores} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, ${machine.kernel} |`,
      `| load average at start / end | ${fmtLoad(machine.loadStart)} / ${fmtLoad(os.loadavg())} |`,
      `| per measurement | ${WARMUP_MS} ms warm-up, then a ${WINDOW_MS} ms window; ${WARMUP_ROUNDS} unrecorded round(s) of every subject after the prefill, then ${ROUNDS} recorded round(s), subjects in a fresh order each round |`,
      `| data | ${DISTINCT} distinct objects (keys), 16-byte values, every write an update |`,
      `| odgm | this checkout at ${commits.here}${otherRoot === undefined ? "" : `; \`--other\` ${otherRoot} at ${commits.other}`} |`,
      `| tools | node ${process.version}; ${toolVersion("etcd")}; grpc-load (c/grpc-load.c) |`,
      "",
      "## Subjects (median over rounds)",
      "",
      "| subject | what | writes/s | p50 ms | p99 ms | server CPU µs/write (all members) | machine idle % |",
      "|---|---|---:|---:|---:|---:|---:|",
      ...subjects.map(
        (s) =>
          `| \`${s.id}\` | ${s.what} | ${Math.round(med(s.id, (x) => x.rps))} | ${(med(s.id, (x) => x.p50Us) / 1000).toFixed(2)} | ${(med(s.id, (x) => x.p99Us) / 1000).toFixed(2)} | ${med(s.id, (x) => x.cpuUsPerWrite).toFixed(0)} | ${med(s.id, (x) => x.idlePct).toFixed(0)} |`,
      ),
      "",
      "## Ratios (paired per round: median (min–max; mean, with its 95 % confidence interval))",
      "",
      "| a / b | writes/s a/b | CPU per write a/b |",
      "|---|---:|---:|",
      ...ratios.map(
        (r) =>
          `| ${r.label} | ${ratio(r.a, r.b, (x) => x.rps)} | ${ratio(r.a, r.b, (x) => x.cpuUsPerWrite)} |`,
      ),
      "",
      "## Verification",
      "",
      "- Every measurement (and the prefill): the sum of the collection's object versions on the leader (etcd: the store revision) rose by exactly the successes grpc-load counted; any gRPC error, reset or unanswered request fails the run.",
      "",
    ];
    // A partial run (--only) leaves the committed results alone unless --out names a file.
    if (onlySubjects === undefined || args.out !== undefined) {
      writeFileSync(outFile, lines.join("\n"));
      log(`wrote ${outFile}`);
    }
    for (const r of ratios)
      log(
        `${r.label}: writes/s ${ratio(r.a, r.b, (x) => x.rps)}, CPU/write ${ratio(r.a, r.b, (x) => x.cpuUsPerWrite)}`,
      );
  } finally {
    await Promise.all([
      ...cluster.map((n) => n.child.stop()),
      ...single.map((n) => n.child.stop()),
      ...other.map((n) => n.child.stop()),
      ...etcd.members.map((m) => m.child.stop()),
    ]);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `bench:cluster failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    killAllChildren();
    process.exit(1);
  },
);
