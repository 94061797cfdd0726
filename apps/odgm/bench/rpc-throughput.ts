// Unary RPC throughput against real servers, each in its own process, driven by one raw
// node:http2 client (pre-encoded gRPC frames, so differences are server-side) at 1 and 64
// requests in flight on one HTTP/2 connection. Baseline: a raw node:http2 server answering
// every call with a fixed empty gRPC response. Run:
//   node --conditions=@oprc/source --experimental-transform-types --no-warnings \
//     --import @oprc/test-config/ts-hooks bench/rpc-throughput.ts [seconds-per-case]
// (from apps/odgm). ODGM_BENCH_PROFILE=1 also writes a CPU profile of the sync-off odgm
// server to bench/profiles/.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { connect as http2Connect } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { DataService, ValDataSchema } from "@oprc/grpc-api";
import { odgmCommand } from "../test/fixtures/odgm-process.js";

const seconds = Number(process.argv[2] ?? 3);

async function startProcess(command: string, args: string[], env: Record<string, string>) {
  const child: ChildProcess = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /"url":"(http:\/\/[^"]+)"/.exec(out);
      if (m?.[1] !== undefined) resolve(m[1]);
    });
    child.on("exit", (code) => reject(new Error(`server exited ${code}: ${out}`)));
  });
  child.stdout?.resume();
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        child.on("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

type Call = (i: number) => Promise<unknown>;

/** gRPC length-prefixed frames of `n` requests built by `init(i)`. */
function frames<I extends DescMessage>(
  schema: I,
  n: number,
  init: (i: number) => MessageInitShape<I>,
): Buffer[] {
  return Array.from({ length: n }, (_, i) => {
    const body = toBinary(schema, create(schema, init(i)));
    const out = Buffer.alloc(5 + body.length);
    out.writeUInt32BE(body.length, 1);
    out.set(body, 5);
    return out;
  });
}

/** A raw HTTP/2 gRPC caller on one session: `call(path, frame)` resolves on grpc-status 0. */
function rawClient(url: string) {
  const session = http2Connect(url);
  const call = (path: string, frame: Buffer): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc",
        te: "trailers",
      });
      req.on("data", () => {});
      req.on("trailers", (t) => {
        if (t["grpc-status"] === "0") resolve();
        else reject(new Error(`grpc-status ${t["grpc-status"]}: ${t["grpc-message"]}`));
      });
      req.on("error", reject);
      req.end(frame);
    });
  return { call, close: () => session.close() };
}

/** Requests per second with `concurrency` calls in flight, for `seconds`. */
async function measure(call: Call, concurrency: number): Promise<number> {
  for (let i = 0; i < 200; i++) await call(i); // warm-up
  let done = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = w; performance.now() < deadline; i += concurrency) {
        await call(i);
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

const value = create(ValDataSchema, { data: new TextEncoder().encode('{"n":1}') });

async function benchOdgm(sync: boolean, profile: boolean, fastPath = true) {
  const dir = await mkdtemp(join(tmpdir(), "odgm-bench-"));
  const { command, args } = odgmCommand();
  const profDir = fileURLToPath(new URL("./profiles", import.meta.url));
  const server = await startProcess(
    command,
    profile ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`, ...args] : args,
    {
      ODGM_HTTP_HOST: "127.0.0.1",
      ODGM_HTTP_PORT: "0",
      ODGM_DATA_DIR: dir,
      ODGM_SYNC_WRITES: String(sync),
      ODGM_GRPC_FAST_PATH: String(fastPath),
      ODGM_LOG_LEVEL: "info",
    },
  );
  const client = rawClient(server.url);
  const caps = frames(DataService.method.capabilities.input, 1, () => ({}));
  const sets = frames(DataService.method.setValue.input, 1000, (i) => ({
    clsId: "default",
    objectId: BigInt(i + 1),
    key: 1,
    value,
  }));
  const gets = frames(DataService.method.getValue.input, 1000, (i) => ({
    clsId: "default",
    objectId: BigInt(i + 1),
    key: 1,
  }));
  const path = (m: { name: string }) => `/oprc.DataService/${m.name}`;
  const results: Record<string, number> = {};
  for (const c of [1, 64]) {
    results[`Capabilities (empty RPC) c=${c}`] = await measure(
      () => client.call(path(DataService.method.capabilities), caps[0] as Buffer),
      c,
    );
    results[`SetValue c=${c}`] = await measure(
      (i) => client.call(path(DataService.method.setValue), sets[i % 1000] as Buffer),
      c,
    );
    results[`GetValue c=${c}`] = await measure(
      (i) => client.call(path(DataService.method.getValue), gets[i % 1000] as Buffer),
      c,
    );
  }
  client.close();
  await server.stop();
  await rm(dir, { recursive: true, force: true });
  return results;
}

async function benchRaw() {
  const server = await startProcess(
    process.execPath,
    [fileURLToPath(new URL("./raw-echo-server.mjs", import.meta.url))],
    {},
  );
  const client = rawClient(server.url);
  const caps = frames(DataService.method.capabilities.input, 1, () => ({}))[0] as Buffer;
  const results: Record<string, number> = {};
  for (const c of [1, 64]) {
    results[`c=${c}`] = await measure(() => client.call("/oprc.DataService/Capabilities", caps), c);
  }
  client.close();
  await server.stop();
  return results;
}

const raw = await benchRaw();
const syncOff = await benchOdgm(false, process.env.ODGM_BENCH_PROFILE === "1");
const syncOffConnect = await benchOdgm(false, false, false);
const syncOn = await benchOdgm(true, false);
const rows: string[] = [
  "| case | sync | server path | req/s | × raw node:http2 (same concurrency) |",
  "|---|---|---|---:|---:|",
];
for (const c of [1, 64])
  rows.push(`| raw node:http2 echo c=${c} | – | – | ${Math.round(raw[`c=${c}`] ?? 0)} | 1.00 |`);
for (const [label, path, res] of [
  ["off", "fast path", syncOff],
  ["off", "connect-node", syncOffConnect],
  ["on", "fast path", syncOn],
] as const) {
  for (const [name, rps] of Object.entries(res)) {
    const c = name.endsWith("c=64") ? 64 : 1;
    const ratio = (rps / (raw[`c=${c}`] ?? 1)).toFixed(2);
    rows.push(`| ${name} | ${label} | ${path} | ${Math.round(rps)} | ${ratio} |`);
  }
}
console.log(rows.join("\n"));
