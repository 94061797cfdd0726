// The whole-product benchmark: odgm (real child process, RocksDB, sync on) over gRPC and
// REST, against baselines measured in the same run, round-robin over several rounds.
// Run: npx -y pnpm@10.34.9 bench:clients [-- --quick | --full]   (from the repository root)
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { Client } from "@connectrpc/connect";
import type { DataService, Health } from "@oprc/grpc-api";
import { grpcClient, type HttpClient, healthClient, httpClient, pick } from "./clients.js";
import { fmtLoad, machineInfo } from "./machine.js";
import { measure, type Sample, type Subject, sampleKey } from "./measure.js";
import { odgmNodeFlags } from "./odgm-bin.js";
import {
  BIG_OBJECT,
  benchValue,
  COLLECTION,
  LIST_OBJECT,
  type PreloadReport,
  preloadOdgm,
} from "./preload.js";
import {
  type Child,
  killAllChildren,
  NODE_FLAGS,
  rssBytes,
  startChild,
  startChildScript,
} from "./processes.js";
import { profileShares, topFunctions } from "./profile.js";
import {
  preloadRedis,
  REDIS_SERVER,
  type RedisInstance,
  redisAvailable,
  startRedis,
} from "./redis.js";
import {
  buildResultsMarkdown,
  type ProfileSummary,
  type RunInfo,
  type ScaleInfo,
} from "./results-doc.js";
import { openRawRocks } from "./rocks-raw.js";

const { values: args } = parseArgs({
  // pnpm passes a literal `--` through; accept it.
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    quick: { type: "boolean", default: false },
    full: { type: "boolean", default: false },
    rounds: { type: "string" },
    "duration-ms": { type: "string" },
    out: { type: "string" },
    only: { type: "string" },
    profile: { type: "boolean", default: false },
  },
  strict: true,
});

const mode = args.quick ? "quick" : args.full ? "full" : "default";
const rounds = Number(args.rounds ?? (mode === "quick" ? 1 : 5));
const durationMs = Math.min(3000, Number(args["duration-ms"] ?? (mode === "quick" ? 150 : 1500)));
const budget = {
  durationMs,
  warmupMs: mode === "quick" ? 50 : 300,
  maxRequests: mode === "quick" ? 20_000 : 200_000,
};
const CONCURRENCY = [1, 64] as const;
const MAIN_OBJECTS = 1000;
const ENTRIES_PER_OBJECT = 4;
const scaleSizes: number[] =
  mode === "quick" ? [5_000] : mode === "full" ? [100_000, 1_000_000] : [100_000];
const PKG = fileURLToPath(new URL("..", import.meta.url));
const outFile = args.out ?? path.join(PKG, mode === "quick" ? "RESULTS.quick.md" : "RESULTS.md");
const started = Date.now();

// Hard bound on the whole run: whatever hangs, children die and the process exits.
const watchdogMs = (mode === "quick" ? 5 : mode === "full" ? 120 : 40) * 60_000;
setTimeout(() => {
  process.stderr.write(`bench: gave up after ${watchdogMs / 60_000} min\n`);
  killAllChildren();
  cleanup();
  process.exit(3);
}, watchdogMs).unref();

const tmp = mkdtempSync(path.join(os.tmpdir(), "odgm-bench-"));
function cleanup(): void {
  rmSync(tmp, { recursive: true, force: true });
}
process.on("exit", cleanup);

function log(msg: string): void {
  const t = ((Date.now() - started) / 1000).toFixed(0).padStart(4);
  process.stdout.write(`[${t}s] ${msg}\n`);
}

function dirBytes(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? dirBytes(p) : statSync(p).size;
  }
  return total;
}

/** The real `odgm` command, run from its TypeScript sources (no build needed). */
function odgmBin(): string {
  const index = fileURLToPath(import.meta.resolve("@oprc/odgm"));
  return index.endsWith(".ts")
    ? path.join(path.dirname(index), "bin", "odgm.ts")
    : path.join(path.dirname(index), "bin", "odgm.js");
}

