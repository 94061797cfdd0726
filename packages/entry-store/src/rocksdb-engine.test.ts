import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { runEntryStoreConformance } from "../test/conformance.js";
import { runKvEngineConformance } from "../test/kv-conformance.js";
import type { KvEngine } from "./kv.js";
import { openRocksEngine, type RocksEngine } from "./rocksdb-engine.js";

const dirs = new WeakMap<KvEngine, string>();

const modes = [
  { groupCommit: true, writeThread: "main" },
  { groupCommit: false, writeThread: "main" },
  { groupCommit: true, writeThread: "worker" },
] as const;

for (const { groupCommit, writeThread } of modes) {
  runEntryStoreConformance({
    name: `rocksdb (groupCommit: ${groupCommit}, writeThread: ${writeThread})`,
    async createEngine(): Promise<KvEngine> {
      const dir = mkdtempSync(join(tmpdir(), "entry-store-conf-"));
      const engine: RocksEngine = await openRocksEngine({
        location: dir,
        groupCommit,
        writeThread,
      });
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

for (const { groupCommit, writeThread } of modes) {
  runKvEngineConformance({
    name: `rocksdb (groupCommit: ${groupCommit}, writeThread: ${writeThread})`,
    async createEngine(): Promise<KvEngine> {
      const dir = mkdtempSync(join(tmpdir(), "entry-store-kv-"));
      const engine: RocksEngine = await openRocksEngine({
        location: dir,
        groupCommit,
        writeThread,
      });
      dirs.set(engine, dir);
      return engine;
    },
    async dispose(engine: KvEngine): Promise<void> {
      const dir = dirs.get(engine);
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    },
  });
}
