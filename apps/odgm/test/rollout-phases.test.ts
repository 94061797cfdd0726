// Seed 000 §9's rollout phases on a real node (RocksDB, gRPC and REST over loopback): one
// data directory, the node restarted with each phase's settings, clients of both id kinds.
// Phase 0 string ids off; 1 string-id reads on, writes refused (FAILED_PRECONDITION naming
// the flag); 2 canary writes, hidden from listings; 3 everything on; 4 numeric creates
// counted, logged and flagged to the client; 5 numeric creates refused, existing numeric
// objects still readable and writable. Then seed 003 §8's storage phases A-F and back.
import { rm } from "node:fs/promises";
import { create, fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { createEntryStore } from "@oprc/entry-store";
import { openRocksEngine } from "@oprc/entry-store/rocksdb";
import {
  DataService,
  EventType,
  MaintenanceService,
  ObjectEventSchema,
  TriggerPayloadSchema,
  ValDataSchema,
} from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type FunctionServer,
  type ReceivedCall,
  startFunctionServer,
} from "./fixtures/function-server.js";
import { startTempNode, type TempNode, tempDir } from "./fixtures/temp-node.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
const v = (s: string) => ({ data: enc.encode(s) });

let dir: string;
beforeAll(async () => {
  dir = await tempDir("odgm-phases-");
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs `body` against the node restarted on the shared data dir with `env`. */
async function phase(env: Record<string, string>, body: (n: TempNode) => Promise<void>) {
  const n = await startTempNode({ ODGM_COLLECTION: JSON.stringify([{ name: "c" }]), ...env }, dir);
  try {
    await body(n);
  } finally {
    await n.close();
  }
}

const client = (n: TempNode) =>
  createClient(DataService, createGrpcTransport({ baseUrl: n.node.url }));

async function outcome(p: Promise<unknown>): Promise<{ code: Code | 0; message: string }> {
  try {
    await p;
    return { code: 0, message: "" };
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: e.code, message: e.rawMessage };
  }
}

const rest = (n: TempNode, path: string, init?: RequestInit) =>
  fetch(`${n.node.url}/api/class/c/0/objects/${path}`, init);
const put = (n: TempNode, path: string, value: string) =>
  rest(n, path, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ value }),
  });

async function metric(n: TempNode, outcomeLabel: string): Promise<number> {
  const text = await (await fetch(`${n.node.url}/metrics`)).text();
  const m = new RegExp(
    `^odgm_numeric_id_creates_total\\{collection="c",outcome="${outcomeLabel}"\\} (\\d+)`,
    "m",
  ).exec(text);
  return m === null ? 0 : Number(m[1]);
}

