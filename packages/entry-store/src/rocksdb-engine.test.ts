import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { runEntryStoreConformance } from "../test/conformance.js";
import { runKvEngineConformance } from "../test/kv-conformance.js";
import type { KvEngine } from "./kv.js";
import { openRocksEngine, type RocksEngine } from "./rocksdb-engine.js";

const dirs = new WeakMap<KvEngine, string>();
/** For an engine that did not open: removes its directory and fails as it did. */
const removing =
  (dir: string) =>
  (err: unknown): never => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  };

// Writes are always group-committed; the two modes differ in where the synced write runs.
const modes = [{ writeThread: "worker" }, { writeThread: "main" }] as const;

for (const { writeThread } of modes) {
  runEntryStoreConformance({
    name: `rocksdb (writeThread: ${writeThread})`,
    async createEngine(): Promise<KvEngine> {
      const dir = mkdtempSync(join(tmpdir(), "entry-store-conf-"));
      const engine: RocksEngine = await openRocksEngine({
        location: dir,
        writeThread,
      }).catch(removing(dir));
      expect(engine.stats().writeThread).toBe(writeThread);
      dirs.set(engine, dir);
      return engine;
    },
    async dispose(engine: KvEngine): Promise<void> {
      const dir = dirs.get(engine);
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    },
  });
}

for (const { writeThread } of modes) {
  runKvEngineConformance({
    name: `rocksdb (writeThread: ${writeThread})`,
    async createEngine(): Promise<KvEngine> {
      const dir = mkdtempSync(join(tmpdir(), "entry-store-kv-"));
      const engine: RocksEngine = await openRocksEngine({
        location: dir,
        writeThread,
      }).catch(removing(dir));
      dirs.set(engine, dir);
      return engine;
    },
    async dispose(engine: KvEngine): Promise<void> {
      const dir = dirs.get(engine);
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    },
  });
}