async function startOdgm(
  name: string,
  dataDir: string,
  profileDir?: string,
): Promise<{ child: Child; url: string }> {
  const prof = profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`];
  const child = await startChild({
    name,
    command: process.execPath,
    args: [...NODE_FLAGS, ...odgmNodeFlags(), ...prof, odgmBin()],
    env: {
      ODGM_DATA_DIR: dataDir,
      ODGM_HTTP_HOST: "127.0.0.1",
      ODGM_HTTP_PORT: "0",
      ODGM_SYNC_WRITES: "true",
      ODGM_LOG_LEVEL: "info",
      ODGM_COLLECTION: JSON.stringify([{ name: COLLECTION, partitionCount: 1 }]),
    },
    ready: /"url":"(http:\/\/127\.0\.0\.1:\d+)"/,
  });
  return { child, url: child.ready[1] as string };
}

// ---------------------------------------------------------------------------- subjects

const VALUE = benchValue(7);
const base = { clsId: COLLECTION, partitionId: 0 };

function batchValues(n: number): Record<string, typeof VALUE> {
  const out: Record<string, typeof VALUE> = {};
  for (let i = 0; i < n; i++) out[`b${i}`] = VALUE;
  return out;
}
function batchJson(n: number): string {
  const values: Record<string, { value: string }> = {};
  for (let i = 0; i < n; i++) values[`b${i}`] = { value: "abcdefghijklmnop" };
  return JSON.stringify({ values });
}

function grpcSubjects(
  prefix: string,
  pid: number,
  c: Client<typeof DataService>,
  health: Client<typeof Health>,
  n: number,
): Subject[] {
  const batch10 = batchValues(10);
  const batch50 = batchValues(50);
  return [
    { id: `${prefix}.Capabilities`, pid, call: () => c.capabilities({}) },
    { id: `${prefix}.HealthCheck`, pid, call: () => health.check({}) },
    {
      id: `${prefix}.SetValue`,
      pid,
      call: (w, s) =>
        c.setValue({ ...base, objectId: BigInt(pick(w, s, n)), keyStr: "f0", value: VALUE }),
    },
    {
      id: `${prefix}.GetValue`,
      pid,
      call: (w, s) => c.getValue({ ...base, objectId: BigInt(pick(w, s, n)), keyStr: "f1" }),
    },
    {
      id: `${prefix}.SetValue.str`,
      pid,
      call: (w, s) =>
        c.setValue({ ...base, objectIdStr: `o${pick(w, s, n)}`, keyStr: "f0", value: VALUE }),
    },
    {
      id: `${prefix}.GetValue.str`,
      pid,
      call: (w, s) => c.getValue({ ...base, objectIdStr: `o${pick(w, s, n)}`, keyStr: "f1" }),
    },
    {
      id: `${prefix}.Batch10`,
      pid,
      call: (w, s) =>
        c.batchSetValues({ ...base, objectId: BigInt(pick(w, s, n)), values: batch10 }),
    },
    {
      id: `${prefix}.Batch50`,
      pid,
      call: (w, s) =>
        c.batchSetValues({ ...base, objectId: BigInt(pick(w, s, n)), values: batch50 }),
    },
    { id: `${prefix}.Get256`, pid, call: () => c.get({ ...base, objectIdStr: BIG_OBJECT }) },
    {
      id: `${prefix}.List100`,
      pid,
      call: async () => {
        let count = 0;
        for await (const _ of c.listValues({ ...base, objectIdStr: LIST_OBJECT, limit: 100 }))
          count++;
        if (count !== 100) throw new Error(`ListValues returned ${count} entries, expected 100`);
      },
    },
  ];
}

function restSubjects(pid: number, h: HttpClient, n: number): Subject[] {
  const b = `/api/class/${COLLECTION}/0/objects`;
  const body = JSON.stringify({ value: "abcdefghijklmnop" });
  const b10 = batchJson(10);
  const b50 = batchJson(50);
  return [
    { id: "rest.healthz", pid, call: () => h.request("GET", "/healthz") },
    {
      id: "rest.PutValue",
      pid,
      call: (w, s) => h.request("PUT", `${b}/${pick(w, s, n)}/values/f0`, body),
    },
    {
      id: "rest.GetValue",
      pid,
      call: (w, s) => h.request("GET", `${b}/${pick(w, s, n)}/values/f1`),
    },
    {
      id: "rest.Batch10",
      pid,
      call: (w, s) => h.request("POST", `${b}/${pick(w, s, n)}/values/batch`, b10),
    },
    {
      id: "rest.Batch50",
      pid,
      call: (w, s) => h.request("POST", `${b}/${pick(w, s, n)}/values/batch`, b50),
    },
    { id: "rest.Get256", pid, call: () => h.request("GET", `${b}/${BIG_OBJECT}`) },
    {
      id: "rest.List100",
      pid,
      call: () => h.request("GET", `${b}/${LIST_OBJECT}/values?limit=100`),
    },
  ];
}

function redisSubjects(prefix: string, r: RedisInstance, n: number): Subject[] {
  const c = r.client;
  const v = Buffer.from(VALUE.data);
  const fields = (k: number): (string | Buffer)[] => {
    const out: (string | Buffer)[] = [];
    for (let i = 0; i < k; i++) out.push(`b${i}`, v);
    return out;
  };
  const f10 = fields(10);
  const f50 = fields(50);
  const pid = r.child.pid;
  return [
    { id: `${prefix}.HSET`, pid, call: (w, s) => c.hset(`h:${pick(w, s, n)}`, "f0", v) },
    { id: `${prefix}.HGET`, pid, call: (w, s) => c.hgetBuffer(`h:${pick(w, s, n)}`, "f1") },
    { id: `${prefix}.HSET10`, pid, call: (w, s) => c.hset(`h:${pick(w, s, n)}`, ...f10) },
    { id: `${prefix}.HSET50`, pid, call: (w, s) => c.hset(`h:${pick(w, s, n)}`, ...f50) },
    { id: `${prefix}.HGETALL256`, pid, call: () => c.hgetallBuffer(BIG_OBJECT) },
    { id: `${prefix}.HGETALL100`, pid, call: () => c.hgetallBuffer(LIST_OBJECT) },
  ];
}

// ---------------------------------------------------------------------------------- run

async function main(): Promise<void> {
  const machine = machineInfo();
  log(`mode ${mode}: ${rounds} round(s), ${budget.durationMs} ms per measurement, temp dir ${tmp}`);
  const children: Child[] = [];
  const redises: RedisInstance[] = [];
  const closers: (() => Promise<void> | void)[] = [];
  try {
    // Data first: RocksDB allows one process per directory, so load before odgm opens it.
    const mainDir = path.join(tmp, "odgm-1k");
    const loads: { size: number; dir: string; report: PreloadReport; diskAfterLoad: number }[] = [];
    log(
      `loading ${MAIN_OBJECTS} numeric + ${MAIN_OBJECTS} string-id objects through the entry store`,
    );
    loads.push({
      size: MAIN_OBJECTS,
      dir: mainDir,
      diskAfterLoad: 0,
      report: await preloadOdgm(mainDir, {
        objects: MAIN_OBJECTS,
        stringObjects: MAIN_OBJECTS,
        entriesPerObject: ENTRIES_PER_OBJECT,
      }),
    });
    (loads[0] as { diskAfterLoad: number }).diskAfterLoad = dirBytes(mainDir);
    for (const size of scaleSizes) {
      const dir = path.join(tmp, `odgm-${size}`);
      log(`loading ${size} objects through the entry store (sync off, 512 objects in flight)`);
      const report = await preloadOdgm(dir, {
        objects: size,
        stringObjects: 0,
        entriesPerObject: ENTRIES_PER_OBJECT,
      });
      log(
        `  loaded ${report.objects} objects / ${report.entries} entries in ${(report.ms / 1000).toFixed(1)} s`,
      );
      loads.push({ size, dir, report, diskAfterLoad: dirBytes(dir) });
    }

    const profileDir = args.profile ? path.join(tmp, "profile") : undefined;
    const odgm = await startOdgm("odgm-1k", mainDir, profileDir);
    children.push(odgm.child);
    log(`odgm (1k objects) listening at ${odgm.url}, pid ${odgm.child.pid}`);
    const scaled: { size: number; child: Child; url: string; idleRss: number }[] = [];
    for (const l of loads.slice(1)) {
      const s = await startOdgm(`odgm-${l.size}`, l.dir);
      children.push(s.child);
      scaled.push({ size: l.size, child: s.child, url: s.url, idleRss: rssBytes(s.child.pid) });
    }
    const idleRssMain = rssBytes(odgm.child.pid);
    const h2 = await startChildScript("h2-grpc", "./children/h2-grpc-child.ts");
    children.push(h2.child);
    const hono = await startChildScript("hono", "./children/hono-child.ts");
    children.push(hono.child);

    const grpcMain = grpcClient(odgm.url);
    const grpcH2 = grpcClient(`http://127.0.0.1:${h2.port}`);
    const maxC = Math.max(...CONCURRENCY);
    const restMain = httpClient(Number(new URL(odgm.url).port), maxC);
    const restHono = httpClient(hono.port, maxC);
    closers.push(
      () => restMain.close(),
      () => restHono.close(),
    );

    const subjects: Subject[] = [
      { id: "h2.empty", pid: h2.child.pid, call: () => grpcH2.capabilities({}) },
      ...grpcSubjects("grpc", odgm.child.pid, grpcMain, healthClient(odgm.url), MAIN_OBJECTS),
      { id: "hono.trivial", pid: hono.child.pid, call: () => restHono.request("GET", "/") },
      ...restSubjects(odgm.child.pid, restMain, MAIN_OBJECTS),
    ];

    // Raw RocksDB through the same binding, in this process.
    const rocks = await openRawRocks(path.join(tmp, "raw-rocks"));
    closers.push(() => rocks.close());
    for (let i = 1; i <= MAIN_OBJECTS; i++) await rocks.putMany([`k${i}`], VALUE.data);
    const rawKeys = (w: number, s: number, k: number): string[] => {
      const id = pick(w, s, MAIN_OBJECTS);
      return Array.from({ length: k }, (_, i) => `k${id}/b${i}`);
    };
    subjects.push(
      {
        id: "rocks.put",
        pid: process.pid,
        call: (w, s) => rocks.put(`k${pick(w, s, MAIN_OBJECTS)}`, VALUE.data),
      },
      {
        id: "rocks.get",
        pid: process.pid,
        call: async (w, s) => {
          if ((await rocks.get(`k${pick(w, s, MAIN_OBJECTS)}`)) === undefined)
            throw new Error("raw get missed");
        },
      },
      {
        id: "rocks.batch10",
        pid: process.pid,
        call: (w, s) => rocks.putMany(rawKeys(w, s, 10), VALUE.data),
      },
      {
        id: "rocks.batch50",
        pid: process.pid,
        call: (w, s) => rocks.putMany(rawKeys(w, s, 50), VALUE.data),
      },
    );

    // Redis, if installed.
    const redisSizes: { size: number; instance: RedisInstance; afterLoad: number }[] = [];
    if (redisAvailable()) {
      const value = (seed: number): Buffer => Buffer.from(benchValue(seed).data);
      const main = await startRedis("redis-1k");
      redises.push(main);
      await preloadRedis(main.client, MAIN_OBJECTS, ENTRIES_PER_OBJECT, value);
      redisSizes.push({ size: MAIN_OBJECTS, instance: main, afterLoad: await main.usedMemory() });
      subjects.push(...redisSubjects("redis", main, MAIN_OBJECTS));
      for (const size of scaleSizes) {
        const r = await startRedis(`redis-${size}`);
        redises.push(r);
        await preloadRedis(r.client, size, ENTRIES_PER_OBJECT, value);
        redisSizes.push({ size, instance: r, afterLoad: await r.usedMemory() });
        subjects.push({
          id: `redis@${size}.HGET`,
          pid: r.child.pid,
          call: (w, s) => r.client.hgetBuffer(`h:${pick(w, s, size)}`, "f1"),
        });
      }
    } else {
      log(`redis-server not found at ${REDIS_SERVER}: Redis rows are "not measured".`);
      log("  install it with: sudo apt-get install redis-server   (or set BENCH_REDIS_SERVER)");
    }

    for (const s of scaled) {
      const c = grpcClient(s.url);
      const pid = s.child.pid;
      const n = s.size;
      subjects.push(
        {
          id: `grpc@${n}.GetValue`,
          pid,
          call: (w, q) => c.getValue({ ...base, objectId: BigInt(pick(w, q, n)), keyStr: "f1" }),
        },
        {
          id: `grpc@${n}.SetValue`,
          pid,
          call: (w, q) =>
            c.setValue({ ...base, objectId: BigInt(pick(w, q, n)), keyStr: "f0", value: VALUE }),
        },
      );
    }

    // Every subject must work before anything is timed.
    try {
      await verify(grpcMain);
      for (const s of subjects) {
        try {
          await s.call(0, 0);
        } catch (err) {
          throw new Error(`subject ${s.id} failed its first call: ${(err as Error).message}`);
        }
      }
    } catch (err) {
      process.stderr.write(`odgm output (last 3000 chars):\n${odgm.child.output().slice(-3000)}\n`);
      throw err;
    }
    log(`${subjects.length} subjects verified; measuring`);

    // Round-robin: every round measures every (subject, concurrency) once; the start point
    // rotates so no subject always runs first or last.
    const only = args.only === undefined ? undefined : new RegExp(args.only);
    const runs = subjects
      .flatMap((s) => CONCURRENCY.map((c) => ({ s, c })))
      .filter(({ s, c }) => only === undefined || only.test(sampleKey(s.id, c)));
    const results = new Map<string, (Sample | undefined)[]>();
    for (let r = 0; r < rounds; r++) {
      const offset = Math.floor((r * runs.length) / rounds);
      for (let i = 0; i < runs.length; i++) {
        const { s, c } = runs[(i + offset) % runs.length] as (typeof runs)[number];
        const key = sampleKey(s.id, c);
        let list = results.get(key);
        if (list === undefined) {
          list = Array.from({ length: rounds }, () => undefined);
          results.set(key, list);
        }
        try {
          const sample = await measure(s, c, budget);
          list[r] = sample;
          log(
            `round ${r + 1}/${rounds} ${String(i + 1).padStart(3)}/${runs.length} ${key.padEnd(26)} ` +
              `${sample.rps.toFixed(0).padStart(7)} req/s  p99 ${sample.p99Us.toFixed(0).padStart(7)} µs` +
              `  cpu ${sample.cpuUsPerReq.toFixed(0).padStart(5)} µs/req  rss ${(sample.rssBytes / 2 ** 20).toFixed(0)} MiB` +
              `${sample.errors > 0 ? `  errors ${sample.errors}` : ""}`,
          );
        } catch (err) {
          log(`round ${r + 1}/${rounds} ${key}: FAILED ${(err as Error).message}`);
        }
      }
    }

    // Memory and disk per data size.
    const scaleInfo: ScaleInfo[] = [];
    const redisMem = new Map<number, number>();
    for (const r of redisSizes) redisMem.set(r.size, r.afterLoad);
    scaleInfo.push({
      size: MAIN_OBJECTS,
      objects: loads[0]?.report.objects ?? 0,
      entries: loads[0]?.report.entries ?? 0,
      loadMs: loads[0]?.report.ms ?? Number.NaN,
      idleRss: idleRssMain,
      rss: rssBytes(odgm.child.pid),
      diskBytes: loads[0]?.diskAfterLoad ?? Number.NaN,
      redisUsedMemory: redisMem.get(MAIN_OBJECTS) ?? Number.NaN,
    });
    for (const s of scaled) {
      const l = loads.find((x) => x.size === s.size);
      scaleInfo.push({
        size: s.size,
        objects: l?.report.objects ?? 0,
        entries: l?.report.entries ?? 0,
        loadMs: l?.report.ms ?? Number.NaN,
        idleRss: s.idleRss,
        rss: rssBytes(s.child.pid),
        diskBytes: l?.diskAfterLoad ?? Number.NaN,
        redisUsedMemory: redisMem.get(s.size) ?? Number.NaN,
      });
    }

    // With --profile: stop the 1k node now so V8 writes its CPU profile, and summarize it.
    let profile: ProfileSummary | undefined;
    if (profileDir !== undefined) {
      await odgm.child.stop();
      const files = readdirSync(profileDir).filter((f) => f.endsWith(".cpuprofile"));
      const file = files[0];
      if (file !== undefined) {
        const cpu = JSON.parse(readFileSync(path.join(profileDir, file), "utf8"));
        profile = { buckets: profileShares(cpu), functions: topFunctions(cpu, 15) };
      } else {
        log("no CPU profile was written by odgm");
      }
    }

    const info: RunInfo = {
      mode,
      command: `npx -y pnpm@10.34.9 --filter @oprc/bench bench${process.argv
        .slice(2)
        .filter((a) => a !== "--")
        .map((a) => ` ${/^[\w@.=/:-]+$/.test(a) ? a : `'${a}'`}`)
        .join("")}`,
      date: new Date(started).toISOString(),
      machine,
      loadEnd: os.loadavg(),
      rounds,
      budget,
      concurrency: [...CONCURRENCY],
      mainObjects: MAIN_OBJECTS,
      scaleSizes,
      entriesPerObject: ENTRIES_PER_OBJECT,
      redis: redisAvailable() ? REDIS_SERVER : undefined,
      totalSeconds: (Date.now() - started) / 1000,
      only: args.only,
    };
    const doc = buildResultsMarkdown(info, results, scaleInfo, profile);
    writeFileSync(outFile, doc);
    process.stdout.write(`\n${doc}\n`);
    log(`wrote ${outFile} (load average now ${fmtLoad(info.loadEnd)})`);
  } finally {
    for (const c of closers) await Promise.resolve(c()).catch(() => {});
    for (const r of redises) await r.stop().catch(() => {});
    for (const c of children) await c.stop().catch(() => {});
    killAllChildren();
    cleanup();
  }
}

/** Checks that the data set answers as expected before anything is timed. */
async function verify(c: Client<typeof DataService>): Promise<void> {
  const v = await c.getValue({ ...base, objectId: 1n, keyStr: "f1" });
  if (v.value === undefined) throw new Error("GetValue of preloaded object 1 returned no value");
  const s = await c.getValue({ ...base, objectIdStr: "o1", keyStr: "f1" });
  if (s.value === undefined) throw new Error("GetValue of preloaded object o1 returned no value");
  const big = await c.get({ ...base, objectIdStr: BIG_OBJECT });
  const n = Object.keys(big.obj?.entriesStr ?? {}).length;
  if (n !== 256) throw new Error(`Get of ${BIG_OBJECT} returned ${n} entries, expected 256`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    killAllChildren();
    cleanup();
    process.exit(1);
  },
);
