// Zenoh next to gRPC on one node, same run: entry get and acknowledged set through the
// loopback Zenoh router (zenoh-ts client → router → odgm's queryable) and the same
// operations as gRPC GetValue / SetValue. Both sides are driven by Node clients in this
// process (no C Zenoh client is installable here), so the figures to read are the server's
// CPU per request from /proc (odgm, and the router for the Zenoh hop) and the ratios.
// Run: npx -y pnpm@10.34.9 --filter @oprc/bench bench:zenoh [-- --quick]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { Config, Duration, open, type Session } from "@eclipse-zenoh/zenoh-ts";
import { ValDataSchema } from "@oprc/grpc-api";
import { grpcClient } from "./clients.js";
import { fmtLoad, machineInfo } from "./machine.js";
import { odgmBin, odgmNodeFlags } from "./odgm-bin.js";
import { processCpuUs } from "./proc-stat.js";
import { type Child, startChild } from "./processes.js";
import { percentile, permutation } from "./stats.js";
import { fmt, renderTable } from "./table.js";

const { values: args } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    quick: { type: "boolean", default: false },
    rounds: { type: "string" },
    "window-ms": { type: "string" },
    inflight: { type: "string" },
  },
  strict: true,
});
const quick = args.quick;
const ROUNDS = Number(args.rounds ?? (quick ? 1 : 3));
const WINDOW_MS = Number(args["window-ms"] ?? (quick ? 1000 : 3000));
const INFLIGHT = Number(args.inflight ?? 16);
const WARMUP_MS = 300;
if (!(ROUNDS >= 1 && WINDOW_MS >= 100 && INFLIGHT >= 1)) {
  throw new Error("bad --rounds/--window-ms/--inflight");
}
const PKG = fileURLToPath(new URL("..", import.meta.url));
const outFile = path.join(PKG, quick ? "RESULTS-zenoh.quick.md" : "RESULTS-zenoh.md");
const command = `npx -y pnpm@10.34.9 --filter @oprc/bench bench:zenoh${quick ? " --quick" : ""}`;

const watchdog = setTimeout(
  () => {
    process.stderr.write("bench:zenoh: gave up\n");
    process.exit(3);
  },
  (quick ? 5 : 20) * 60_000,
);
watchdog.unref();

const VALUE = toBinary(
  ValDataSchema,
  create(ValDataSchema, { data: new TextEncoder().encode("abcdefghijklmnop") }),
);
const KEY_OBJ = "oprc/bench/0/sobjects/o/values/k";

async function startRouter(): Promise<Child> {
  return startChild({
    name: "zenoh-router",
    command: process.execPath,
    args: [
      "--experimental-transform-types",
      "--no-warnings",
      "--import",
      createRequire(import.meta.url).resolve("@oprc/test-config/ts-hooks"),
      fileURLToPath(new URL("../../zenoh-router/src/cli.ts", import.meta.url)),
    ],
    ready: /"port":(\d+)/,
  });
}

async function startOdgm(dataDir: string, routerPort: number): Promise<Child> {
  return startChild({
    name: "odgm",
    command: process.execPath,
    args: [...odgmNodeFlags(), odgmBin()],
    env: {
      ODGM_DATA_DIR: dataDir,
      ODGM_HTTP_HOST: "127.0.0.1",
      ODGM_HTTP_PORT: "0",
      ODGM_LOG_LEVEL: "info",
      ODGM_ZENOH_ENDPOINT: `ws/127.0.0.1:${routerPort}`,
      ODGM_COLLECTION: JSON.stringify([{ name: "bench", partitionCount: 1 }]),
    },
    ready: /"url":"(http:\/\/127\.0\.0\.1:\d+)"/,
  });
}

/** One Zenoh query; rejects on an error reply or no reply. */
async function zget(session: Session, key: string, payload?: Uint8Array): Promise<void> {
  const receiver = await session.get(key, {
    ...(payload === undefined ? {} : { payload }),
    timeout: Duration.milliseconds.of(10_000),
  });
  let ok = false;
  for await (const reply of receiver ?? []) {
    const r = reply.result();
    if (!("kind" in r)) throw new Error(`${key}: ${r.payload().toString()}`);
    ok = true;
  }
  if (!ok) throw new Error(`${key}: no reply`);
}

interface Measured {
  readonly reqPerS: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly odgmUsPerReq: number;
  readonly routerUsPerReq: number;
}

/** Closed loop of INFLIGHT workers for a warm-up then a window; server CPU over the window. */
async function measure(op: () => Promise<void>, odgm: Child, router: Child): Promise<Measured> {
  let measuring = false;
  let stop = false;
  const lat: number[] = [];
  const worker = async () => {
    while (!stop) {
      const t = performance.now();
      await op();
      if (measuring) lat.push(performance.now() - t);
    }
  };
  const workers = Array.from({ length: INFLIGHT }, worker);
  await new Promise((r) => setTimeout(r, WARMUP_MS));
  const cpu0 = [processCpuUs(odgm.pid), processCpuUs(router.pid)] as const;
  const t0 = performance.now();
  measuring = true;
  await new Promise((r) => setTimeout(r, WINDOW_MS));
  measuring = false;
  const seconds = (performance.now() - t0) / 1000;
  const cpu1 = [processCpuUs(odgm.pid), processCpuUs(router.pid)] as const;
  stop = true;
  await Promise.all(workers);
  const n = lat.length;
  return {
    reqPerS: n / seconds,
    p50Ms: percentile(lat, 50),
    p99Ms: percentile(lat, 99),
    odgmUsPerReq: (cpu1[0] - cpu0[0]) / n,
    routerUsPerReq: (cpu1[1] - cpu0[1]) / n,
  };
}

