// Seed 000 §9's rollout phases on a real node (RocksDB, gRPC and REST over loopback): one
// data directory, the node restarted with each phase's settings, clients of both id kinds.
// Phase 0 string ids off; 1 string-id reads on, writes refused (FAILED_PRECONDITION naming
// the flag); 2 canary writes, hidden from listings; 3 everything on; 4 numeric creates
// counted, logged and flagged to the client; 5 numeric creates refused, existing numeric
// objects still readable and writable.
import { rm } from "node:fs/promises";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DataService } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
