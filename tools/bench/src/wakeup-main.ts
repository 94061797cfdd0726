// bench:wakeup — what a hop between threads or processes costs when the other side was
// asleep. A write at one request in flight crosses many such hops (client → leader, leader
// → its RocksDB write thread and back, leader → followers → their write threads → back…),
// and between two writes every one of those threads has gone idle. Measured: the round trip
// of a small message to a worker thread (postMessage, as the RocksDB write worker) and to a
// child process over loopback TCP (as a Raft peer), sent back to back (the baseline: the
// other side is still running) and after the sender slept 1 or 5 ms (the other side parked).
// Each figure is reported as a ratio to the back-to-back round trip of the same run. For the
// worker, the postMessage call itself is timed too: waking a parked thread is paid partly by
// the sender, synchronously.
import { type ChildProcess, spawn } from "node:child_process";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { percentile } from "./stats.js";

const { values: args } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: { samples: { type: "string" }, rounds: { type: "string" } },
  strict: true,
});
const SAMPLES = Number(args.samples ?? 400);
const ROUNDS = Number(args.rounds ?? 3);
if (!(SAMPLES >= 10 && ROUNDS >= 1)) throw new Error("bad --samples/--rounds");
const GAPS_MS = [0, 1, 5];

/** One request/answer round trip; resolves when the answer is back. */
type RoundTrip = () => Promise<void>;

/** How long each worker `postMessage` call itself took, µs (the sender's share of a wake-up). */
let postCalls: number[] = [];

function workerRoundTrip(): { rt: RoundTrip; close(): Promise<number> } {
  const w = new Worker(
    `const { parentPort } = require("node:worker_threads");
     parentPort.on("message", (m) => parentPort.postMessage({ id: m.id }));`,
    { eval: true },
  );
  let answer: () => void = () => undefined;
  w.on("message", () => answer());
  return {
    rt: () =>
      new Promise((resolve) => {
        answer = resolve;
        const buf = new Uint8Array(128);
        const t0 = performance.now();
        w.postMessage({ id: 1, buf: buf.buffer }, [buf.buffer]);
        postCalls.push((performance.now() - t0) * 1000);
      }),
    close: () => w.terminate(),
  };
}

/** A child process echoing every byte back over loopback TCP. */
async function processRoundTrip(): Promise<{ rt: RoundTrip; close(): void }> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      "-e",
      `const s = require("node:net").createServer((c) => { c.setNoDelay(true); c.on("data", (d) => c.write(d)); });
       s.listen(0, "127.0.0.1", () => console.log(s.address().port));`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.once("data", (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once("exit", (code) => reject(new Error(`echo child exited (${code})`)));
  });
  const sock = net.connect(port, "127.0.0.1");
  sock.setNoDelay(true);
  await new Promise<void>((resolve) => sock.once("connect", () => resolve()));
  let answer: () => void = () => undefined;
  sock.on("data", () => answer());
  const msg = Buffer.alloc(128, 1);
  return {
    rt: () =>
      new Promise((resolve) => {
        answer = resolve;
        sock.write(msg);
      }),
    close: () => {
      sock.destroy();
      child.kill();
    },
  };
}

/** Round trips in µs, each after sleeping `gapMs` (0: back to back). */
async function sample(rt: RoundTrip, gapMs: number): Promise<number[]> {
  for (let i = 0; i < 100; i++) await rt(); // warm up
  const out: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    if (gapMs > 0) await sleep(gapMs);
    const t0 = performance.now();
    await rt();
    out.push((performance.now() - t0) * 1000);
  }
  return out;
}

async function main(): Promise<void> {
  const worker = workerRoundTrip();
  const proc = await processRoundTrip();
  const hops = [
    { name: "worker thread (postMessage)", rt: worker.rt },
    { name: "child process (loopback TCP)", rt: proc.rt },
  ];
  const rows: string[] = [];
  try {
    for (const hop of hops) {
      const p50s = new Map<number, number[]>(GAPS_MS.map((g) => [g, []]));
      const p90s = new Map<number, number[]>(GAPS_MS.map((g) => [g, []]));
      const callP50s = new Map<number, number[]>(GAPS_MS.map((g) => [g, []]));
      for (let round = 0; round < ROUNDS; round++) {
        for (const gap of GAPS_MS) {
          postCalls = [];
          const s = await sample(hop.rt, gap);
          p50s.get(gap)?.push(percentile(s, 50));
          p90s.get(gap)?.push(percentile(s, 90));
          // the measured samples' calls (the warm-up's come first)
          callP50s.get(gap)?.push(percentile(postCalls.slice(-SAMPLES), 50));
        }
      }
      const base = percentile(p50s.get(0) ?? [], 50);
      for (const gap of GAPS_MS) {
        const p50 = percentile(p50s.get(gap) ?? [], 50);
        const p90 = percentile(p90s.get(gap) ?? [], 50);
        const call = percentile(callP50s.get(gap) ?? [], 50);
        rows.push(
          `| ${hop.name} | ${gap === 0 ? "back to back" : `after ${gap} ms idle`} | ${p50.toFixed(0)} | ${p90.toFixed(0)} | ${(p50 / base).toFixed(2)}× | ${Number.isNaN(call) ? "" : call.toFixed(0)} |`,
        );
      }
    }
  } finally {
    await worker.close();
    proc.close();
  }
  process.stdout.write(
    [
      `bench:wakeup: ${SAMPLES} round trips per cell, median of ${ROUNDS} rounds, node ${process.version}`,
      "",
      "| hop | sent | p50 µs | p90 µs | p50 / back to back | postMessage call p50 µs |",
      "|---|---|---:|---:|---:|---:|",
      ...rows,
      "",
    ].join("\n"),
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:wakeup failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
