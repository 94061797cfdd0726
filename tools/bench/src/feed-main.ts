// The change feed's cost and throughput: SetValue driven by h2load (64 in flight, one hot
// object) against two odgm children on RocksDB with WAL sync — one with the change feed on
// (the default), one with ODGM_CHANGEFEED=false — and, on the feed-on node, the same load
// while 1 and 100 gRPC watchers follow the feed. Per subject: writes/s, server CPU µs and
// bytes written to storage (/proc/<pid>/io) per write, and for watchers the change events
// delivered per second and whether every watcher received every write.
// Run: npx -y pnpm@10.34.9 bench:feed [-- --quick]   (from the repository root)
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { WatchService } from "@oprc/grpc-api";
import { encodeSetKeyRequest, grpcFrame, writeBodyFile } from "./body-files.js";
import { parseH2load } from "./generator-output.js";
import { startHarness } from "./harness.js";
import { fmtLoad, machineInfo } from "./machine.js";
import { odgmBin, odgmNodeFlags } from "./odgm-bin.js";
import { processCpuUs } from "./proc-stat.js";
import { type Child, startChild } from "./processes.js";
import { percentile, permutation } from "./stats.js";
import { ensureWritesTools, runTool } from "./system-tools.js";
import { fmt, renderTable } from "./table.js";

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
const REQUESTS = Number(args.requests ?? (quick ? 5_000 : 20_000));
if (!(ROUNDS >= 1 && REQUESTS >= 100)) throw new Error("bad --rounds/--requests");
const { command, outFile, tmp } = startHarness("feed", { quick, giveUpMinutes: quick ? 10 : 30 });

/** Bytes the process caused to be written to storage (`write_bytes` of /proc/<pid>/io). */
function writeBytes(pid: number): number {
  const m = /^write_bytes: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, "utf8"));
  return m === null ? Number.NaN : Number(m[1]);
}

async function startNode(
  name: string,
  feed: boolean,
): Promise<{ child: Child; url: string; port: number }> {
  const child = await startChild({
    name,
    command: process.execPath,
    args: [...odgmNodeFlags(), odgmBin()],
    env: {
      ODGM_DATA_DIR: path.join(tmp, name),
      ODGM_HTTP_HOST: "127.0.0.1",
      ODGM_HTTP_PORT: "0",
      ODGM_SYNC_WRITES: "true",
      ODGM_LOG_LEVEL: "info",
      ODGM_CHANGEFEED: String(feed),
      ODGM_COLLECTION: JSON.stringify([{ name: "bench", partitionCount: 1 }]),
    },
    ready: /"url":"(http:\/\/127\.0\.0\.1:(\d+))"/,
  });
  return { child, url: child.ready[1] as string, port: Number(child.ready[2]) };
}

interface Sample {
  readonly rps: number;
  readonly cpuUs: number;
  readonly bytes: number;
  /** Change events delivered per second over all watchers. */
  readonly eventsPerS: number;
  /** Every watcher received every write of the run. */
  readonly complete: boolean;
  /** Seconds from the last write's answer until every watcher had it (or 120 s passed). */
  readonly catchUpS: number;
}

