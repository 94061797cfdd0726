// Hostile clients and faults against a real odgm process (issue 19): a 20,000-stream flood
// on one grpcio channel, slowloris, 20,000 idle connections, extreme and malformed
// deadlines, a full disk, a read-only data directory, and SIGTERM under load. Each case
// starts its own node on a fresh data directory, is bounded in time, and checks that the
// node still answers a normal SetValue/GetValue afterwards. Writes RESULTS.md (or
// RESULTS.quick.md); exits 1 when a case failed.
// Run: npx -y pnpm@10.34.9 faults [-- --quick] [-- --only flood,sigterm]
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DataService, SetKeyRequestSchema, SingleKeyRequestSchema } from "@oprc/grpc-api";
import {
  type CaseName,
  type CaseResult,
  exitCodeOf,
  parseFaultArgs,
  renderResults,
} from "./report.js";

const options = parseFaultArgs(process.argv.slice(2));
const quick = options.quick;
const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const ODGM = path.join(REPO, "apps/odgm/dist/bin/odgm.js");
const FLOOD = path.join(REPO, "apps/odgm/test/fixtures/grpc_flood.py");
const PYTHON = "/usr/bin/python3";
const tmp = mkdtempSync(path.join(os.tmpdir(), "odgm-faults-"));
const children = new Set<ChildProcess>();
const mounts: string[] = [];
const log = (msg: string): void => void process.stderr.write(`${msg}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function cleanup(): void {
  for (const c of children) c.kill("SIGKILL");
  for (const m of mounts.splice(0)) {
    try {
      execFileSync("umount", ["-l", m], { stdio: "ignore" });
    } catch {
      // already gone
    }
  }
  rmSync(tmp, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    cleanup();
    process.exit(130);
  });
}
setTimeout(() => {
  log("faults: gave up after 20 min");
  process.exit(3);
}, 20 * 60_000).unref();

interface Node {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly url: string;
  readonly port: number;
  /** Exit code, or the signal that ended it. */
  readonly exited: Promise<number | string>;
  output(): string;
}

/** Starts the real odgm (process.execPath, not the .bin wrapper) and waits until it listens. */
function startNode(dataDir: string, env: Record<string, string> = {}): Promise<Node> {
  const child = spawn(process.execPath, [ODGM], {
    env: {
      ...process.env,
      ODGM_DATA_DIR: dataDir,
      ODGM_HTTP_HOST: "127.0.0.1",
      ODGM_HTTP_PORT: "0",
      ODGM_LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let out = "";
  const onData = (b: Buffer) => {
    out = (out + b.toString()).slice(-200_000);
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<number | string>((resolve) =>
    child.once("exit", (code, signal) => {
      children.delete(child);
      resolve(code ?? signal ?? "unknown");
    }),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`odgm did not listen in 30 s:\n${out}`)),
      30_000,
    );
    const check = () => {
      const m = /"url":"(http:\/\/127\.0\.0\.1:(\d+))"/.exec(out);
      if (m === null) return;
      clearTimeout(timer);
      child.stdout?.off("data", check);
      resolve({
        child,
        pid: child.pid as number,
        url: m[1] as string,
        port: Number(m[2]),
        exited,
        output: () => out,
      });
    };
    child.stdout?.on("data", check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`odgm exited (${code}) before listening:\n${out.slice(-2000)}`));
    });
  });
}

async function stop(node: Node): Promise<number | string> {
  node.child.kill("SIGTERM");
  const code = await Promise.race([node.exited, sleep(20_000).then(() => "timeout")]);
  if (code === "timeout") node.child.kill("SIGKILL");
  return code;
}

const mib = (pid: number): number => {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m === null ? Number.NaN : Math.round(Number(m[1]) / 1024);
};
const data = (url: string) => createClient(DataService, createGrpcTransport({ baseUrl: url }));
const value = (s: string) => ({ data: new TextEncoder().encode(s) });

/** A normal SetValue then GetValue: the node still serves. Milliseconds, or the error. */
async function probe(url: string): Promise<string> {
  const t0 = performance.now();
  try {
    const c = data(url);
    await c.setValue(
      { clsId: "default", objectIdStr: "probe", keyStr: "k", value: value("p") },
      { timeoutMs: 5000 },
    );
    await c.getValue({ clsId: "default", objectIdStr: "probe", keyStr: "k" }, { timeoutMs: 5000 });
    return `serving (probe ${Math.round(performance.now() - t0)} ms)`;
  } catch (err) {
    return `NOT serving: ${ConnectError.from(err).message}`;
  }
}
const serving = (p: string) => p.startsWith("serving");
const codeOf = (err: unknown) => Code[ConnectError.from(err).code];

function mountTmpfs(dir: string, size: string): boolean {
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { stdio: "pipe" });
    mounts.push(dir);
    return true;
  } catch {
    return false;
  }
}

let dirs = 0;
const freshDir = (): string => {
  const d = path.join(tmp, `node-${++dirs}`);
  mkdirSync(d, { recursive: true });
  return d;
};

// ------------------------------------------------------------------------------ cases

async function flood(): Promise<Omit<CaseResult, "name">> {
  const n = quick ? 5000 : 20_000;
  const action = `${n} concurrent SetValue calls on one grpcio channel (one HTTP/2 connection), one object`;
  try {
    execFileSync(PYTHON, ["-c", "import grpc"], { stdio: "ignore" });
  } catch {
    return {
      action,
      outcome: "python3 with grpcio missing (apt-get install python3-grpcio)",
      verdict: "skipped",
    };
  }
  const node = await startNode(freshDir());
  const before = mib(node.pid);
  const body = toBinary(
    SetKeyRequestSchema,
    create(SetKeyRequestSchema, {
      clsId: "default",
      objectIdStr: "flood",
      keyStr: "k",
      value: { data: new Uint8Array([1]) },
    }),
  );
  const out = execFileSync(
    PYTHON,
    [
      FLOOD,
      `127.0.0.1:${node.port}`,
      "/oprc.DataService/SetValue",
      Buffer.from(body).toString("hex"),
      String(n),
      "120",
    ],
    { timeout: 200_000, maxBuffer: 1 << 20 },
  ).toString();
  const r = JSON.parse(out) as { counts: Record<string, number>; seconds: number };
  const version = (
    await data(node.url).getValue({ clsId: "default", objectIdStr: "flood", keyStr: "k" })
  ).objectVersion;
  const after = mib(node.pid);
  const p = await probe(node.url);
  await stop(node);
  const ok = r.counts.OK === n && version === BigInt(n) && serving(p);
  return {
    action,
    outcome: `outcomes ${JSON.stringify(r.counts)} in ${r.seconds} s; object version ${version}; RSS ${before} → ${after} MiB; ${p}`,
    verdict: ok ? "pass" : "fail",
  };
}

async function slowloris(): Promise<Omit<CaseResult, "name">> {
  const n = quick ? 100 : 500;
  const action = `${n} connections sending an HTTP/1.1 request header one line per second, never finishing, and ${n} sending only the HTTP/2 preface`;
  const node = await startNode(freshDir());
  const t0 = performance.now();
  const closedAt: number[] = [];
  const h2Closed: number[] = [];
  const sockets: net.Socket[] = [];
  const timers: NodeJS.Timeout[] = [];
  for (let i = 0; i < 2 * n; i++) {
    const h1 = i < n;
    const s = net.connect(node.port, "127.0.0.1");
    s.on("error", () => {});
    s.on("close", () => (h1 ? closedAt : h2Closed).push(performance.now() - t0));
    s.on("connect", () => {
      if (!h1) {
        s.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        return;
      }
      s.write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
      timers.push(setInterval(() => s.writable && s.write(`X-Slow-${i}: y\r\n`), 1000));
    });
    sockets.push(s);
  }
  await sleep(2000);
  const during = await probe(node.url);
  for (let i = 0; i < 20 && closedAt.length < n; i++) await sleep(1000);
  for (const t of timers) clearInterval(t);
  const h2Open = n - h2Closed.length;
  for (const s of sockets) s.destroy();
  const after = await probe(node.url);
  await stop(node);
  const last = closedAt.length === 0 ? Number.NaN : Math.max(...closedAt);
  return {
    action,
    outcome: `while attacked: ${during}; slow HTTP/1.1 connections closed by the server: ${closedAt.length}/${n}, the last after ${(last / 1000).toFixed(1)} s; HTTP/2 preface-only connections closed: ${n - h2Open}/${n} within ${((performance.now() - t0) / 1000).toFixed(0)} s; afterwards: ${after}`,
    verdict: serving(during) && serving(after) && closedAt.length === n ? "pass" : "fail",
  };
}

async function idle(): Promise<Omit<CaseResult, "name">> {
  const limit = Number(execFileSync("sh", ["-c", "ulimit -n"]).toString().trim());
  const want = quick ? 2000 : 20_000;
  // The node's own descriptors come from the same limit: leave it room.
  const n = Math.max(100, Math.min(want, (Number.isFinite(limit) ? limit : 1024) - 1500));
  const action = `${n} TCP connections that send the HTTP/2 preface and SETTINGS, then nothing${n < want ? ` (${want} asked; the file-descriptor limit is ${limit})` : ""}`;
  const node = await startNode(freshDir());
  const before = mib(node.pid);
  const settings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
  const sockets: net.Socket[] = [];
  let failedToOpen = 0;
  let closed = 0;
  for (let i = 0; i < n; i += 500) {
    await Promise.all(
      Array.from(
        { length: Math.min(500, n - i) },
        () =>
          new Promise<void>((resolve) => {
            const s = net.connect(node.port, "127.0.0.1");
            s.on("error", () => {
              failedToOpen++;
              resolve();
            });
            s.on("close", () => closed++);
            s.on("data", () => {});
            s.on("connect", () => {
              s.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
              s.write(settings);
              resolve();
            });
            sockets.push(s);
          }),
      ),
    );
  }
  await sleep(3000);
  const p = await probe(node.url);
  const after = mib(node.pid);
  const open = sockets.length - closed;
  for (const s of sockets) s.destroy();
  await sleep(500);
  const p2 = await probe(node.url);
  await stop(node);
  return {
    action,
    outcome: `${open} stayed open after 3 s (${failedToOpen} could not connect); ${p}; RSS ${before} → ${after} MiB (${(((after - before) * 1024) / Math.max(1, open)).toFixed(1)} KiB per connection); after they closed: ${p2}`,
    verdict: serving(p) && serving(p2) ? "pass" : "fail",
  };
}

/** One raw gRPC GetValue with a `grpc-timeout` header; the grpc-status it ends with. */
function rawCall(port: number, timeout: string): Promise<string> {
  return new Promise((resolve) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on("error", (e) => resolve(`session error ${e.message}`));
    const request = toBinary(
      SingleKeyRequestSchema,
      create(SingleKeyRequestSchema, { clsId: "default", objectIdStr: "deadline", keyStr: "k" }),
    );
    const msg = Buffer.alloc(5 + request.length);
    msg.writeUInt32BE(request.length, 1);
    msg.set(request, 5);
    const req = session.request({
      ":method": "POST",
      ":path": "/oprc.DataService/GetValue",
      "content-type": "application/grpc",
      te: "trailers",
      "grpc-timeout": timeout,
    });
    let status = "no status";
    req.on("response", (h) => {
      if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
    });
    req.on("trailers", (t) => {
      status = String(t["grpc-status"]);
    });
    req.on("data", () => {});
    req.on("close", () => {
      session.close();
      resolve(status);
    });
    req.end(msg);
  });
}

async function deadlines(): Promise<Omit<CaseResult, "name">> {
  const action =
    "gRPC GetValue with grpc-timeout 99999999H (the largest), 1n (one nanosecond) and abc (malformed), over raw HTTP/2";
  const node = await startNode(freshDir());
  const longest = await rawCall(node.port, "99999999H");
  const tiny = await rawCall(node.port, "1n");
  const bad = await rawCall(node.port, "abc");
  const p = await probe(node.url);
  await stop(node);
  const name = (s: string) => `${s} (${s === "0" ? "OK" : (Code[Number(s)] ?? "?")})`;
  return {
    action,
    outcome: `grpc-status ${name(longest)}, ${name(tiny)}, ${name(bad)}; ${p}`,
    // One nanosecond may expire before or after the read: OK or DEADLINE_EXCEEDED, never a fault.
    verdict:
      longest === "0" && (tiny === "0" || tiny === "4") && bad === "3" && serving(p)
        ? "pass"
        : "fail",
  };
}

async function enospc(): Promise<Omit<CaseResult, "name">> {
  const action =
    "data directory on a 3 MB tmpfs; 4 KiB random (incompressible) values written until refused; then a read, /readyz, SIGTERM";
  const dir = freshDir();
  if (!mountTmpfs(dir, "3m"))
    return {
      action,
      outcome: "cannot mount a tmpfs (needs root with CAP_SYS_ADMIN)",
      verdict: "skipped",
    };
  const node = await startNode(dir);
  const c = data(node.url);
  let written = 0;
  let refusal = "never refused";
  for (; written < 5000; written++) {
    try {
      await c.setValue({
        clsId: "default",
        objectIdStr: `o${written}`,
        keyStr: "k",
        value: { data: randomBytes(4096) },
      });
    } catch (err) {
      refusal = `${codeOf(err)}: ${ConnectError.from(err).rawMessage.slice(0, 120)}`;
      break;
    }
  }
  const ready = (await fetch(`${node.url}/readyz`)).status;
  let read = "read failed";
  try {
    const got = await c.getValue({ clsId: "default", objectIdStr: "o0", keyStr: "k" });
    read = `read of an acknowledged write: ${got.value?.data.length ?? 0} bytes`;
  } catch (err) {
    read = `read failed: ${codeOf(err)}`;
  }
  const code = await stop(node);
  return {
    action,
    outcome: `${written} writes acknowledged, then ${refusal}; /readyz ${ready}; ${read}; SIGTERM exit code ${code}`,
    verdict:
      refusal.startsWith("Unavailable") && ready !== 200 && read.startsWith("read of") && code === 0
        ? "pass"
        : "fail",
  };
}

async function readonly(): Promise<Omit<CaseResult, "name">> {
  const action = "data directory on a tmpfs remounted read-only; the node is started on it";
  const dir = freshDir();
  if (!mountTmpfs(dir, "8m"))
    return {
      action,
      outcome: "cannot mount a tmpfs (needs root with CAP_SYS_ADMIN)",
      verdict: "skipped",
    };
  execFileSync("mount", ["-o", "remount,ro", dir]);
  const t0 = performance.now();
  try {
    const node = await startNode(dir);
    await stop(node);
    return { action, outcome: "it started and listened on a read-only directory", verdict: "fail" };
  } catch (err) {
    const text = (err as Error).message;
    const code = /exited \(([^)]+)\)/.exec(text)?.[1] ?? "?";
    const line = text.split("\n").find((l) => l.includes(dir)) ?? text.split("\n")[1] ?? "";
    return {
      action,
      outcome: `exit code ${code} after ${Math.round(performance.now() - t0)} ms: ${line.slice(0, 200)}`,
      verdict: code !== "0" && code !== "?" && text.includes(dir) ? "pass" : "fail",
    };
  }
}

async function sigterm(): Promise<Omit<CaseResult, "name">> {
  const n = quick ? 200 : 1000;
  const action = `${n} concurrent SetValue calls on distinct objects, SIGTERM to the started PID 20 ms after they were sent, then a restart on the same directory`;
  const dir = freshDir();
  const node = await startNode(dir);
  const c = data(node.url);
  const calls = Array.from({ length: n }, (_, i) =>
    c.setValue({ clsId: "default", objectIdStr: `t${i}`, keyStr: "k", value: value(`v${i}`) }).then(
      () => "OK",
      (err: unknown) => codeOf(err) ?? "?",
    ),
  );
  await sleep(20);
  const t0 = performance.now();
  node.child.kill("SIGTERM");
  const outcomes = await Promise.all(calls);
  const code = await Promise.race([node.exited, sleep(20_000).then(() => "timeout")]);
  const ms = Math.round(performance.now() - t0);
  const counts: Record<string, number> = {};
  for (const o of outcomes) counts[o] = (counts[o] ?? 0) + 1;
  // Every acknowledged write is there after a restart.
  const again = await startNode(dir);
  let lost = 0;
  const d = data(again.url);
  for (let i = 0; i < n; i++) {
    if (outcomes[i] !== "OK") continue;
    const got = await d.getValue({ clsId: "default", objectIdStr: `t${i}`, keyStr: "k" });
    if (new TextDecoder().decode(got.value?.data) !== `v${i}`) lost++;
  }
  await stop(again);
  const bad = Object.keys(counts).filter(
    (k) => k !== "OK" && k !== "Unavailable" && k !== "Canceled",
  );
  return {
    action,
    outcome: `exit code ${code} ${ms} ms after the signal; calls ${JSON.stringify(counts)}; acknowledged writes lost after a restart: ${lost}`,
    verdict: code === 0 && lost === 0 && bad.length === 0 ? "pass" : "fail",
  };
}

const RUN: Record<CaseName, () => Promise<Omit<CaseResult, "name">>> = {
  flood,
  slowloris,
  idle,
  deadlines,
  enospc,
  readonly,
  sigterm,
};

async function main(): Promise<void> {
  const results: CaseResult[] = [];
  for (const name of options.only) {
    log(`faults: ${name} …`);
    let r: Omit<CaseResult, "name">;
    try {
      r = await RUN[name]();
    } catch (err) {
      r = {
        action: name,
        outcome: `the case itself failed: ${(err as Error).message.slice(0, 300)}`,
        verdict: "fail",
      };
    }
    for (const c of children) c.kill("SIGKILL");
    for (const m of mounts.splice(0)) execFileSync("umount", ["-l", m], { stdio: "ignore" });
    log(`faults: ${name}: ${r.verdict} — ${r.outcome}`);
    results.push({ name, ...r });
  }
  const given = process.argv.slice(2).filter((a) => a !== "--");
  const text = [
    "# Hostile clients and faults against a real odgm",
    "",
    `Command: \`npx -y pnpm@10.34.9 faults${given.length > 0 ? ` -- ${given.join(" ")}` : ""}\`. Date: ${new Date().toISOString().slice(0, 10)}. Machine: ${os.cpus().length} × ${os.cpus()[0]?.model.trim() ?? "?"}, Node ${process.version}, ${os.type()} ${os.release()}.`,
    "",
    "Each case starts its own odgm process (RocksDB, fresh data directory) and ends by checking that it still answers a SetValue and a GetValue.",
    "",
    renderResults(results),
  ].join("\n");
  const out = fileURLToPath(
    new URL(quick ? "../RESULTS.quick.md" : "../RESULTS.md", import.meta.url),
  );
  writeFileSync(out, text);
  process.stdout.write(text);
  process.exitCode = exitCodeOf(results);
}

await main();
