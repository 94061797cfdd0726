// bench:idle — what raft partitions cost a cluster at rest. Three odgm nodes on loopback
// start with one raft collection of N partitions (three replicas each) and nothing is
// written; once every node is ready and a settling pause has passed, the CPU the three
// processes use over a window is read from /proc, with their resident memory. Then the
// nodes are stopped (SIGTERM) and started again on the same data, timed until every one
// answers /readyz. N = 0 (the metadata group alone) is the baseline each other count is
// reported against, measured in the same round; rounds run the counts in a fresh order.
// Run: npx -y pnpm@10.34.9 bench:idle [-- --quick] [-- --partitions 0,256,1024]
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { startHarness } from "./harness.js";
import { fmtLoad, machineInfo } from "./machine.js";
import { checkComm, clusterMemberEnv, odgmBin, odgmNodeFlags } from "./odgm-bin.js";
import { processCpuUs } from "./proc-stat.js";
import { type Child, rssBytes, startChild } from "./processes.js";
import { freePort } from "./redis.js";
import { percentile, permutation } from "./stats.js";
import { fmt, renderTable } from "./table.js";

const { values: args } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    quick: { type: "boolean", default: false },
    rounds: { type: "string" },
    partitions: { type: "string" },
    "settle-ms": { type: "string" },
    "window-ms": { type: "string" },
    // Extra settings for every node, e.g. `ODGM_RAFT_TICK_MS=500` (space-separated).
    env: { type: "string" },
  },
  strict: true,
});
const quick = args.quick;
const ROUNDS = Number(args.rounds ?? (quick ? 1 : 2));
const COUNTS = (args.partitions ?? (quick ? "0,64" : "0,256,1024")).split(",").map(Number);
const SETTLE_MS = Number(args["settle-ms"] ?? (quick ? 3000 : 20_000));
const WINDOW_MS = Number(args["window-ms"] ?? (quick ? 2000 : 10_000));
const EXTRA_ENV = Object.fromEntries(
  (args.env ?? "")
    .split(" ")
    .filter((kv) => kv.includes("="))
    .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
);
if (
  !(ROUNDS >= 1 && SETTLE_MS >= 0 && WINDOW_MS >= 500) ||
  COUNTS[0] !== 0 ||
  !COUNTS.every((n) => Number.isSafeInteger(n) && n >= 0)
) {
  throw new Error("bad --rounds/--settle-ms/--window-ms, or --partitions not starting with 0");
}
const { command, outFile, tmp } = startHarness("idle", { quick, giveUpMinutes: quick ? 10 : 40 });