async function run(
  node: { child: Child; url: string; port: number },
  body: string,
  watchers: number,
): Promise<Sample> {
  const ac = new AbortController();
  const received = new Array<number>(watchers).fill(0);
  const opened: Promise<void>[] = [];
  // Watchers: a few HTTP/2 sessions (a session carries up to 1,000 streams), each watch from now.
  const sessions = Array.from({ length: Math.max(1, Math.ceil(watchers / 50)) }, () =>
    createClient(WatchService, createGrpcTransport({ baseUrl: node.url })),
  );
  const streams = Array.from({ length: watchers }, async (_, i) => {
    const watch = sessions[i % sessions.length] as (typeof sessions)[0];
    let confirmed!: () => void;
    opened.push(new Promise<void>((r) => (confirmed = r)));
    try {
      for await (const m of watch.watch({ clsId: "bench" }, { signal: ac.signal })) {
        if (m.event.case === "change") received[i] = (received[i] ?? 0) + 1;
        else confirmed();
      }
    } catch {
      // aborted at the end
    }
  });
  await Promise.all(opened);
  const pid = node.child.pid;
  const cpu0 = processCpuUs(pid);
  const io0 = writeBytes(pid);
  const t0 = performance.now();
  const out = await runTool(
    "h2load",
    [
      "-n",
      String(REQUESTS),
      "-c",
      "1",
      "-m",
      "64",
      "-t",
      "1",
      "-d",
      body,
      "-H",
      "content-type: application/grpc",
      "-H",
      "te: trailers",
      `http://127.0.0.1:${node.port}/oprc.DataService/SetValue`,
    ],
    { timeoutMs: 600_000 },
  );
  const cpu1 = processCpuUs(pid);
  const io1 = writeBytes(pid);
  const s = parseH2load(out.stdout);
  if (s.succeeded !== REQUESTS || s.dataBytes !== 5 * REQUESTS) {
    throw new Error(`h2load: not every SetValue succeeded:\n${out.stdout.slice(-600)}`);
  }
  // Let the watchers catch up (bounded: 120 s), then stop them.
  const tWrites = performance.now();
  for (let i = 0; i < 2_400 && received.some((r) => r < REQUESTS); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const seconds = (performance.now() - t0) / 1000;
  const catchUpS = (performance.now() - tWrites) / 1000;
  ac.abort();
  await Promise.all(streams);
  const delivered = received.reduce((a, b) => a + b, 0);
  return {
    rps: s.rps,
    cpuUs: (cpu1 - cpu0) / REQUESTS,
    bytes: (io1 - io0) / REQUESTS,
    eventsPerS: watchers === 0 ? Number.NaN : delivered / seconds,
    complete: received.every((r) => r === REQUESTS),
    catchUpS: watchers === 0 ? Number.NaN : catchUpS,
  };
}

async function main(): Promise<void> {
  const machine = machineInfo();
  ensureWritesTools((msg) => process.stdout.write(`${msg}\n`));
  const body = path.join(tmp, "set.bin");
  writeBodyFile(body, [
    grpcFrame(
      encodeSetKeyRequest({
        collection: "bench",
        partition: 0,
        objectId: 1n,
        key: "f0",
        value: new TextEncoder().encode("abcdefghijklmnop"),
      }),
    ),
  ]);
  const on = await startNode("feed-on", true);
  const off = await startNode("feed-off", false);
  const subjects: [string, () => Promise<Sample>][] = [
    ["feed off", () => run(off, body, 0)],
    ["feed on", () => run(on, body, 0)],
    ["feed on, 1 watcher", () => run(on, body, 1)],
    ["feed on, 100 watchers", () => run(on, body, 100)],
  ];
  const results = new Map<string, Sample[]>(subjects.map(([n]) => [n, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const i of permutation(subjects.length, round + 7)) {
        const [name, fn] = subjects[i] as (typeof subjects)[0];
        const sample = await fn();
        results.get(name)?.push(sample);
        process.stdout.write(
          `round ${round + 1} ${name}: ${fmt(sample.rps)} writes/s, ${fmt(sample.cpuUs)} µs CPU/write\n`,
        );
      }
    }
  } finally {
    await on.child.stop();
    await off.child.stop();
  }
  const med = (name: string, f: (s: Sample) => number) =>
    percentile((results.get(name) ?? []).map(f), 50);
  const offRps = med("feed off", (s) => s.rps);
  const offCpu = med("feed off", (s) => s.cpuUs);
  const table = renderTable(
    [
      "subject",
      "writes/s",
      "vs feed off",
      "µs CPU/write",
      "vs feed off",
      "bytes written/write",
      "events/s delivered",
      "every watcher got every write",
      "s to catch up after the last write",
    ],
    subjects.map(([name]) => [
      name,
      fmt(med(name, (s) => s.rps)),
      `${(med(name, (s) => s.rps) / offRps).toFixed(2)}×`,
      fmt(med(name, (s) => s.cpuUs)),
      `${(med(name, (s) => s.cpuUs) / offCpu).toFixed(2)}×`,
      fmt(med(name, (s) => s.bytes)),
      fmt(med(name, (s) => s.eventsPerS)),
      name.includes("watcher") ? String((results.get(name) ?? []).every((s) => s.complete)) : "–",
      name.includes("watcher") ? med(name, (s) => s.catchUpS).toFixed(1) : "–",
    ]),
  );
  const md = [
    "# Change feed: write cost and delivery",
    "",
    `Command: \`${command}\` — ${ROUNDS} round(s) of ${REQUESTS} SetValue calls per subject (h2load, 64 in flight, one hot object, WAL synced), medians.`,
    `Machine: ${machine.cores} × ${machine.cpuModel}, Node ${machine.node}, load ${fmtLoad(machine.loadStart)} at the start, ${fmtLoad(os.loadavg())} at the end.`,
    "",
    "Watchers are connect-node clients in the harness process, on the same cores (their CPU is not the server's, but they compete with it); events/s counts from the first write until every watcher had every write.",
    "Bytes written come from the server's /proc/<pid>/io `write_bytes` (WAL and flushes).",
    "",
    table,
  ].join("\n");
  writeFileSync(outFile, `${md}\n`);
  process.stdout.write(`\n${md}\nwrote ${outFile}\n`);
}

await main();
process.exit(0);
