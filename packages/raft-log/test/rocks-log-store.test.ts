import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createGroupCommitter, type GroupCommitter } from "../src/storage/group-committer.js";
import {
  encodeEntryValue,
  encodeHardState,
  entryKey,
  entryKeyIndex,
  groupPrefix,
  LOG_RECORD_VERSION,
  RecordType,
  recordKey,
} from "../src/storage/log-record-codec.js";
import { openRocksLogDatabase, type RocksLogDatabase } from "../src/storage/rocks-log-database.js";
import { createRocksLogStore } from "../src/storage/rocks-log-store.js";
import type { LogStore } from "../src/storage-port.js";
import { ent, run, runLogStoreConformance } from "./log-store-conformance.js";

interface Open {
  dir: string;
  database: RocksLogDatabase;
  committer: GroupCommitter | undefined;
}

/** Harness over real RocksDB databases in temp dirs; neighbours share each database. */
function rocksHarness(options: {
  group: boolean;
  thread?: "worker" | "main";
  cacheEntries?: number;
}) {
  const open = new Map<LogStore, Open>();
  const dirs: string[] = [];
  const databases = new Set<RocksLogDatabase>();

  const openStore = async (dir: string): Promise<LogStore> => {
    const database = await openRocksLogDatabase({ path: dir });
    databases.add(database);
    const committer = options.group
      ? createGroupCommitter(database, { thread: options.thread ?? "worker" })
      : undefined;
    const common = {
      database,
      ...(committer ? { committer } : {}),
      ...(options.cacheEntries === undefined ? {} : { cacheEntries: options.cacheEntries }),
    };
    // Neighbour groups whose ids are prefixes/extensions of the tested one share the DB.
    for (const groupId of ["g", "g10", "h"]) {
      const n = await createRocksLogStore({ ...common, groupId });
      if (n.lastIndex() === 0)
        await n.save({ entries: run(1, 3, 9), hardState: { term: 9, vote: 9, commit: 3 } });
    }
    const store = await createRocksLogStore({ ...common, groupId: "g1" });
    open.set(store, { dir, database, committer });
    return store;
  };
  const closeDb = async (store: LogStore): Promise<string> => {
    const o = open.get(store) as Open;
    open.delete(store);
    await store.close();
    await o.committer?.close();
    await o.database.close();
    databases.delete(o.database);
    return o.dir;
  };
  return {
    create: async () => {
      const dir = mkdtempSync(join(tmpdir(), "raft-log-rocks-"));
      dirs.push(dir);
      return openStore(dir);
    },
    reopen: async (store: LogStore) => openStore(await closeDb(store)),
    crash: {
      create: async () => {
        const dir = mkdtempSync(join(tmpdir(), "raft-log-rocks-"));
        dirs.push(dir);
        return openStore(dir);
      },
      // In-process stand-in for a crash: the store is abandoned mid-flight (queued group
      // commits fail against the closed database) and the database is reopened. The real
      // kill -9 test below covers process death.
      crash: async (store: LogStore) => {
        const o = open.get(store) as Open;
        open.delete(store);
        await o.database.close();
        databases.delete(o.database);
        return openStore(o.dir);
      },
    },
    cleanup: async () => {
      for (const s of [...open.keys()]) await closeDb(s).catch(() => undefined);
      for (const d of [...databases]) await d.close().catch(() => undefined);
      databases.clear();
      for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
    },
  };
}

runLogStoreConformance("rocksdb (one synced WriteBatch per save)", rocksHarness({ group: false }));
runLogStoreConformance(
  "rocksdb (group commit on a worker thread, 8-entry cache)",
  rocksHarness({ group: true, thread: "worker", cacheEntries: 8 }),
);
runLogStoreConformance(
  "rocksdb (group commit on the main thread)",
  rocksHarness({ group: true, thread: "main" }),
);

