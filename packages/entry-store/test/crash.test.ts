// Crash safety with a real process: a child writes with sync on and reports every
// acknowledged write; it is killed with SIGKILL at a random moment; after reopening,
// every acknowledged write must be there and the derived records must agree.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createEntryStore, type EntryStore } from "../src/index.js";
import { openRocksEngine } from "../src/rocksdb.js";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "fixtures");
const TRIALS = 20;
const PARALLEL = 2;

interface Line {
  t: "ready" | "intent" | "ack" | "error";
  id?: string;
  version?: number;
  state?: string;
}

/** Runs one child until a random number of acknowledged writes, then SIGKILLs it. */
function runAndKill(
  dir: string,
  logPath: string,
  seed: number,
  writeThread: "main" | "worker",
): Promise<Line[]> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(
      process.execPath,
      [
        "--no-warnings",
        "--experimental-transform-types",
        "--conditions=@oprc/source",
        "--import",
        createRequire(import.meta.url).resolve("@oprc/test-config/ts-hooks"),
        "crash-writer.ts",
        dir,
        String(seed),
        "4",
        writeThread,
        logPath,
      ],
      { cwd: fixtures, stdio: ["ignore", "pipe", "pipe"] },
    );
    const lines: Line[] = [];
    let buf = "";
    let stderr = "";
    // Kill after 1–600 acknowledged writes: early, mid-group-commit and later moments.
    const killAfter = 1 + ((seed * 7919) % 600);
    let acks = 0;
    let killed = false;
    child.stdout?.on("data", (chunk: Buffer) => {
      buf += chunk.toString("utf8");
      let nl = buf.indexOf("\n");
      while (nl !== -1) {
        const line = JSON.parse(buf.slice(0, nl)) as Line;
        buf = buf.slice(nl + 1);
        lines.push(line);
        if (line.t === "ack") acks++;
        if (!killed && acks >= killAfter) {
          killed = true;
          child.kill("SIGKILL");
        }
        nl = buf.indexOf("\n");
      }
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (signal !== "SIGKILL") {
        reject(new Error(`writer exited with ${code} ${signal}: ${stderr}`));
        return;
      }
      // The record is the log file the child wrote synchronously; stdout (which may lose
      // queued lines on SIGKILL) only paced the kill. A partial last line was never
      // acknowledged: drop it.
      const text = readFileSync(logPath, "utf8");
      const complete = text.slice(0, text.lastIndexOf("\n") + 1);
      resolve(
        complete
          .split("\n")
          .filter((l) => l.length > 0)
          .map((l) => JSON.parse(l) as Line),
      );
    });
  });
}

async function stateOf(
  store: EntryStore,
  id: string,
): Promise<{ version: number; state: string; count: bigint }> {
  const meta = await store.getMetadata(id);
  if (meta === undefined) return { version: 0, state: "deleted", count: 0n };
  if (meta.deleted)
    return { version: Number(meta.version), state: "deleted", count: meta.entryCount };
  const entries: [string, string][] = [];
  let cursor: Uint8Array | undefined;
  do {
    const page = await store.listEntries(id, { limit: 7, ...(cursor ? { cursor } : {}) });
    for (const e of page.entries) {
      expect(e.version).toBeLessThanOrEqual(meta.version);
      entries.push([e.key, new TextDecoder().decode(e.value.data)]);
    }
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return {
    version: Number(meta.version),
    state: JSON.stringify(entries),
    count: BigInt(entries.length),
  };
}

async function verify(dir: string, lines: Line[], label: string): Promise<number> {
  expect(lines.some((l) => l.t === "error")).toBe(false);
  const lastAck = new Map<string, Line>();
  const intents = new Map<string, Line>();
  for (const l of lines) {
    if (l.t === "ack" && l.id !== undefined) lastAck.set(l.id, l);
    if (l.t === "intent" && l.id !== undefined) intents.set(`${l.id}@${l.version}`, l);
  }
  const engine = await openRocksEngine({ location: dir });
  const store = await createEntryStore({ engine, shard: "crash/0" });
  try {
    let live = 0n;
    const seen = new Set<string>();
    for (const [id, ack] of lastAck) {
      seen.add(id);
      const got = await stateOf(store, id);
      const acked = ack.version as number;
      // Every acknowledged write is durable; at most the one in-flight write (issued, not
      // yet acknowledged) may also have landed — entirely, never partly.
      expect(
        got.version === acked || got.version === acked + 1,
        `${label} ${id}: version ${got.version} vs acked ${acked}`,
      ).toBe(true);
      const expected =
        got.version === acked ? ack.state : intents.get(`${id}@${got.version}`)?.state;
      expect(got.state, `${label} ${id} at version ${got.version}`).toBe(expected);
      if (got.state !== "deleted") {
        live++;
        expect((await store.getMetadata(id))?.entryCount).toBe(got.count);
      }
    }
    // Objects with an intent but no ack: either absent or exactly the intended first state.
    for (const l of intents.values()) {
      if (l.id === undefined || seen.has(l.id)) continue;
      seen.add(l.id);
      const got = await stateOf(store, l.id);
      if (got.version === 0) continue;
      expect(got.version).toBe(1);
      expect(got.state).toBe(intents.get(`${l.id}@1`)?.state);
      if (got.state !== "deleted") live++;
    }
    // The persisted live-object counter matches a full scan.
    let listed = 0n;
    let cursor: Uint8Array | undefined;
    do {
      const page = await store.listObjects({ limit: 5, ...(cursor ? { cursor } : {}) });
      listed += BigInt(page.objects.length);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(listed).toBe(live);
    expect(store.stats().liveObjects).toBe(listed);
    return [...lastAck.values()].length;
  } finally {
    await store.close();
    await engine.close();
  }
}

describe("crash safety (SIGKILL of a real writer process)", () => {
  it(`keeps every acknowledged write across ${TRIALS} kills`, { timeout: 120_000 }, async () => {
    const seeds = Array.from({ length: TRIALS }, (_, i) => 1000 + i * 37);
    let acknowledged = 0;
    for (let i = 0; i < seeds.length; i += PARALLEL) {
      await Promise.all(
        seeds.slice(i, i + PARALLEL).map(async (seed) => {
          const root = mkdtempSync(join(tmpdir(), "entry-store-crash-"));
          const dir = join(root, "db");
          try {
            // Half the trials write through the worker thread, half on the main thread.
            const mode = seed % 2 === 0 ? "main" : "worker";
            const lines = await runAndKill(dir, join(root, "writer.log"), seed, mode);
            acknowledged += lines.filter((l) => l.t === "ack").length;
            await verify(dir, lines, `seed ${seed} (${mode}, ${lines.length} lines)`);
          } finally {
            rmSync(root, { recursive: true, force: true });
          }
        }),
      );
    }
    expect(acknowledged).toBeGreaterThan(TRIALS);
  });
});
