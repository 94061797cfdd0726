// The writer over real RocksDB in temporary directories.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  bindingModulePath,
  classifyOpenError,
  createGroupCommitWriter,
  isRocksError,
  openRocksDatabase,
  type RocksDatabase,
} from "./index.js";

const dirs: string[] = [];
const open: RocksDatabase[] = [];
afterEach(async () => {
  for (const d of open.splice(0)) await d.close().catch(() => undefined);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
async function fresh(extra: { writeThread?: "main" | "worker" } = {}): Promise<RocksDatabase> {
  const dir = mkdtempSync(join(tmpdir(), "oprc-rocksdb-"));
  dirs.push(dir);
  const db = await openRocksDatabase({ location: dir, columns: ["a", "b"], ...extra });
  open.push(db);
  return db;
}
/** What another writer's worker needs to reach `base`'s open database. */
function workerAccess(base: RocksDatabase): { handle: bigint; modulePath: string } {
  return {
    handle: (base.db as unknown as { handle: bigint }).handle,
    modulePath: bindingModulePath() as string,
  };
}
const enc = new TextEncoder();
const dec = new TextDecoder();
const put = (column: string, k: string, v: string) =>
  ({ column, type: "put", key: enc.encode(k), value: enc.encode(v) }) as const;

describe.each(["worker", "main"] as const)("group-commit writer (%s thread)", (writeThread) => {
  it("applies every call atomically, in call order, across column families", async () => {
    const db = await fresh({ writeThread });
    expect(db.writer.stats().thread).toBe(writeThread);
    await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        db.writer.write([put("a", `k${i % 10}`, `v${i}`), put("b", `k${i % 10}`, `v${i}`)], {
          sync: true,
        }),
      ),
    );
    for (let k = 0; k < 10; k++) {
      const [a] = await db.db.getMany([enc.encode(`k${k}`)], { column: db.column("a") });
      const [b] = await db.db.getMany([enc.encode(`k${k}`)], { column: db.column("b") });
      // The last call writing a key wins in both families (order kept, each call whole).
      expect(dec.decode(a)).toBe(`v${290 + k}`);
      expect(dec.decode(b)).toBe(`v${290 + k}`);
    }
  });

  it("clears a key range in call order with the writes around it, as a group of its own", async () => {
    const db = await fresh({ writeThread });
    const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);
    const calls = [
      db.writer.write(
        keys.flatMap((k) => [put("a", k, "old"), put("b", k, "old")]),
        { sync: true },
      ),
      db.writer.clear("a", enc.encode("k2"), enc.encode("k5")),
      db.writer.write([put("a", "k3", "new")], { sync: false }),
    ];
    const batches = db.writer.stats().batches;
    await Promise.all(calls);
    expect(db.writer.stats().batches - batches).toBe(3);
    const read = async (column: string) =>
      (
        await db.db.getMany(
          keys.map((k) => enc.encode(k)),
          { column: db.column(column) },
        )
      ).map((v) => (v === undefined ? "-" : dec.decode(v)));
    expect(await read("a")).toEqual([
      "old",
      "old",
      "-",
      "new",
      "-",
      "old",
      "old",
      "old",
      "old",
      "old",
    ]);
    expect(await read("b")).toEqual(keys.map(() => "old"));
    await expect(db.writer.clear("nope", enc.encode("a"), enc.encode("b"))).rejects.toSatisfy(
      (e: unknown) => isRocksError(e),
    );
    await db.writer.write([put("a", "k2", "again")]);
    expect((await read("a"))[2]).toBe("again");
  });

  it("groups the calls that arrive while a batch is written into the next one", async () => {
    const db = await fresh({ writeThread });
    const waves = Array.from({ length: 20 }, (_, w) =>
      Promise.all(
        Array.from({ length: 25 }, (_, i) =>
          db.writer.write([put("a", `w${w}-${i}`, "x")], { sync: true }),
        ),
      ),
    );
    await Promise.all(waves);
    const s = db.writer.stats();
    expect(s.calls).toBe(500);
    expect(s.batches).toBeLessThan(100);
    expect(s.syncedBatches).toBe(s.batches);
    expect(s.maxBatchCalls).toBeGreaterThan(5);
  });

  it("a failed batch fails its calls and those queued behind it; later calls succeed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "oprc-rocksdb-"));
    dirs.push(dir);
    let failNext = false;
    const base = await openRocksDatabase({ location: dir, columns: ["a"], writeThread: "main" });
    open.push(base);
    const writer = await createGroupCommitWriter({
      db: base.db,
      columns: ["a"],
      thread: "main",
      beforeBatch: () => {
        if (failNext) {
          failNext = false;
          throw new Error("ENOSPC: no space left on device");
        }
      },
    });
    await writer.write([put("a", "before", "1")]);
    failNext = true;
    const first = writer.write([put("a", "lost", "1")]);
    const outcomes = await Promise.allSettled([first, writer.write([put("a", "also-lost", "1")])]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    const reason = (outcomes[0] as PromiseRejectedResult).reason;
    expect(isRocksError(reason, "io")).toBe(true);
    await writer.write([put("a", "after", "1")]);
    const got = await base.db.getMany(
      ["before", "lost", "also-lost", "after"].map((k) => enc.encode(k)),
      {
        column: base.column("a"),
      },
    );
    expect(got.map((v) => v !== undefined)).toEqual([true, false, false, true]);
    await writer.close();
  });

  it("close waits for queued calls and then refuses new ones", async () => {
    const db = await fresh({ writeThread });
    const pending = Array.from({ length: 50 }, (_, i) => db.writer.write([put("a", `c${i}`, "x")]));
    await db.writer.close();
    await Promise.all(pending);
    await expect(db.writer.write([put("a", "late", "x")])).rejects.toMatchObject({
      code: "closed",
    });
  });
  it("a write that fails part-way leaves nothing of it for the next one", async () => {
    const db = await fresh({ writeThread });
    for (const sync of [false, true]) {
      const bad = { column: "nope", type: "put", key: enc.encode("k"), value: enc.encode("v") };
      await expect(
        db.writer.write([put("a", `half-${sync}`, "x"), bad as never], { sync }),
      ).rejects.toThrow(/nope/);
      await db.writer.write([put("a", `whole-${sync}`, "y")], { sync });
      const [half, whole] = await db.db.getMany(
        [enc.encode(`half-${sync}`), enc.encode(`whole-${sync}`)],
        { column: db.column("a") },
      );
      expect(half).toBeUndefined();
      expect(dec.decode(whole as Uint8Array)).toBe("y");
    }
  });

  it("writes keys and values of every size byte for byte, views into larger buffers too", async () => {
    const db = await fresh({ writeThread });
    // Sizes around V8's on-heap limit for typed arrays (64 bytes), empty values, views.
    const big = new Uint8Array(4096).map((_, i) => (i * 7) % 251);
    const cases = [0, 1, 63, 64, 65, 1000].flatMap((n, i) => [
      { key: big.slice(i, i + 1 + (n % 40)), value: big.slice(0, n) },
      { key: enc.encode(`view${i}`), value: big.subarray(i, i + n) },
    ]);
    const ops = cases.map(({ key, value }) => ({ column: "a", type: "put", key, value }) as const);
    await db.writer.write([...ops, { column: "b", type: "del", key: enc.encode("gone") }]);
    const got = await db.db.getMany(
      cases.map((c) => c.key),
      { column: db.column("a") },
    );
    got.forEach((v, i) => {
      expect(
        Buffer.from(v as Uint8Array).equals(Buffer.from((cases[i] as { value: Uint8Array }).value)),
      ).toBe(true);
    });
  });
});

