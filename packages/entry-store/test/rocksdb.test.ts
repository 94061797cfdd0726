// RocksDB-specific behaviour: persistence, many shards in one database, locking, the
// exact on-disk layout, and group commit.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import {
  decodeKey,
  encodeEntryKey,
  encodeEventConfigKey,
  encodeLegacyKey,
  encodeMetadataKey,
} from "@oprc/granular-key";
import { ObjectEventSchema, ValDataSchema } from "@oprc/grpc-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEntryStore, isStoreError } from "../src/index.js";
import { openRocksEngine, type RocksEngine } from "../src/rocksdb.js";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "fixtures");
const val = (s: string) => create(ValDataSchema, { data: new TextEncoder().encode(s) });
const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "entry-store-rocks-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("RocksDB engine", () => {
  it("persists objects, versions and the live counter across close and reopen", async () => {
    let engine = await openRocksEngine({ location: dir });
    let store = await createEntryStore({ engine, shard: "c/0" });
    await store.batch("a", {
      set: [
        ["1", val("x")],
        ["name", val("y")],
      ],
    });
    await store.setEntry("b", "k", val("z"));
    await store.deleteObject("b");
    await store.close();
    await engine.close();
    engine = await openRocksEngine({ location: dir });
    store = await createEntryStore({ engine, shard: "c/0" });
    expect(store.stats().liveObjects).toBe(1n);
    expect((await store.getObject("a"))?.entries.size).toBe(1);
    expect(await store.getMetadata("b")).toMatchObject({ deleted: true, version: 2n });
    const r = await store.setEntry("b", "k", val("again"));
    expect(r.versionAfter).toBe(3n);
    await store.close();
    await engine.close();
  });

  it("holds many shards in one database, isolated from each other", async () => {
    const engine = await openRocksEngine({ location: dir });
    const s1 = await createEntryStore({ engine, shard: "orders/0" });
    const s2 = await createEntryStore({ engine, shard: "orders/1" });
    await s1.setEntry("same-id", "k", val("in shard 0"));
    await s2.setEntry("same-id", "k", val("in shard 1"));
    await s2.setEntry("other", "k", val("x"));
    expect(new TextDecoder().decode((await s1.getEntry("same-id", "k")).entry?.value.data)).toBe(
      "in shard 0",
    );
    expect((await s1.listObjects()).objects.map((o) => o.id)).toEqual(["same-id"]);
    expect((await s2.listObjects()).objects.map((o) => o.id)).toEqual(["other", "same-id"]);
    expect([s1.stats().liveObjects, s2.stats().liveObjects]).toEqual([1n, 2n]);
    expect(await engine.listShards()).toEqual(["orders/0", "orders/1"]);
    await s1.close();
    await s2.close();
    await engine.close();
    const again = await openRocksEngine({ location: dir });
    expect(await again.listShards()).toEqual(["orders/0", "orders/1"]);
    await again.close();
  });

  it("fails with `locked` when this or another process holds the database", async () => {
    const engine = await openRocksEngine({ location: dir });
    const err = await openRocksEngine({ location: dir }).catch((e: unknown) => e);
    expect(isStoreError(err, "locked")).toBe(true);
    expect((err as Error).message).toMatch(/^\[locked\] database .* is in use/);
    await engine.close();

    const other = join(dir, "held");
    const child = spawn(process.execPath, [join(fixtures, "hold-db.mjs"), other], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.once("data", () => resolve());
        child.once("exit", (code) => reject(new Error(`holder exited ${code}`)));
      });
      const held = await openRocksEngine({ location: other }).catch((e: unknown) => e);
      expect(isStoreError(held, "locked")).toBe(true);
    } finally {
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
    }
    const afterDeath = await openRocksEngine({ location: other });
    await afterDeath.close();
  });

  it("rejects operations after close with `closed`", async () => {
    const engine = await openRocksEngine({ location: dir });
    const store = await createEntryStore({ engine, shard: "c/0" });
    await engine.close();
    const err = await store.setEntry("a", "k", val("x")).catch((e: unknown) => e);
    expect(isStoreError(err, "closed")).toBe(true);
  });

  it("stores exactly the keys of spec §3 in the objects keyspace (raw scan)", async () => {
    const engine = await openRocksEngine({ location: dir });
    const legacy = await createEntryStore({ engine, shard: "layout/0", granular: false });
    await legacy.setEntry("77", "3", val("blob"));
    await legacy.close();
    const store = await createEntryStore({ engine, shard: "layout/0" });
    await store.setObject("user-1", {
      entries: [
        ["42", val("n")],
        ["email", val("e")],
        ["a", val("a")],
      ],
      event: create(ObjectEventSchema, {}),
    });
    await store.setEntry("user-10", "x", val("x"));
    await store.setEntry("gone", "x", val("x"));
    await store.deleteObject("gone");
    await store.close();
    await engine.close();

    const require = createRequire(import.meta.url);
    const { RocksLevel } = require("@nxtedition/rocksdb") as {
      RocksLevel: new (
        l: string,
        o: object,
      ) => {
        open(o: object): Promise<void>;
        close(): Promise<void>;
        columns: Record<string, object>;
        iterator(o: object): { all(): Promise<[Buffer, Buffer][]> };
      };
    };
    const db = new RocksLevel(dir, { keyEncoding: "buffer", valueEncoding: "buffer" });
    await db.open({ columns: { default: {}, objects: {}, blobs: {}, system: {} } });
    const scan = async (column: string): Promise<Buffer[]> =>
      (
        await db
          .iterator({ column: db.columns[column], keyEncoding: "buffer", valueEncoding: "buffer" })
          .all()
      ).map(([k]) => k);
    const objects = await scan("objects");
    const blobs = await scan("blobs");
    const system = await scan("system");
    const defaults = await scan("default");
    await db.close();

    const tag = objects[0]?.subarray(0, 4) as Buffer;
    expect(hex(tag)).toBe("00000001");
    for (const k of objects) expect(hex(k.subarray(0, 4))).toBe("00000001");
    const expected = [
      encodeMetadataKey("gone"),
      encodeMetadataKey("user-1"),
      encodeEventConfigKey("user-1"),
      encodeEntryKey("user-1", { numeric: 42 }),
      encodeEntryKey("user-1", { str: "a" }),
      encodeEntryKey("user-1", { str: "email" }),
      encodeMetadataKey("user-10"),
      encodeEntryKey("user-10", { str: "x" }),
    ].map(hex);
    expect(objects.map((k) => hex(k.subarray(4)))).toEqual(expected);
    for (const k of objects) expect(() => decodeKey(k.subarray(4))).not.toThrow();
    // Spelled out once: metadata `<id> 00 00`, numeric entry `<id> 00 10 <u32 BE>`,
    // string entry `<id> 00 11 <len> <utf8>`.
    expect(expected[1]).toBe(`${hex(new TextEncoder().encode("user-1"))}0000`);
    expect(expected[3]).toBe(`${hex(new TextEncoder().encode("user-1"))}00100000002a`);
    expect(expected[5]).toBe(
      `${hex(new TextEncoder().encode("user-1"))}001105${hex(new TextEncoder().encode("email"))}`,
    );
    // The legacy blob of "77" (never written again, so not converted) stays under its
    // 8-byte key, in its own keyspace.
    expect(blobs.map((k) => hex(k))).toEqual([`00000001${hex(encodeLegacyKey(77n))}`]);
    // System keyspace: the shard registry (tag 0) and this shard's counters.
    expect(system.map((k) => hex(k.subarray(0, 4)))).toEqual(["00000000", "00000000", "00000001"]);
    expect(defaults).toEqual([]);
  });

  it("group commit merges concurrent writers' batches into fewer synced writes", async () => {
    const grouped: RocksEngine = await openRocksEngine({
      location: join(dir, "g"),
      groupCommit: true,
    });
    const shards = await Promise.all(
      [0, 1, 2].map((i) => createEntryStore({ engine: grouped, shard: `g/${i}` })),
    );
    await Promise.all(
      Array.from({ length: 90 }, (_, i) =>
        (shards[i % 3] as (typeof shards)[0]).setEntry(`o${i}`, "k", val(String(i))),
      ),
    );
    const stats = grouped.stats();
    expect(stats.writes).toBeGreaterThanOrEqual(90);
    expect(stats.batches).toBeLessThan(stats.writes);
    for (const s of shards) expect(s.stats().liveObjects).toBe(30n);
    // Synced writes run on the worker thread by default: the event loop never waits for them.
    expect(stats.writeThread).toBe("worker");
    for (const s of shards) await s.close();
    await grouped.close();
  });

  it("fails with `unavailable` naming the package when the binding is not installed", async () => {
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [
          "--no-warnings",
          "--experimental-transform-types",
          "--conditions=@oprc/source",
          "--import",
          "./no-rocksdb-hooks.mjs",
          "open-without-binding.ts",
          join(dir, "never"),
        ],
        { cwd: fixtures, stdio: ["ignore", "pipe", "inherit"] },
      );
      let text = "";
      child.stdout.on("data", (c: Buffer) => {
        text += c.toString("utf8");
      });
      child.on("error", reject);
      child.on("exit", () => resolve(text));
    });
    const result = JSON.parse(out) as { unavailable?: boolean; message?: string };
    expect(result.unavailable).toBe(true);
    expect(result.message).toMatch(
      /^\[unavailable\] RocksDB storage needs the optional dependency @nxtedition\/rocksdb/,
    );
  });

  it("reports a binding that fails to construct as an `io` error", async () => {
    const err = await openRocksEngine({
      location: dir,
      binding: {
        RocksLevel: class {
          constructor() {
            throw new Error("boom");
          }
        },
      },
    }).catch((e: unknown) => e);
    expect(isStoreError(err, "io")).toBe(true);
  });
});