describe("RocksDB log store specifics", () => {
  it("isolates groups sharing one database", async () => {
    const dir = mkdtempSync(join(tmpdir(), "raft-log-rocks-"));
    try {
      const database = await openRocksLogDatabase({ path: dir });
      const committer = createGroupCommitter(database);
      const stores = await Promise.all(
        ["a", "ab", "b"].map((groupId) => createRocksLogStore({ database, groupId, committer })),
      );
      await Promise.all(stores.map((s, i) => s.save({ entries: run(1, 5 + i, i + 1) })));
      await (stores[0] as LogStore).save({ entries: [ent(2, 7)] });
      await (stores[1] as LogStore).compact(3, {
        metadata: {
          index: 3,
          term: 2,
          confState: (stores[1] as LogStore).initialState().confState,
        },
        data: new Uint8Array([1]),
      });
      await committer.close();
      await database.close();
      const db2 = await openRocksLogDatabase({ path: dir });
      const [a, ab, b] = await Promise.all(
        ["a", "ab", "b"].map((groupId) => createRocksLogStore({ database: db2, groupId })),
      );
      expect([a?.firstIndex(), a?.lastIndex(), a?.term(2)]).toEqual([1, 2, 7]);
      expect([ab?.firstIndex(), ab?.lastIndex(), ab?.term(3)]).toEqual([4, 6, 2]);
      expect([b?.firstIndex(), b?.lastIndex(), b?.term(7)]).toEqual([1, 7, 3]);
      await db2.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("erase() drops a group's entries and snapshot, keeps its term and vote, and leaves its neighbours", async () => {
    const dir = mkdtempSync(join(tmpdir(), "raft-log-rocks-"));
    try {
      const database = await openRocksLogDatabase({ path: dir });
      const committer = createGroupCommitter(database);
      const [gone, kept] = await Promise.all(
        ["g", "g2"].map((groupId) => createRocksLogStore({ database, groupId, committer })),
      );
      if (gone === undefined || kept === undefined) throw new Error("not opened");
      for (const s of [gone, kept]) {
        await s.save({ entries: run(1, 8, 3), hardState: { term: 3, vote: 2, commit: 8 } });
        await s.compact(4, {
          metadata: {
            index: 4,
            term: 3,
            confState: { ...s.initialState().confState, voters: [1, 2] },
          },
          data: new Uint8Array([9]),
        });
      }
      await gone.erase();
      expect(() => gone.lastIndex()).toThrow();
      const again = await createRocksLogStore({ database, groupId: "g", committer });
      expect(again.initialState().hardState).toEqual({ term: 3, vote: 2, commit: 0 });
      expect([again.firstIndex(), again.lastIndex()]).toEqual([1, 0]);
      expect(again.snapshot().metadata.index).toBe(0);
      const rows = await database.db.iterator({ column: database.column }).all();
      // What is left of "g": its hard state only (a group's keys start with its id's length
      // and the id).
      const ofG = rows.filter(([k]) => k[0] === 1 && k[1] === "g".charCodeAt(0));
      expect(ofG).toHaveLength(1);
      expect([kept.firstIndex(), kept.lastIndex(), kept.term(6)]).toEqual([5, 8, 3]);
      await committer.close();
      await database.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("an erase a crash cut short (marked, entries still on disk) is finished when the group opens", async () => {
    const dir = mkdtempSync(join(tmpdir(), "raft-log-rocks-"));
    try {
      const database = await openRocksLogDatabase({ path: dir });
      const committer = createGroupCommitter(database);
      const open = (groupId: string) => createRocksLogStore({ database, groupId, committer });
      const [g1, g10] = await Promise.all(["g1", "g10"].map(open));
      if (g1 === undefined || g10 === undefined) throw new Error("not opened");
      for (const s of [g1, g10]) {
        await s.save({ entries: run(1, 6, 4), hardState: { term: 4, vote: 3, commit: 6 } });
      }
      /** The record type of each of a group's keys on disk, in key order. */
      const keysOf = async (groupId: string): Promise<number[]> => {
        const prefix = groupPrefix(groupId);
        const rows = await database.db
          .iterator({ column: database.column, gte: prefix, lt: recordKey(prefix, 0xff) })
          .all();
        return rows.map(([k]) => k[prefix.length] as number);
      };
      // What erase()'s synced write leaves when the process dies before its range deletion:
      // the records dropped, the mark written, every entry still there.
      const prefix = groupPrefix("g1");
      await database.write([
        { type: "del", key: recordKey(prefix, RecordType.floor) },
        {
          type: "put",
          key: recordKey(prefix, RecordType.hardState),
          value: encodeHardState({ term: 4, vote: 3, commit: 0 }),
        },
        {
          type: "put",
          key: recordKey(prefix, RecordType.erasing),
          value: new Uint8Array([LOG_RECORD_VERSION]),
        },
      ]);
      expect(await keysOf("g1")).toContain(RecordType.erasing);
      const again = await open("g1");
      expect([again.firstIndex(), again.lastIndex()]).toEqual([1, 0]);
      expect(again.initialState().hardState).toEqual({ term: 4, vote: 3, commit: 0 });
      // Nothing of the old log is left, not even the mark: only the hard state.
      expect(await keysOf("g1")).toEqual([RecordType.hardState]);
      // The group takes new entries as a new member's log, and they survive a reopen.
      await again.save({ entries: run(1, 2, 5) });
      const reopened = await open("g1");
      expect(reopened.entries(1, 3).map((e) => e.term)).toEqual([5, 5]);
      // The neighbour whose id extends this one is untouched.
      expect([g10.firstIndex(), g10.lastIndex(), g10.term(6)]).toEqual([1, 6, 4]);
      await committer.close();
      await database.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("removes compacted entries from disk with a range deletion, and what a crash left of one at the next compaction", async () => {
    const dir = mkdtempSync(join(tmpdir(), "raft-log-rocks-"));
    try {
      const database = await openRocksLogDatabase({ path: dir });
      const committer = createGroupCommitter(database);
      const open = (groupId: string) => createRocksLogStore({ database, groupId, committer });
      const [g, g1, g10] = await Promise.all(["g", "g1", "g10"].map(open));
      if (g === undefined || g1 === undefined || g10 === undefined) throw new Error("not opened");
      for (const s of [g, g1, g10]) await s.save({ entries: run(1, 10, 2) });
      const onDisk = async (groupId: string): Promise<number[]> => {
        const prefix = groupPrefix(groupId);
        const rows = await database.db
          .iterator({
            column: database.column,
            gte: entryKey(prefix, 0),
            lte: entryKey(prefix, Number.MAX_SAFE_INTEGER),
          })
          .all();
        return rows.map(([k]) => entryKeyIndex(k));
      };
      const snap = (index: number) => ({
        metadata: { index, term: 2, confState: g1.initialState().confState },
        data: new Uint8Array(0),
      });
      await g1.compact(4, snap(4));
      expect(await onDisk("g1")).toEqual([5, 6, 7, 8, 9, 10]);
      for (const id of ["g", "g10"])
        expect(await onDisk(id)).toEqual(run(1, 10, 2).map((e) => e.index));

      // A crash after the floor was written but before its range deletion: the entries are
      // still on disk, skipped when the log is opened, and gone after the next compaction.
      await database.write(
        [1, 2].map((i) => ({
          type: "put" as const,
          key: entryKey(groupPrefix("g1"), i),
          value: encodeEntryValue(ent(i, 2)),
        })),
      );
      const reopened = await open("g1");
      expect([reopened.firstIndex(), reopened.lastIndex()]).toEqual([5, 10]);
      await reopened.compact(6, snap(6));
      expect(await onDisk("g1")).toEqual([7, 8, 9, 10]);
      expect(reopened.entries(7, 11).map((e) => e.index)).toEqual([7, 8, 9, 10]);
      await committer.close();
      await database.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("batches the saves of many groups into few synced writes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "raft-log-rocks-"));
    try {
      const database = await openRocksLogDatabase({ path: dir });
      const committer = createGroupCommitter(database);
      const stores = await Promise.all(
        Array.from({ length: 16 }, (_, g) =>
          createRocksLogStore({ database, groupId: `g${g}`, committer }),
        ),
      );
      for (let round = 1; round <= 3; round++) {
        await Promise.all(stores.map((s) => s.save({ entries: [ent(round, 1)] })));
      }
      const st = committer.stats();
      expect(st.writes).toBe(48);
      expect(st.batches).toBeLessThanOrEqual(6);
      expect(st.averageBatchSize).toBeGreaterThanOrEqual(8);
      await committer.close();
      await database.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("starts a batch when its scheduler runs it; a save is queued in the call that makes it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "raft-log-rocks-"));
    try {
      const database = await openRocksLogDatabase({ path: dir });
      const starts: (() => void)[] = [];
      const committer = createGroupCommitter(database, {
        schedule: (start) => starts.push(start),
      });
      const stores = await Promise.all(
        ["a", "b", "c"].map((groupId) => createRocksLogStore({ database, groupId, committer })),
      );
      // The first save waits for the writer to open, then asks for a start.
      const first = (stores[0] as LogStore).save({ entries: [ent(1, 1)] });
      for (let i = 0; i < 1000 && starts.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 2));
      }
      expect(starts).toHaveLength(1);
      starts.shift()?.();
      await first;
      // Once it is open, saves made in one pass are queued at once (no await in between):
      // the scheduler is asked for a start before the pass ends, and one batch takes them all.
      const before = committer.stats().batches;
      const saves = stores.map((s, i) => s.save({ entries: [ent(i === 0 ? 2 : 1, 1)] }));
      expect(starts).toHaveLength(1);
      starts.shift()?.();
      await Promise.all(saves);
      expect(committer.stats().batches - before).toBe(1);
      await committer.close();
      await database.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("writes a batch on the calling thread while inlineSynced says so", async () => {
    const dir = mkdtempSync(join(tmpdir(), "raft-log-rocks-"));
    try {
      const database = await openRocksLogDatabase({ path: dir });
      let inline = false;
      // The slow-disk guard (the next test) out of the way on a busy machine.
      const committer = createGroupCommitter(database, {
        inlineSynced: () => inline,
        inlineSyncedMaxMs: 60_000,
      });
      const store = await createRocksLogStore({ database, groupId: "g", committer });
      await store.save({ entries: [ent(1, 1)] });
      expect(committer.stats()).toMatchObject({ thread: "worker", batches: 1, inlineBatches: 0 });
      inline = true;
      await store.save({ entries: [ent(2, 1)] });
      expect(committer.stats()).toMatchObject({ batches: 2, inlineBatches: 1 });
      expect(store.lastIndex()).toBe(2);
      await committer.close();
      await database.close();
      // Both saves are in the log when it is opened again.
      const again = await openRocksLogDatabase({ path: dir });
      const reopened = await createRocksLogStore({
        database: again,
        groupId: "g",
        committer: createGroupCommitter(again),
      });
      expect(reopened.entries(1, 3, Number.MAX_SAFE_INTEGER).map((e) => e.index)).toEqual([1, 2]);
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("leaves batches to the worker while they took longer than inlineSyncedMaxMs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "raft-log-rocks-"));
    try {
      const database = await openRocksLogDatabase({ path: dir });
      // Every real write takes some time: over a limit of 0 once the first is measured.
      const committer = createGroupCommitter(database, {
        inlineSynced: () => true,
        inlineSyncedMaxMs: 0,
      });
      const store = await createRocksLogStore({ database, groupId: "g", committer });
      await store.save({ entries: [ent(1, 1)] });
      await store.save({ entries: [ent(2, 1)] });
      await store.save({ entries: [ent(3, 1)] });
      expect(committer.stats()).toMatchObject({ batches: 3, inlineBatches: 1 });
      expect(committer.stats().syncMs).toBeGreaterThan(0);
      expect(store.lastIndex()).toBe(3);
      await committer.close();
      await database.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const thread of ["worker", "main"] as const) {
    it(`joins saves made while a batch is in flight into the next batch (${thread})`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "raft-log-rocks-"));
      try {
        const database = await openRocksLogDatabase({ path: dir });
        const committer = createGroupCommitter(database, { thread });
        const stores = await Promise.all(
          Array.from({ length: 11 }, (_, g) =>
            createRocksLogStore({ database, groupId: `g${g}`, committer }),
          ),
        );
        // A first save readies the committer's writer (started in the background).
        await (stores[0] as LogStore).save({ entries: [ent(1, 1)] });
        const first = (stores[0] as LogStore).save({ entries: [ent(2, 1)] });
        // Runs right after the committer's flush (setImmediate callbacks run in order),
        // i.e. while the first batch is being written.
        const rest = await new Promise<Promise<void>[]>((resolve) =>
          setImmediate(() => resolve(stores.slice(1).map((s) => s.save({ entries: [ent(1, 1)] })))),
        );
        await Promise.all([first, ...rest]);
        // The saves made while the first was queued or being written share a batch.
        const st = committer.stats();
        expect(st).toMatchObject({ writes: 12, thread });
        expect(st.batches).toBeLessThanOrEqual(3);
        expect(st.maxBatchSize).toBeGreaterThanOrEqual(10);
        await database.close(); // closes the committer first
        await expect(committer.write([])).rejects.toThrow(/closed/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  it("keeps every acknowledged save across kill -9 of the writing process", {
    timeout: 60_000,
  }, async () => {
    for (const [mode, groups] of [
      ["direct", 1],
      ["group", 4],
    ] as const) {
      const dir = mkdtempSync(join(tmpdir(), "raft-log-kill-"));
      try {
        const acked = await runAndKill(dir, mode, groups);
        expect(Math.max(...acked)).toBeGreaterThan(0);
        const database = await openRocksLogDatabase({ path: dir });
        for (let g = 0; g < groups; g++) {
          const s = await createRocksLogStore({ database, groupId: `g${g}` });
          const top = acked[g] ?? 0;
          expect(s.lastIndex()).toBeGreaterThanOrEqual(top);
          const hs = s.initialState().hardState;
          expect(hs.commit).toBeGreaterThanOrEqual(top - 1);
          // The hard state and the entries were written in one batch: they agree.
          expect(hs.commit).toBe(s.lastIndex() - 1);
          expect(hs.vote).toBe((s.lastIndex() % 5) + 1);
          const data = s.entries(1, s.lastIndex() + 1).map((e) => new TextDecoder().decode(e.data));
          expect(data).toEqual(Array.from({ length: s.lastIndex() }, (_, i) => `g${g}-${i + 1}`));
        }
        await database.close();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });
});

/** Runs the crash child until each group has ≥ 20 acks, SIGKILLs it, returns the top ack per group. */
function runAndKill(dir: string, mode: string, groups: number): Promise<number[]> {
  const child = spawn(
    process.execPath,
    [
      "--experimental-transform-types",
      "--no-warnings",
      "--import",
      createRequire(import.meta.url).resolve("@oprc/test-config/ts-hooks"),
      fileURLToPath(new URL("./fixtures/crash-child.ts", import.meta.url)),
      dir,
      mode,
      String(groups),
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const acked = new Array<number>(groups).fill(0);
  let buf = "";
  let stderr = "";
  return new Promise((resolve, reject) => {
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.stdout.on("data", (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split("\n");
      buf = lines.pop() ?? "";
      for (const line of lines) {
        const [, g, i] = line.split(" ");
        acked[Number(g)] = Math.max(acked[Number(g)] ?? 0, Number(i));
      }
      if (acked.every((n) => n >= 20) && child.exitCode === null) child.kill("SIGKILL");
    });
    child.on("exit", (_code, signal) => {
      if (signal === "SIGKILL") resolve(acked);
      else reject(new Error(`crash child exited on its own: ${stderr}`));
    });
  });
}