describe("scheduling", () => {
  it("starts a group when its scheduler runs it, and the calls queued until then share it", async () => {
    const base = await fresh({ writeThread: "main" });
    const starts: (() => void)[] = [];
    const writer = await createGroupCommitWriter({
      db: base.db,
      columns: ["a"],
      thread: "main",
      schedule: (start) => starts.push(start),
    });
    const calls = [writer.write([put("a", "x", "1")]), writer.write([put("a", "y", "2")])];
    expect(starts).toHaveLength(1);
    // Turns go by: nothing is written until the scheduler starts the group.
    await new Promise((r) => setTimeout(r, 10));
    expect(writer.stats().batches).toBe(0);
    starts[0]?.();
    await Promise.all(calls);
    expect(writer.stats()).toMatchObject({ batches: 1, maxBatchCalls: 2 });
    await writer.close();
  });
});

describe("the write worker", () => {
  it("keeps nothing of a batch once it is written", async () => {
    // Each batch is sent to the worker in its own buffer; 384 batches of 512 KiB. A worker
    // that keeps its batches referenced (it did: the binding's public put records every
    // operation and only its asynchronous close lets go of the batch) holds all 192 MiB;
    // one that lets go holds what its next garbage collection frees (up to ~40 MiB seen).
    const db = await fresh({ writeThread: "worker" });
    // 512 KiB: above the size written inline, so every batch goes to the worker.
    const value = new Uint8Array(512 * 1024).fill(7);
    for (let i = 0; i < 384; i++) {
      await db.writer.write([{ column: "a", type: "put", key: enc.encode(`k${i % 4}`), value }], {
        sync: false,
      });
    }
    expect(db.writer.stats().inlineBatches).toBe(0);
    const heap = await db.writer.workerHeap();
    expect(heap).toBeDefined();
    expect(heap?.externalBytes).toBeLessThan(96 * 1024 * 1024);
    expect(heap?.usedBytes).toBeLessThan(64 * 1024 * 1024);
    await db.close();
    expect(await db.writer.workerHeap()).toBeUndefined();
  });

  it("writes small unsynced batches on the calling thread, in order with the worker's", async () => {
    const db = await fresh({ writeThread: "worker" });
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 200; i++) {
      // Alternating waves: synced (worker) and unsynced (inline) groups, one key.
      writes.push(
        db.writer.write([put("a", "k", `v${i}`)], { sync: Math.floor(i / 10) % 2 === 0 }),
      );
      if (i % 10 === 9) await Promise.all(writes.splice(0));
    }
    const big = new Uint8Array(300 * 1024).fill(1);
    await db.writer.write([{ column: "b", type: "put", key: enc.encode("big"), value: big }], {
      sync: false,
    });
    const s = db.writer.stats();
    expect(s.batches).toBe(21);
    expect(s.syncedBatches).toBe(10);
    // The ten unsynced waves went inline; the 300 KiB unsynced batch went to the worker.
    expect(s.inlineBatches).toBe(10);
    const [a] = await db.db.getMany([enc.encode("k")], { column: db.column("a") });
    expect(dec.decode(a)).toBe("v199");
    const [b] = await db.db.getMany([enc.encode("big")], { column: db.column("b") });
    expect(b?.length).toBe(big.length);
  });

  it("sends unsynced batches to the worker while RocksDB reports a stall, or when told to", async () => {
    const base = await fresh({ writeThread: "main" });
    const access = workerAccess(base);
    // The real database, reporting a stall, a slowdown or a flush (none can be made on
    // demand here).
    const reported = new Map<string, string>();
    const stalling = new Proxy(base.db, {
      get: (t, p) =>
        p === "getProperty"
          ? (name: string) => reported.get(name) ?? t.getProperty(name)
          : Reflect.get(t, p),
    });
    const writer = await createGroupCommitWriter({ db: stalling, columns: ["a"], access });
    const cases: [string, string][] = [
      ["rocksdb.is-write-stopped", "1"],
      ["rocksdb.actual-delayed-write-rate", "16777216"],
      ["rocksdb.num-running-flushes", "1"],
    ];
    for (const [i, [name, value]] of cases.entries()) {
      reported.set(name, value);
      await writer.write([put("a", `s${i}`, "x")], { sync: false });
      expect(writer.stats(), name).toMatchObject({ batches: i + 1, inlineBatches: 0 });
      reported.delete(name);
    }
    await writer.write([put("a", "s3", "x")], { sync: false });
    expect(writer.stats()).toMatchObject({ batches: 4, inlineBatches: 1 });
    await writer.close();
    const never = await createGroupCommitWriter({
      db: base.db,
      columns: ["a"],
      access,
      inlineUnsyncedBytes: 0,
    });
    await never.write([put("a", "s4", "x")], { sync: false });
    expect(never.stats()).toMatchObject({ batches: 1, inlineBatches: 0 });
    await never.close();
    const got = await base.db.getMany(
      ["s1", "s2", "s3"].map((k) => enc.encode(k)),
      {
        column: base.column("a"),
      },
    );
    expect(got.every((v) => v !== undefined)).toBe(true);
  });

  it("writes small synced batches on the calling thread while inlineSynced says so", async () => {
    const base = await fresh({ writeThread: "main" });
    const access = workerAccess(base);
    let allow = false;
    let asked = 0;
    const flushing = { on: false };
    const db = new Proxy(base.db, {
      get: (t, p) =>
        p === "getProperty"
          ? (name: string) =>
              name === "rocksdb.num-running-flushes" && flushing.on ? "1" : t.getProperty(name)
          : Reflect.get(t, p),
    });
    const writer = await createGroupCommitWriter({
      db,
      columns: ["a"],
      access,
      // The slow-disk guard (its own test, below) out of the way on a busy machine.
      inlineSyncedMaxMs: 60_000,
      inlineSynced: () => {
        asked++;
        return allow;
      },
    });
    await writer.write([put("a", "w", "1")], { sync: true });
    expect(writer.stats()).toMatchObject({ syncedBatches: 1, inlineBatches: 0 });
    // The worker times its own write: what the slow-disk guard (below) goes by.
    expect(writer.stats().syncMs).toBeGreaterThan(0);
    allow = true;
    await writer.write([put("a", "i", "2")], { sync: true });
    expect(writer.stats()).toMatchObject({ syncedBatches: 2, inlineBatches: 1 });
    // Above the inline size, or while RocksDB flushes, the worker writes it all the same.
    const big = new Uint8Array(300 * 1024).fill(1);
    await writer.write([{ column: "a", type: "put", key: enc.encode("big"), value: big }]);
    flushing.on = true;
    await writer.write([put("a", "f", "3")], { sync: true });
    flushing.on = false;
    expect(writer.stats()).toMatchObject({ syncedBatches: 4, inlineBatches: 1 });
    // Unsynced batches do not ask.
    const before = asked;
    await writer.write([put("a", "u", "4")], { sync: false });
    expect(asked).toBe(before);
    expect(writer.stats()).toMatchObject({ syncedBatches: 4, inlineBatches: 2 });
    await writer.close();
    const got = await base.db.getMany(
      ["w", "i", "big", "f", "u"].map((k) => enc.encode(k)),
      { column: base.column("a") },
    );
    expect(got.every((v) => v !== undefined)).toBe(true);
    await base.close();
  });

  it("stops writing synced batches inline while they take longer than inlineSyncedMaxMs", async () => {
    const base = await fresh({ writeThread: "main" });
    const access = workerAccess(base);
    const open = async (inlineSyncedMaxMs: number) => {
      const counts = { asked: 0 };
      const writer = await createGroupCommitWriter({
        db: base.db,
        columns: ["a"],
        access,
        inlineSyncedMaxMs,
        inlineSynced: () => {
          counts.asked++;
          return true;
        },
      });
      return { writer, counts };
    };
    // Every real write takes some time: with a limit of 0 the first one (nothing measured
    // yet) is written inline, and every later one goes to the worker without asking.
    const slow = await open(0);
    expect(slow.writer.stats().syncMs).toBe(0);
    for (let i = 0; i < 5; i++) await slow.writer.write([put("a", `s${i}`, "1")], { sync: true });
    expect(slow.counts.asked).toBe(1);
    expect(slow.writer.stats()).toMatchObject({ syncedBatches: 5, inlineBatches: 1 });
    expect(slow.writer.stats().syncMs).toBeGreaterThan(0);
    await slow.writer.close();
    // Under a limit the disk keeps to, every batch is asked and written inline.
    const fast = await open(60_000);
    for (let i = 0; i < 5; i++) await fast.writer.write([put("a", `f${i}`, "1")], { sync: true });
    expect(fast.counts.asked).toBe(5);
    expect(fast.writer.stats()).toMatchObject({ syncedBatches: 5, inlineBatches: 5 });
    expect(fast.writer.stats().syncMs).toBeGreaterThan(0);
    await fast.writer.close();
    const keys = [0, 1, 2, 3, 4].flatMap((i) => [`s${i}`, `f${i}`]);
    const got = await base.db.getMany(
      keys.map((k) => enc.encode(k)),
      { column: base.column("a") },
    );
    expect(got.every((v) => v !== undefined)).toBe(true);
    await base.close();
  });

  it("reports no worker heap on the main thread", async () => {
    const db = await fresh({ writeThread: "main" });
    expect(await db.writer.workerHeap()).toBeUndefined();
  });
});

