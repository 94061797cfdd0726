// kill -9 of a process whose writers all hammer ONE object, so many of them share each
// synced write (pipelined group commit): every acknowledged write must survive.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createEntryStore } from "../src/index.js";
import { openRocksEngine } from "../src/rocksdb.js";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "fixtures");
const TRIALS = 20;
const WRITERS = 24;

/** Starts the writer, SIGKILLs it after `killAfter` acknowledgements, returns the log. */
function runAndKill(dir: string, logPath: string, killAfter: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        "--no-warnings",
        "--experimental-transform-types",
        "--conditions=@oprc/source",
        "--import",
        createRequire(import.meta.url).resolve("@oprc/test-config/ts-hooks"),
        "hot-writer.ts",
        dir,
        String(WRITERS),
        logPath,
      ],
      { cwd: fixtures, stdio: ["ignore", "pipe", "pipe"] },
    );
    let acks = 0;
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      for (const b of chunk) if (b === 0x61) acks++; // "a"
      if (acks >= killAfter && !child.killed) child.kill("SIGKILL");
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (signal !== "SIGKILL")
        reject(new Error(`writer exited with ${code} ${signal}: ${stderr}`));
      else resolve(readFileSync(logPath, "utf8"));
    });
  });
}

async function verify(dir: string, log: string, label: string): Promise<number> {
  // Only complete lines were acknowledged (a torn last line was being written at the kill).
  const lines = log
    .slice(0, log.lastIndexOf("\n") + 1)
    .split("\n")
    .filter(Boolean);
  const lastAck = new Map<number, number>();
  let maxVersion = 0n;
  for (const line of lines) {
    const [w, c, v] = line.split(" ");
    lastAck.set(Number(w), Number(c));
    if (BigInt(v as string) > maxVersion) maxVersion = BigInt(v as string);
  }
  const engine = await openRocksEngine({ location: dir });
  const store = await createEntryStore({ engine, shard: "hot/0" });
  try {
    const meta = await store.getMetadata("hot");
    // Versions are contiguous from 1 and every acknowledged one is durable.
    expect(meta?.version ?? 0n, `${label}: object version`).toBeGreaterThanOrEqual(maxVersion);
    expect(meta?.version ?? 0n, `${label}: object version`).toBeGreaterThanOrEqual(
      BigInt(lines.length),
    );
    const listed = await store.listEntries("hot", { limit: 1024 });
    expect(BigInt(listed.entries.length)).toBe(meta?.entryCount ?? 0n);
    for (const e of listed.entries) expect(e.version).toBeLessThanOrEqual(meta?.version ?? 0n);
    for (const [w, acked] of lastAck) {
      const got = (await store.getEntry("hot", `w${w}`)).entry;
      const stored = Number(new TextDecoder().decode(got?.value.data));
      // Writer w writes one value at a time: what is stored is its last acknowledged value
      // or the one in flight at the kill, never older.
      expect(
        stored === acked || stored === acked + 1,
        `${label} w${w}: stored ${stored}, acked ${acked}`,
      ).toBe(true);
    }
    return lines.length;
  } finally {
    await store.close();
    await engine.close();
  }
}

describe("hot-object crash safety (SIGKILL, many writers on one object)", () => {
  it(`keeps every acknowledged write across ${TRIALS} kills`, { timeout: 300_000 }, async () => {
    let acknowledged = 0;
    for (let trial = 0; trial < TRIALS; trial++) {
      const root = mkdtempSync(join(tmpdir(), "entry-store-hot-crash-"));
      try {
        const killAfter = 20 + ((trial * 7919) % 1500);
        const log = await runAndKill(join(root, "db"), join(root, "acks.log"), killAfter);
        acknowledged += await verify(
          join(root, "db"),
          log,
          `trial ${trial} (kill after ${killAfter})`,
        );
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    }
    expect(acknowledged).toBeGreaterThan(TRIALS * 20);
  });
});