const median = (xs: number[]): number => percentile(xs, 50);

async function main(): Promise<void> {
  const m = machineInfo();
  const dir = mkdtempSync(path.join(os.tmpdir(), "odgm-bench-zenoh-"));
  const router = await startRouter();
  const routerPort = Number(router.ready[1]);
  const odgm = await startOdgm(dir, routerPort);
  const url = odgm.ready[1] as string;
  try {
    // Zenoh is up once /readyz says so.
    for (let i = 0; ; i++) {
      const body = (await (await fetch(`${url}/readyz`)).json()) as { zenoh?: string };
      if (body.zenoh === "up") break;
      if (i > 300) throw new Error("odgm never connected to the router");
      await new Promise((r) => setTimeout(r, 100));
    }
    const session = await open(new Config(`ws/127.0.0.1:${routerPort}`, 10_000));
    const grpc = grpcClient(url);
    const ref = { clsId: "bench", objectIdStr: "o", keyStr: "k" };
    await grpc.setValue({ ...ref, value: { data: new TextEncoder().encode("abcdefghijklmnop") } });

    const subjects: Record<string, () => Promise<void>> = {
      "zenoh get value": () => zget(session, KEY_OBJ),
      "gRPC GetValue": async () => {
        await grpc.getValue(ref);
      },
      "zenoh set value (ack'd query)": () => zget(session, `${KEY_OBJ}/set`, VALUE),
      "gRPC SetValue": async () => {
        await grpc.setValue({ ...ref, value: { data: VALUE.subarray(2) } });
      },
    };
    const names = Object.keys(subjects);
    const results = new Map<string, Measured[]>(names.map((n) => [n, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const i of permutation(names.length, round + 1)) {
        const name = names[i] as string;
        const m = await measure(subjects[name] as () => Promise<void>, odgm, router);
        results.get(name)?.push(m);
        process.stdout.write(
          `round ${round + 1} ${name}: ${fmt(m.reqPerS)} req/s, odgm ${fmt(m.odgmUsPerReq)} µs/req\n`,
        );
      }
    }
    await session.close();

    const row = (name: string) => {
      const ms = results.get(name) ?? [];
      return {
        reqPerS: median(ms.map((m) => m.reqPerS)),
        p50: median(ms.map((m) => m.p50Ms)),
        p99: median(ms.map((m) => m.p99Ms)),
        odgm: median(ms.map((m) => m.odgmUsPerReq)),
        router: median(ms.map((m) => m.routerUsPerReq)),
      };
    };
    const table = renderTable(
      ["subject", "req/s", "p50 ms", "p99 ms", "odgm µs CPU/req", "router µs CPU/req"],
      names.map((n) => {
        const r = row(n);
        const zenoh = n.startsWith("zenoh");
        return [
          n,
          fmt(r.reqPerS),
          r.p50.toFixed(2),
          r.p99.toFixed(2),
          fmt(r.odgm),
          zenoh ? fmt(r.router) : "–",
        ];
      }),
    );
    const ratio = (a: string, b: string) => {
      const x = row(a);
      const y = row(b);
      return `${a} / ${b}: ${(x.reqPerS / y.reqPerS).toFixed(2)}× req/s, ${(x.odgm / y.odgm).toFixed(2)}× odgm CPU per request`;
    };
    const md = [
      "# Zenoh next to gRPC, one node",
      "",
      `Command: \`${command}\` — ${ROUNDS} round(s), ${WINDOW_MS} ms windows, ${INFLIGHT} requests in flight, medians over rounds.`,
      `Machine: ${m.cores} × ${m.cpuModel}, Node ${m.node}, load ${fmtLoad(m.loadStart)} at the start, ${fmtLoad(os.loadavg())} at the end.`,
      "",
      "Both protocols are driven from Node clients in the harness process (zenoh-ts 1.10.1 through",
      "the loopback test router `@oprc/zenoh-router`, connect-node for gRPC), so read the server CPU",
      "per request and the ratios, not the absolute rates. The router is a Node process too; a real",
      "zenohd would cost less per hop.",
      "",
      table,
      "",
      `- ${ratio("zenoh get value", "gRPC GetValue")}`,
      `- ${ratio("zenoh set value (ack'd query)", "gRPC SetValue")}`,
      "",
    ].join("\n");
    writeFileSync(outFile, md);
    process.stdout.write(`\n${md}\nwrote ${outFile}\n`);
  } finally {
    await odgm.stop();
    await router.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