describe("opening", () => {
  it("reports a database open elsewhere as locked", async () => {
    const db = await fresh();
    const err = await openRocksDatabase({ location: db.location, columns: ["a", "b"] }).catch(
      (e: unknown) => e,
    );
    expect(isRocksError(err, "locked")).toBe(true);
  });

  it("classifies RocksDB's open errors by their cause, not by the word LOCK", () => {
    const cases: [string, string][] = [
      ["IO error: While lock file: /d/LOCK: Resource temporarily unavailable", "locked"],
      [
        "IO error: lock hold by current process, acquire time 1 acquiring thread 2: /d/LOCK: No locks available",
        "locked",
      ],
      ["IO error: While open a file for appending: /d/LOCK: Read-only file system", "read_only"],
      ["IO error: While mkdir if missing: /d: Permission denied", "permission_denied"],
      ["Corruption: no meta-nnnnn entry in descriptor", "io"],
    ];
    for (const [message, code] of cases) {
      expect(classifyOpenError(new Error(message), "/d").code, message).toBe(code);
    }
  });

  it("writes the WAL uncompressed unless told otherwise (RocksDB's OPTIONS file says which)", async () => {
    const walCompression = (location: string): string | undefined => {
      const file = readdirSync(location)
        .filter((f) => f.startsWith("OPTIONS-"))
        .sort()
        .at(-1);
      if (file === undefined) return undefined;
      return /^\s*wal_compression=(\S+)$/m.exec(readFileSync(join(location, file), "utf8"))?.[1];
    };
    const plain = await fresh();
    expect(walCompression(plain.location)).toBe("kNoCompression");
    const dir = mkdtempSync(join(tmpdir(), "oprc-rocksdb-"));
    dirs.push(dir);
    const zstd = await openRocksDatabase({
      location: dir,
      columns: ["a"],
      openOptions: { walCompression: true },
    });
    open.push(zstd);
    expect(walCompression(dir)).toBe("kZSTD");
    // A database whose WAL was written compressed opens with the default and replays it.
    await zstd.writer.write([put("a", "k", "in the compressed WAL")], { sync: true });
    await zstd.close();
    const reopened = await openRocksDatabase({ location: dir, columns: ["a"] });
    open.push(reopened);
    expect(walCompression(dir)).toBe("kNoCompression");
    const [v] = await reopened.db.getMany([enc.encode("k")], { column: reopened.column("a") });
    expect(dec.decode(v as Uint8Array)).toBe("in the compressed WAL");
  });

  it("the write worker is a module file beside the writer", async () => {
    const url = new URL("./write-worker.ts", import.meta.url);
    const { existsSync } = await import("node:fs");
    expect(existsSync(url)).toBe(true);
  });
});