describe("seed 000 rollout phases, one data directory", () => {
  it("phase 0: string ids off; numeric objects work", async () => {
    await phase({ ODGM_ENABLE_STRING_IDS: "false" }, async (n) => {
      const data = client(n);
      await data.setValue({ clsId: "c", objectId: 1n, keyStr: "a", value: v("n1") });
      const r = await outcome(data.getValue({ clsId: "c", objectIdStr: "s1", keyStr: "a" }));
      expect(r.code).toBe(Code.Unimplemented);
    });
  });

  it("phase 1: string-id reads on, string-id writes refused naming the flag", async () => {
    await phase({ ODGM_STRING_ID_WRITES: "false" }, async (n) => {
      const data = client(n);
      // A read answers (nothing there yet) rather than UNIMPLEMENTED.
      const read = await data.getValue({ clsId: "c", objectIdStr: "s1", keyStr: "a" });
      expect(read.value).toBeUndefined();
      for (const write of [
        data.setValue({ clsId: "c", objectIdStr: "s1", keyStr: "a", value: v("x") }),
        data.batchSetValues({ clsId: "c", objectIdStr: "s1", values: { a: v("x") } }),
        data.deleteValue({ clsId: "c", objectIdStr: "s1", keyStr: "a" }),
        data.delete({ clsId: "c", objectIdStr: "s1" }),
      ]) {
        const r = await outcome(write);
        expect(r.code).toBe(Code.FailedPrecondition);
        expect(r.message).toMatch(/ODGM_STRING_ID_WRITES=false/);
      }
      const viaRest = await put(n, "s1/values/a", "x");
      expect(viaRest.status).toBe(400);
      expect(((await viaRest.json()) as { error: { code: string } }).error.code).toBe(
        "failed_precondition",
      );
      // Numeric objects, and "1" (the same object as numeric 1), keep working.
      await data.setValue({ clsId: "c", objectIdStr: "1", keyStr: "b", value: v("n1b") });
      const one = await data.getValue({ clsId: "c", objectId: 1n, keyStr: "b" });
      expect(dec.decode(one.value?.data)).toBe("n1b");
    });
  });

  it("phase 2: canary writes of string ids, hidden from listings", async () => {
    await phase({ ODGM_STRING_IDS_WRITE_ONLY: "true" }, async (n) => {
      const data = client(n);
      await data.setValue({ clsId: "c", objectIdStr: "s1", keyStr: "a", value: v("s1a") });
      const got = await data.getValue({ clsId: "c", objectIdStr: "s1", keyStr: "a" });
      expect(dec.decode(got.value?.data)).toBe("s1a");
      const ids: string[] = [];
      for await (const o of data.listObjects({ clsId: "c" })) ids.push(o.objectId);
      expect(ids).toEqual(["1"]);
    });
  });

  it("phase 3: everything on; both id kinds listed", async () => {
    await phase({}, async (n) => {
      const data = client(n);
      const ids: string[] = [];
      for await (const o of data.listObjects({ clsId: "c" })) ids.push(o.objectId);
      expect(ids.sort()).toEqual(["1", "s1"]);
    });
  });

  it("phase 4: numeric creates succeed, counted and flagged to the client", async () => {
    await phase({ ODGM_NUMERIC_ID_CREATES: "warn" }, async (n) => {
      const data = client(n);
      let warning: string | null = null;
      await data.setValue(
        { clsId: "c", objectId: 2n, keyStr: "a", value: v("n2") },
        { onHeader: (h) => (warning = h.get("odgm-warning")) },
      );
      expect(warning).toMatch(/numeric object_id is deprecated.*ODGM_NUMERIC_ID_CREATES=warn/);
      // Writing the now existing object is not a create: no warning.
      warning = null;
      await data.setValue(
        { clsId: "c", objectId: 2n, keyStr: "b", value: v("n2b") },
        { onHeader: (h) => (warning = h.get("odgm-warning")) },
      );
      expect(warning).toBeNull();
      // A string-id create is not flagged; REST carries the header too.
      const s = await put(n, "s2/values/a", "s2a");
      expect(s.status).toBe(204);
      expect(s.headers.get("odgm-warning")).toBeNull();
      const r = await put(n, "3/values/a", "n3");
      expect(r.status).toBe(204);
      expect(r.headers.get("odgm-warning")).toMatch(/deprecated/);
      expect(await metric(n, "created")).toBe(2);
    });
  });

  it("phase 5: numeric creates refused; numeric objects still readable and writable", async () => {
    await phase({ ODGM_NUMERIC_ID_CREATES: "refuse" }, async (n) => {
      const data = client(n);
      const r = await outcome(
        data.setValue({ clsId: "c", objectId: 9n, keyStr: "a", value: v("x") }),
      );
      expect(r.code).toBe(Code.FailedPrecondition);
      expect(r.message).toMatch(/ODGM_NUMERIC_ID_CREATES=refuse/);
      expect((await put(n, "9/values/a", "x")).status).toBe(400);
      // Object 9 was not created.
      expect((await data.getValue({ clsId: "c", objectId: 9n, keyStr: "a" })).objectVersion).toBe(
        undefined,
      );
      // Existing numeric objects: read and write.
      await data.setValue({ clsId: "c", objectId: 2n, keyStr: "c", value: v("n2c") });
      const got = await data.getValue({ clsId: "c", objectId: 2n, keyStr: "c" });
      expect(dec.decode(got.value?.data)).toBe("n2c");
      expect(got.objectVersion).toBe(3n);
      // String ids create as usual.
      await data.setValue({ clsId: "c", objectIdStr: "s9", keyStr: "a", value: v("s9") });
      expect(await metric(n, "refused")).toBe(2);
    });
  });

  it("rolls back from phase 5 to phase 0, one phase at a time, with the data intact", async () => {
    for (const env of [
      { ODGM_NUMERIC_ID_CREATES: "warn" },
      {},
      { ODGM_STRING_IDS_WRITE_ONLY: "true" },
      { ODGM_STRING_ID_WRITES: "false" },
      { ODGM_ENABLE_STRING_IDS: "false" },
    ] as Record<string, string>[]) {
      await phase(env, async (n) => {
        const data = client(n);
        const two = await data.getValue({ clsId: "c", objectId: 2n, keyStr: "c" });
        expect(dec.decode(two.value?.data)).toBe("n2c");
        const s1 = await outcome(data.getValue({ clsId: "c", objectIdStr: "s1", keyStr: "a" }));
        expect(s1.code).toBe(env.ODGM_ENABLE_STRING_IDS === "false" ? Code.Unimplemented : 0);
      });
    }
  });
});

