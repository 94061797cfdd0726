// bench:wakeup — what a hop between threads or processes costs when the other side was
// asleep. A write at one request in flight crosses many such hops (client → leader, leader
// → its RocksDB write thread and back, leader → followers → their write threads → back…),
// and between two writes every one of those threads has gone idle. Measured: the round trip
// of a small message to a worker thread (postMessage, as the RocksDB write worker) and to a
// child process over loopback TCP (as a Raft peer), sent back to back (the baseline: the
// other side is still running) and after the sender slept 1 or 5 ms (the other side parked).
// Each figure is reported as a ratio to the back-to-back round trip of the same run. The send
// call itself (postMessage, socket write) is timed too: waking a parked receiver is paid
// partly by the sender, synchronously.
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

/**
 * One request/answer round trip; resolves when the whole answer is back, with how long the
 * send call itself took (µs): waking a parked receiver is paid partly by the sender.
 */
type RoundTrip = () => Promise<number>;

const MESSAGE_BYTES = 128;

/** Times the synchronous send `send()`; returns µs. */
function timed(send: () => void): number {
  const t0 = performance.now();
  send();
  return (performance.now() - t0) * 1000;
}

function workerRoundTrip(): { rt: RoundTrip; close(): Promise<number> } {
  const w = new Worker(
    `const { parentPort } = require("node:worker_threads");
     parentPort.on("message", (m) => parentPort.postMessage({ id: m.id }));`,
    { eval: true },
  );
  let answer: () => void = () => undefined;
  w.on("message", () => answer());
  return {
    rt: async () => {
      const answered = new Promise<void>((resolve) => {
        answer = resolve;
      });
      const buf = new Uint8Array(MESSAGE_BYTES);
      const sendUs = timed(() => w.postMessage({ id: 1, buf: buf.buffer }, [buf.buffer]));
      await answered;
      return sendUs;
    },
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
  // The echo may arrive in pieces: a round trip ends with its last byte.
  let missing = 0;
  let answer: () => void = () => undefined;
  sock.on("data", (d: Buffer) => {
    missing -= d.length;
    if (missing <= 0) answer();
  });
  const msg = Buffer.alloc(MESSAGE_BYTES, 1);
  return {
    rt: async () => {
      const answered = new Promise<void>((resolve) => {
        answer = resolve;
      });
      missing = MESSAGE_BYTES;
      const sendUs = timed(() => sock.write(msg));
      await answered;
      return sendUs;
    },
    close: () => {
      sock.destroy();
      child.kill();
    },
  };
}

/** Round trips and send calls in µs, each round trip after sleeping `gapMs` (0: back to back). */
async function sample(rt: RoundTrip, gapMs: number): Promise<{ rtt: number[]; send: number[] }> {
  for (let i = 0; i < 100; i++) await rt(); // warm up
  const rtt: number[] = [];
  const send: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    if (gapMs > 0) await sleep(gapMs);
    const t0 = performance.now();
    send.push(await rt());
    rtt.push((performance.now() - t0) * 1000);
  }
  return { rtt, send };
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
      // Per gap, each round's p50 and p90 round trip and p50 send call; the median over rounds.
      const perRound = new Map<number, Record<"p50" | "p90" | "send", number[]>>(
        GAPS_MS.map((g) => [g, { p50: [], p90: [], send: [] }]),
      );
      for (let round = 0; round < ROUNDS; round++) {
        for (const gap of GAPS_MS) {
          const { rtt, send } = await sample(hop.rt, gap);
          const cell = perRound.get(gap);
          cell?.p50.push(percentile(rtt, 50));
          cell?.p90.push(percentile(rtt, 90));
          cell?.send.push(percentile(send, 50));
        }
      }
      const median = (gap: number, k: "p50" | "p90" | "send"): number =>
        percentile(perRound.get(gap)?.[k] ?? [], 50);
      const base = median(0, "p50");
      for (const gap of GAPS_MS) {
        const p50 = median(gap, "p50");
        rows.push(
          `| ${hop.name} | ${gap === 0 ? "back to back" : `after ${gap} ms idle`} | ${p50.toFixed(0)} | ${median(gap, "p90").toFixed(0)} | ${(p50 / base).toFixed(2)}× | ${median(gap, "send").toFixed(0)} |`,
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
      "| hop | sent | p50 µs | p90 µs | p50 / back to back | send call p50 µs |",
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