interface Sample {
  /** CPU of the three processes, ms per second of the window. */
  readonly cpuMsPerS: number;
  /** Resident memory per node, MB (mean of the three). */
  readonly rssMb: number;
  /** From the start of the three processes on existing data until all answer /readyz 200. */
  readonly restartS: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (at most 5 min) until every URL answers `/readyz` with 200. */
async function allReady(urls: readonly string[]): Promise<void> {
  for (const deadline = Date.now() + 300_000; Date.now() < deadline; await sleep(50)) {
    const ok = await Promise.all(
      urls.map((u) =>
        fetch(`${u}/readyz`).then(
          (r) => r.ok,
          () => false,
        ),
      ),
    );
    if (ok.every(Boolean)) return;
  }
  throw new Error("the cluster did not become ready in 5 minutes");
}

/** Three nodes holding `partitions` raft partitions; started, measured at rest, restarted. */
async function measure(partitions: number, round: number): Promise<Sample> {
  const ports = [await freePort(), await freePort(), await freePort()];
  const members = ports.map((p, i) => `${i + 1}=http://127.0.0.1:${p}`).join(",");
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  const collections =
    partitions === 0
      ? []
      : [{ name: "idle", partitionCount: partitions, replicaCount: 3, shardType: "raft" }];
  const start = () =>
    Promise.all(
      ports.map(async (port, i): Promise<Child> => {
        const dataDir = path.join(tmp, `r${round}-p${partitions}-node-${i + 1}`);
        mkdirSync(dataDir, { recursive: true });
        const child = await startChild({
          name: `odgm-${i + 1}`,
          command: process.execPath,
          args: [...odgmNodeFlags(), odgmBin()],
          env: {
            ...clusterMemberEnv(i + 1, members, dataDir, port),
            ODGM_LOG_LEVEL: "info",
            ODGM_COLLECTION: JSON.stringify(collections),
            ...EXTRA_ENV,
          },
          ready: /odgm listening/,
          timeoutMs: 120_000,
        });
        checkComm(child.pid, "node");
        return child;
      }),
    );
  let nodes = await start();
  try {
    await allReady(urls);
    await sleep(SETTLE_MS);
    const cpu0 = nodes.map((n) => processCpuUs(n.pid));
    const t0 = performance.now();
    await sleep(WINDOW_MS);
    const cpuUs = nodes.reduce((sum, n, i) => sum + processCpuUs(n.pid) - (cpu0[i] as number), 0);
    const cpuMsPerS = cpuUs / (performance.now() - t0);
    const rssMb = nodes.reduce((sum, n) => sum + rssBytes(n.pid), 0) / 3 / 2 ** 20;
    await Promise.all(nodes.map((n) => n.stop()));
    const t1 = performance.now();
    nodes = await start();
    await allReady(urls);
    return { cpuMsPerS, rssMb, restartS: (performance.now() - t1) / 1000 };
  } finally {
    await Promise.all(nodes.map((n) => n.stop()));
  }
}

const machine = machineInfo();
const results = new Map<number, Sample[]>(COUNTS.map((n) => [n, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const i of permutation(COUNTS.length, round + 11)) {
    const n = COUNTS[i] as number;
    const s = await measure(n, round);
    results.get(n)?.push(s);
    process.stdout.write(
      `round ${round + 1}, ${n} partitions: ${fmt(s.cpuMsPerS)} ms/s of CPU, ${fmt(s.rssMb)} MB per node, ready ${s.restartS.toFixed(1)} s after a restart\n`,
    );
  }
}
const med = (n: number, f: (s: Sample) => number) => percentile((results.get(n) ?? []).map(f), 50);
/** The median of the rounds' figures, and their range when there are several. */
const spread = (n: number, f: (s: Sample) => number, show: (x: number) => string) => {
  const xs = (results.get(n) ?? []).map(f);
  const range = xs.length > 1 ? ` (${show(Math.min(...xs))}–${show(Math.max(...xs))})` : "";
  return `${show(med(n, f))}${range}`;
};
const base = med(0, (s) => s.cpuMsPerS);
const table = renderTable(
  [
    "raft partitions",
    "CPU ms/s (3 nodes)",
    "vs metadata only",
    "ms/s per partition",
    "MB per node",
    "s to ready after a restart",
  ],
  COUNTS.map((n) => {
    const cpu = med(n, (s) => s.cpuMsPerS);
    return [
      n === 0 ? "0 (metadata group only)" : String(n),
      spread(n, (s) => s.cpuMsPerS, fmt),
      `${(cpu / base).toFixed(2)}×`,
      n === 0 ? "–" : ((cpu - base) / n).toFixed(3),
      fmt(med(n, (s) => s.rssMb)),
      spread(
        n,
        (s) => s.restartS,
        (x) => x.toFixed(1),
      ),
    ];
  }),
);
const md = [
  "# Raft partitions at rest",
  "",
  `Command: \`${command}\` — ${ROUNDS} round(s), medians (nearest rank: the lower of two) and ranges; three nodes on loopback, nothing written, CPU over ${WINDOW_MS / 1000} s after ${SETTLE_MS / 1000} s of rest (utime + stime of the three processes from /proc).${Object.keys(EXTRA_ENV).length > 0 ? ` Settings: ${args.env}.` : ""}`,
  `Machine: ${machine.cores} × ${machine.cpuModel}, Node ${machine.node}, load ${fmtLoad(machine.loadStart)} at the start, ${fmtLoad(os.loadavg())} at the end.`,
  "",
  table,
].join("\n");
writeFileSync(outFile, `${md}\n`);
process.stdout.write(`\n${md}\nwrote ${outFile}\n`);
process.exit(0);