// Seed 003 §8's storage phases, on their own data directory. Before phase A the directory
// holds what ODGM wrote before per-entry records: whole-object legacy blobs (written here
// with the entry store's pre-granular mode, as no node writes them any more).
describe("seed 003 storage phases, one data directory", () => {
  let dir003: string;
  let functions: FunctionServer;
  const routes = () => ({ "on-num": { url: functions.url } });
  const collection = () => JSON.stringify([{ name: "c", invocations: { fnRoutes: routes() } }]);
  const node = (env: Record<string, string>) =>
    startTempNode({ ODGM_COLLECTION: collection(), ...env }, dir003);
  async function storagePhase(env: Record<string, string>, body: (n: TempNode) => Promise<void>) {
    const n = await node(env);
    try {
      await body(n);
    } finally {
      await n.close();
    }
  }
  /** The legacy blobs in the directory (node stopped), as a pre-granular node reads them. */
  async function blobs(): Promise<Map<bigint, Record<string, string>>> {
    const engine = await openRocksEngine({ location: dir003 });
    try {
      const store = await createEntryStore({ engine, shard: "c/0" });
      const out = new Map<bigint, Record<string, string>>();
      for await (const id of store.legacyBlobIds()) {
        const blob = await store.getLegacyBlob(id);
        const entries: Record<string, string> = {};
        for (const [k, x] of Object.entries(blob?.entries ?? {})) entries[k] = dec.decode(x.data);
        out.set(id, entries);
      }
      await store.close();
      return out;
    } finally {
      await engine.close();
    }
  }
  const value = async (n: TempNode, id: bigint, key: number) => {
    const got = await client(n).getValue({ clsId: "c", objectId: id, key });
    return {
      value: got.value === undefined ? undefined : dec.decode(got.value.data),
      version: got.objectVersion,
    };
  };
  const onNum = (c: ReceivedCall) => c.request.fnId === "on-num";

  beforeAll(async () => {
    dir003 = await tempDir("odgm-phases-003-");
    functions = await startFunctionServer();
    const engine = await openRocksEngine({ location: dir003 });
    try {
      const legacy = await createEntryStore({ engine, shard: "c/0", granular: false });
      await legacy.setObject("100", {
        entries: [
          ["1", create(ValDataSchema, v("a"))],
          ["3", create(ValDataSchema, v("t"))],
        ],
        event: create(ObjectEventSchema, {
          dataTrigger: { 3: { onUpdate: [{ clsId: "c", partitionId: 0, fnId: "on-num" }] } },
        }),
      });
      await legacy.setObject("101", { entries: [["1", create(ValDataSchema, v("b"))]] });
      await legacy.close();
    } finally {
      await engine.close();
    }
  });
  afterAll(async () => {
    await functions?.close();
    await rm(dir003, { recursive: true, force: true });
  });

  it("phase A (dual-write): legacy objects read; writes get versions, CAS and triggers, and keep blobs current", async () => {
    await storagePhase({ ODGM_ENABLE_GRANULAR_STORAGE: "false" }, async (n) => {
      const data = client(n);
      expect(await value(n, 100n, 1)).toEqual({ value: "a", version: 0n });
      await data.setValue({ clsId: "c", objectId: 100n, key: 3, value: v("t2") });
      const [call] = await functions.waitFor(onNum);
      const info = fromBinary(
        TriggerPayloadSchema,
        call?.request.payload ?? new Uint8Array(),
      ).eventInfo;
      expect(info).toMatchObject({
        sourceObjectId: 100n,
        key: 3,
        eventType: EventType.DATA_UPDATE,
      });
      expect(info?.context.object_version).toBe("1");
      const cas = await outcome(
        data.batchSetValues({
          clsId: "c",
          objectId: 100n,
          values: { 4: v("x") },
          expectedObjectVersion: 0n,
        }),
      );
      expect(cas.code).toBe(Code.Aborted);
      await data.batchSetValues({
        clsId: "c",
        objectId: 100n,
        values: { 4: v("d") },
        expectedObjectVersion: 1n,
      });
      await data.setValue({ clsId: "c", objectId: 102n, key: 1, value: v("c") });
      expect(await value(n, 102n, 1)).toEqual({ value: "c", version: 1n });
    });
    // A pre-granular node reading the directory sees every write.
    expect(await blobs()).toEqual(
      new Map([
        [100n, { 1: "a", 3: "t2", 4: "d" }],
        [101n, { 1: "b" }],
        [102n, { 1: "c" }],
      ]),
    );
  });

  it("phase B (the same settings on canaries, then everywhere): reads and blobs agree", async () => {
    await storagePhase({ ODGM_ENABLE_GRANULAR_STORAGE: "false" }, async (n) => {
      const data = client(n);
      await data.deleteValue({ clsId: "c", objectId: 100n, key: 1 });
      await data.set({ clsId: "c", objectId: 102n, object: { entries: { 5: v("e") } } });
      const got = await data.get({ clsId: "c", objectId: 100n });
      expect(Object.keys(got.obj?.entries ?? {}).sort()).toEqual(["3", "4"]);
      expect((await data.get({ clsId: "c", objectId: 102n })).obj?.entries[5]?.data).toEqual(
        enc.encode("e"),
      );
    });
    const b = await blobs();
    expect(b.get(100n)).toEqual({ 3: "t2", 4: "d" });
    expect(b.get(102n)).toEqual({ 5: "e" });
  });

  it("phases C and D (defaults): entries preferred, blob fallback counted, no blob for new writes", async () => {
    await storagePhase({}, async (n) => {
      const data = client(n);
      expect(await value(n, 101n, 1)).toEqual({ value: "b", version: 0n });
      const metrics = await (await fetch(`${n.node.url}/metrics`)).text();
      expect(metrics).toMatch(/odgm_blob_fallback_reads_total\{collection="c"\} [1-9]/);
      await data.setValue({ clsId: "c", objectId: 100n, key: 3, value: v("t3") });
      await data.setValue({ clsId: "c", objectId: 103n, key: 1, value: v("new") });
      expect(await value(n, 100n, 3)).toEqual({ value: "t3", version: 4n });
    });
    const b = await blobs();
    expect(b.has(103n)).toBe(false);
    expect(b.get(100n)).toEqual({ 3: "t2", 4: "d" }); // stale now: reads use the entries
  });

  it("phase F refuses to start while blobs remain, or starts with them unreadable when overridden", async () => {
    await expect(node({ ODGM_BLOB_FALLBACK: "false" })).rejects.toThrow(
      /ODGM_BLOB_FALLBACK=false but 3 legacy blob\(s\) remain \(c: 3\).*ODGM_ALLOW_REMAINING_BLOBS/,
    );
    await storagePhase(
      { ODGM_BLOB_FALLBACK: "false", ODGM_ALLOW_REMAINING_BLOBS: "true" },
      async (n) => {
        expect(await value(n, 101n, 1)).toEqual({ value: undefined, version: undefined });
        expect(await value(n, 100n, 3)).toEqual({ value: "t3", version: 4n });
      },
    );
  });

  it("phase E: conversion removes every blob; phase F then starts and serves everything", async () => {
    await storagePhase({}, async (n) => {
      const maintenance = createClient(
        MaintenanceService,
        createGrpcTransport({ baseUrl: n.node.url }),
      );
      const ids: bigint[] = [];
      for await (const page of maintenance.listLegacyObjects({ clsId: "c" }))
        ids.push(...page.objectIds);
      expect(ids).toEqual([100n, 101n, 102n]);
      const r = await maintenance.convertLegacyObjects({ clsId: "c", objectIds: ids });
      expect({ converted: r.converted, skipped: r.skipped }).toEqual({
        converted: 1n,
        skipped: 2n,
      });
      const metrics = await (await fetch(`${n.node.url}/metrics`)).text();
      expect(metrics).toMatch(/odgm_objects_pending_conversion_total\{collection="c"\} 0/);
    });
    expect((await blobs()).size).toBe(0);
    await storagePhase({ ODGM_BLOB_FALLBACK: "false" }, async (n) => {
      expect(await value(n, 101n, 1)).toEqual({ value: "b", version: 0n });
      expect(await value(n, 100n, 3)).toEqual({ value: "t3", version: 4n });
      expect(await value(n, 102n, 5)).toEqual({ value: "e", version: 2n });
      await client(n).setValue({ clsId: "c", objectId: 101n, key: 2, value: v("f") });
    });
  });

  it("rolls back from phase F to phase A, one phase at a time, with the data intact", async () => {
    const steps: Record<string, string>[] = [{}, {}, { ODGM_ENABLE_GRANULAR_STORAGE: "false" }];
    for (const env of steps) {
      await storagePhase(env, async (n) => {
        expect(await value(n, 101n, 2)).toEqual({ value: "f", version: 1n });
        expect(await value(n, 100n, 3)).toEqual({ value: "t3", version: 4n });
        expect(await value(n, 103n, 1)).toEqual({ value: "new", version: 1n });
      });
    }
    // Back in dual-write, a write brings the object's blob back for a pre-granular node.
    await storagePhase({ ODGM_ENABLE_GRANULAR_STORAGE: "false" }, async (n) => {
      await client(n).setValue({ clsId: "c", objectId: 100n, key: 1, value: v("a2") });
    });
    expect((await blobs()).get(100n)).toEqual({ 1: "a2", 3: "t3", 4: "d" });
  });
});
