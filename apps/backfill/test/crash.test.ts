// Crash safety: SIGKILL the real `odgm-backfill` process at random points, rerun, and
// compare the final database with the one a clean run produces.
import { cp } from "node:fs/promises";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { openRocksEngine } from "@oprc/entry-store/rocksdb";
import { BackfillCheckpointRecordSchema } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runBackfill } from "../src/index.js";
import { runBin } from "./cli-process.js";
import {
  COLLECTION,
  createLegacyDatabase,
  normalizedData,
  PARTITION,
  prng,
  rawScan,
  SHARD,
  tempDir,
} from "./fixtures.js";

const OBJECTS = 5000;
const ENTRIES = 4;
const ROUNDS = 4;
const KILLS_PER_ROUND = 5;

let root: { dir: string; cleanup: () => Promise<void> };
let template: string;
let expected: string[];

beforeAll(async () => {
  root = await tempDir("odgm-backfill-crash-");
  template = join(root.dir, "template");
  await createLegacyDatabase(template, { objects: OBJECTS, entries: ENTRIES, granularObjects: 20 });
  const clean = join(root.dir, "clean");
  await cp(template, clean, { recursive: true });
  const summary = await runBackfill({
    collection: COLLECTION,
    partition: PARTITION,
    dataDir: clean,
  });
  expect(summary.ok).toBe(true);
  expected = normalizedData(await rawScan(clean));
}, 120_000);

afterAll(async () => {
  await root?.cleanup();
});

function args(dir: string): string[] {
  return [
    "--mode=entries",
    `--collection=${COLLECTION}`,
    `--partition=${PARTITION}`,
    `--data-dir=${dir}`,
    "--parallel=8",
    "--checkpoint-interval=10",
    "--no-progress",
  ];
}

describe("SIGKILL at random points", () => {
  it(`loses nothing over ${ROUNDS * KILLS_PER_ROUND} kills; reruns resume and end byte-identical`, async () => {
    // Calibrate the kill window on this machine: one uninterrupted process run.
    const calib = join(root.dir, "calibrate");
    await cp(template, calib, { recursive: true });
    const t0 = performance.now();
    let startupMs = 0;
    const calibration = runBin(args(calib).filter((a) => a !== "--no-progress"));
    calibration.child.stderr?.on("data", (d: Buffer) => {
      if (startupMs === 0 && d.toString().includes("odgm-backfill: convert")) {
        startupMs = performance.now() - t0;
      }
    });
    const full = await calibration;
    const fullMs = performance.now() - t0;
    expect(full.code, full.stderr).toBe(0);
    // Kill between (most of) the process start-up and the expected end of the run (its
    // conversion time shrinks with the blobs left), so most kills land mid-conversion.
    const from = startupMs * 0.8;
    const convertMs = Math.max(fullMs - startupMs, 50);

    const rand = prng(Number(process.env.BACKFILL_CRASH_SEED ?? 42));
    let partial = 0;
    let killed = 0;
    let trials = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const dir = join(root.dir, `round-${round}`);
      await cp(template, dir, { recursive: true });
      let left = OBJECTS;
      // Until this round has KILLS_PER_ROUND real kills (a run may finish before its kill).
      // The window adapts to the machine's load: it shrinks after a run that beat its
      // kill and grows after a kill that came before any conversion. Every other run is
      // timed from the process's start, the others from its conversion's start (its first
      // progress line), so kills land mid-conversion however slowly the process starts on a
      // loaded machine.
      // One scale per kind of run: a kill timed from the start that came before the
      // conversion says nothing of one timed from the conversion's start.
      const scales = [1, 1];
      for (
        let k = 0, attempts = 0;
        k < KILLS_PER_ROUND && attempts < 10 * KILLS_PER_ROUND;
        attempts++
      ) {
        const converting = (convertMs * left) / OBJECTS;
        const kind = attempts % 2;
        const scale = scales[kind] as number;
        const r =
          kind === 0
            ? await runBin(args(dir), {
                killAfterMs: Math.floor(scale * (from + rand() * (startupMs - from + converting))),
              })
            : await runBin(
                args(dir).filter((a) => a !== "--no-progress"),
                {
                  killAfterMs: Math.floor(scale * rand() * converting),
                  killAfterStderr: "odgm-backfill: convert",
                },
              );
        trials++;
        if (r.signal !== "SIGKILL") {
          // The run finished before the kill: fine, but it must have succeeded.
          expect(r.code, r.stderr).toBe(0);
          scales[kind] = scale * 0.7;
          continue;
        }
        killed++;
        k++;
        const blobs = await countBlobs(dir);
        if (blobs > 0 && blobs < left) partial++;
        if (blobs === left) scales[kind] = Math.min(scale * 1.2, 3);
        left = blobs;
      }
      const final = await runBin([...args(dir), "--verify", "--json"]);
      expect(final.code, final.stderr).toBe(0);
      const summary = JSON.parse(final.stdout);
      expect(summary).toMatchObject({ ok: true, remaining: 0, failed: 0, mismatches: 0 });

      const records = await rawScan(dir);
      expect(normalizedData(records)).toEqual(expected);
      // The checkpoint records completion.
      const checkpoint = records.find(
        ([c, k]) =>
          c === "system" &&
          Buffer.from(k, "hex").toString("latin1").endsWith(`backfill/${COLLECTION}/${PARTITION}`),
      );
      expect(checkpoint).toBeDefined();
      const record = fromBinary(
        BackfillCheckpointRecordSchema,
        Buffer.from(checkpoint?.[2] ?? "", "hex"),
      );
      expect(record.complete).toBe(true);

      // A completed rerun leaves every column family byte-identical.
      const rerun = await runBin(args(dir));
      expect(rerun.code).toBe(0);
      expect(await rawScan(dir)).toEqual(records);
    }
    console.info(
      `${trials} runs with a random SIGKILL: ${killed} killed, ${partial} of them mid-conversion (some objects converted, not all)`,
    );
    expect(killed).toBeGreaterThanOrEqual(20);
    // The kills must have hit mid-conversion at least once, or the test proved nothing.
    expect(partial).toBeGreaterThan(0);
  }, 180_000);
});

/** Legacy blobs left in the shard (keys only, through the engine). */
async function countBlobs(dir: string): Promise<number> {
  const engine = await openRocksEngine({ location: dir, createIfMissing: false });
  try {
    const it = (await engine.openShard(SHARD)).iterator("blobs", { keysOnly: true });
    let n = 0;
    for (;;) {
      const rows = await it.next(4096);
      if (rows.length === 0) break;
      n += rows.length;
    }
    await it.close();
    return n;
  } finally {
    await engine.close();
  }
}
