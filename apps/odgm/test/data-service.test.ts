// Every DataService and OprcFunction RPC, with numeric and string ids and keys, against a
// real odgm (RocksDB in a temp dir, gRPC over h2c on loopback) through two independent
// clients: connect-node and Google's gRPC C-core (python3-grpcio), against the gRPC unary
// fast path and (connect-node, ODGM_GRPC_FAST_PATH=false) against connect-node's own server
// pipeline. Each run uses its own fresh node; all transcripts must be identical.
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import {
  CapabilitiesRequestSchema,
  DataService,
  InvocationRequestSchema,
  ObjectInvocationRequestSchema,
  OprcFunction,
  ResponseStatus,
  StatsRequestSchema,
  ValType,
} from "@oprc/grpc-api";
import {
  type Caller,
  createConnectCaller,
  createPythonCaller,
  createTranscripts,
  skipPythonInterop,
} from "@oprc/grpc-api/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FunctionServer, startFunctionServer } from "./fixtures/function-server.js";
import { startTempNode, type TempNode } from "./fixtures/temp-node.js";

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined =>
  b === undefined ? undefined : new TextDecoder().decode(b);
const v = (s: string) => ({ data: utf8(s) });

type Make = (n: TempNode) => Caller;
const FAST_OFF = { ODGM_GRPC_FAST_PATH: "false" };
const clients: [string, Make, Record<string, string>][] = [
  ["connect-node", (n) => createConnectCaller(n.node.url), {}],
  ["connect-node, fast path off", (n) => createConnectCaller(n.node.url), FAST_OFF],
];
if (skipPythonInterop) {
  console.warn("ODGM_SKIP_PYTHON_INTEROP=1: skipping the grpc C-core (python3-grpcio) runs");
} else {
  clients.push(["grpc C-core (python3-grpcio)", (n) => createPythonCaller(n.target), {}]);
}

const transcripts = createTranscripts();

const M = DataService.method;
const F = OprcFunction.method;

let functions: FunctionServer;
beforeAll(async () => {
  functions = await startFunctionServer();
});
afterAll(async () => functions?.close());

const collectionEnv = (): Record<string, string> => ({
  ODGM_COLLECTION: JSON.stringify([
    {
      name: "c",
      partitionCount: 3,
      invocations: {
        fnRoutes: {
          echo: { url: functions.url },
          fail: { url: functions.url },
          f: { url: functions.url },
          crash: { url: functions.url },
          gone: { url: "http://127.0.0.1:1" },
        },
        disabledFn: ["off"],
      },
    },
  ]),
});

describe.each(clients)("DataService and OprcFunction via %s", (client, make, env) => {
  let n: TempNode;
  let c: Caller;
  beforeAll(async () => {
    n = await startTempNode({ ...collectionEnv(), ...env });
    c = make(n);
  });
  afterAll(async () => {
    await c?.close();
    await n?.close();
  });

  it("numeric ids and keys: Get/Set/GetValue/SetValue/DeleteValue/Merge/Delete", async () => {
    const call = transcripts.recorder(client, "numeric", c);
    const obj = { clsId: "c", partitionId: 0, objectId: 1n };

    expect((await call(M.get, obj)).code).toBe(Code.NotFound);
    const set = await call(M.set, {
      ...obj,
      object: { entries: { 1: v("a"), 2: v("b") }, entriesStr: { Name: v("x") } },
    });
    expect(set.code).toBe(0);

    const got = await call(M.get, obj);
    expect(got.code).toBe(0);
    const o = got.responses[0]?.obj;
    expect(text(o?.entries[1]?.data)).toBe("a");
    expect(text(o?.entries[2]?.data)).toBe("b");
    expect(text(o?.entriesStr.name?.data)).toBe("x");
    expect(o?.metadata).toMatchObject({
      clsId: "c",
      partitionId: 0,
      objectId: 1n,
      objectIdStr: "1",
    });

    const byStr = await call(M.get, { clsId: "c", partitionId: 0, objectIdStr: "1" });
    expect(text(byStr.responses[0]?.obj?.entries[1]?.data)).toBe("a");

    const gv = await call(M.getValue, { ...obj, key: 1 });
    expect(text(gv.responses[0]?.value?.data)).toBe("a");
    expect(gv.responses[0]?.objectVersion).toBe(1n);
    expect(gv.responses[0]?.key).toBe("1");
    const gv2 = await call(M.getValue, { ...obj, keyStr: "2" });
    expect(text(gv2.responses[0]?.value?.data)).toBe("b");

    const missing = await call(M.getValue, { ...obj, key: 99 });
    expect(missing.code).toBe(0);
    expect(missing.responses[0]?.value).toBeUndefined();
    expect(missing.responses[0]?.objectVersion).toBe(1n);
    const none = await call(M.getValue, { clsId: "c", partitionId: 0, objectId: 777n, key: 1 });
    expect(none.code).toBe(0);
    expect(none.responses[0]?.value).toBeUndefined();
    expect(none.responses[0]?.objectVersion).toBeUndefined();

    expect(
      (
        await call(M.setValue, {
          ...obj,
          key: 0,
          value: { data: utf8("zero"), type: ValType.BYTE },
        })
      ).code,
    ).toBe(0);
    const zero = await call(M.getValue, { ...obj, key: 0 });
    expect(text(zero.responses[0]?.value?.data)).toBe("zero");
    expect(zero.responses[0]?.objectVersion).toBe(2n);
    expect((await call(M.deleteValue, { ...obj, key: 0 })).code).toBe(0);
    const gone = await call(M.getValue, { ...obj, key: 0 });
    expect(gone.responses[0]?.value).toBeUndefined();
    expect(gone.responses[0]?.objectVersion).toBe(3n);

    const merged = await call(M.merge, { ...obj, object: { entriesStr: { Email: v("e") } } });
    expect(merged.code).toBe(0);
    const mo = merged.responses[0]?.obj;
    expect(Object.keys(mo?.entries ?? {}).sort()).toEqual(["1", "2"]);
    expect(Object.keys(mo?.entriesStr ?? {}).sort()).toEqual(["email", "name"]);

    // Set replaces: entries not listed are removed.
    expect((await call(M.set, { ...obj, object: { entries: { 2: v("b2") } } })).code).toBe(0);
    const replaced = await call(M.get, obj);
    expect(Object.keys(replaced.responses[0]?.obj?.entries ?? {})).toEqual(["2"]);
    expect(Object.keys(replaced.responses[0]?.obj?.entriesStr ?? {})).toEqual([]);

    // Regression (spec §12, sticky tombstone): delete, then re-create works.
    expect((await call(M.delete, obj)).code).toBe(0);
    expect((await call(M.get, obj)).code).toBe(Code.NotFound);
    expect((await call(M.delete, obj)).code).toBe(0); // idempotent
    expect((await call(M.set, { ...obj, object: { entries: { 5: v("back") } } })).code).toBe(0);
    const revived = await call(M.get, obj);
    expect(Object.keys(revived.responses[0]?.obj?.entries ?? {})).toEqual(["5"]);
    const revivedValue = await call(M.getValue, { ...obj, key: 5 });
    expect(revivedValue.responses[0]?.objectVersion).toBe(7n); // versions stay monotonic
    expect((await call(M.setValue, { ...obj, key: 6, value: v("six") })).code).toBe(0);
  });

  it("string ids and keys: SetValue/GetValue/Get/BatchSetValues with CAS", async () => {
    const call = transcripts.recorder(client, "string", c);
    const obj = { clsId: "c", partitionId: 1, objectIdStr: "User-1" };
    expect((await call(M.setValue, { ...obj, keyStr: "Name", value: v("ann") })).code).toBe(0);
    const gv = await call(M.getValue, {
      clsId: "c",
      partitionId: 1,
      objectIdStr: "user-1",
      keyStr: "NAME",
    });
    expect(text(gv.responses[0]?.value?.data)).toBe("ann");
    expect(gv.responses[0]?.key).toBe("name");

    const got = await call(M.get, { clsId: "c", partitionId: 1, objectIdStr: "USER-1" });
    expect(got.responses[0]?.obj?.metadata).toMatchObject({ objectId: 0n, objectIdStr: "user-1" });

    const batch = await call(M.batchSetValues, {
      ...obj,
      values: { "42": v("n"), k1: v("s"), "007": v("z") },
      deleteKeys: ["name"],
    });
    expect(batch.code).toBe(0);
    const after = await call(M.get, obj);
    expect(Object.keys(after.responses[0]?.obj?.entries ?? {})).toEqual(["42"]);
    expect(Object.keys(after.responses[0]?.obj?.entriesStr ?? {}).sort()).toEqual(["007", "k1"]);

    const cas = await call(M.batchSetValues, {
      ...obj,
      values: { x: v("1") },
      expectedObjectVersion: 7n,
    });
    expect(cas.code).toBe(Code.Aborted);
    expect(cas.message).toContain("7");
    expect(cas.trailers["odgm-actual-version"]).toBe("2");
    // Atomic: the refused batch wrote nothing.
    const untouched = await call(M.getValue, { ...obj, keyStr: "x" });
    expect(untouched.responses[0]?.value).toBeUndefined();
    expect(untouched.responses[0]?.objectVersion).toBe(2n);
    const ok = await call(M.batchSetValues, {
      ...obj,
      values: { x: v("1") },
      expectedObjectVersion: 2n,
    });
    expect(ok.code).toBe(0);
    const fresh = await call(M.batchSetValues, {
      clsId: "c",
      partitionId: 1,
      objectIdStr: "fresh",
      values: { a: v("1") },
      expectedObjectVersion: 0n,
    });
    expect(fresh.code).toBe(0);
    const unicode = await call(M.setValue, { ...obj, keyStr: "naïve", value: v("x") });
    expect(unicode.code).toBe(Code.InvalidArgument);
  });

  it("ListValues and ListObjects stream pages with cursors; prefixes return longer keys", async () => {
    const call = transcripts.recorder(client, "list", c);
    const obj = { clsId: "c", partitionId: 2, objectIdStr: "lister" };
    const values: Record<string, { data: Uint8Array }> = {};
    for (const k of ["3", "1", "bb", "a", "ccc", "ab", "abc", "abcdefgh-long-key"])
      values[k] = v(`v${k}`);
    expect((await call(M.batchSetValues, { ...obj, values })).code).toBe(0);

    const p1 = await call(M.listValues, { ...obj, limit: 3 });
    expect(p1.code).toBe(0);
    expect(p1.responses.map((e) => e.key)).toEqual(["1", "3", "a"]);
    const cursor = p1.responses[2]?.nextCursor;
    expect(cursor).toBeInstanceOf(Uint8Array);
    expect(p1.responses[0]?.version).toBe(1n);
    const p2 = await call(M.listValues, { ...obj, limit: 10, cursor });
    expect(p2.responses.map((e) => e.key)).toEqual(["ab", "bb", "abc", "ccc", "abcdefgh-long-key"]);
    expect(p2.responses.at(-1)?.nextCursor).toBeUndefined();

    // Regression (spec §12): prefix listing returns every longer key.
    const pre = await call(M.listValues, { ...obj, keyPrefix: "A" });
    expect(pre.responses.map((e) => e.key)).toEqual(["a", "ab", "abc", "abcdefgh-long-key"]);
    const pre2 = await call(M.listValues, { ...obj, keyPrefix: "abc", limit: 1 });
    expect(pre2.responses.map((e) => e.key)).toEqual(["abc"]);
    const pre3 = await call(M.listValues, {
      ...obj,
      keyPrefix: "abc",
      cursor: pre2.responses[0]?.nextCursor,
    });
    expect(pre3.responses.map((e) => e.key)).toEqual(["abcdefgh-long-key"]);

    const bad = await call(M.listValues, { ...obj, cursor: utf8("garbage") });
    expect(bad.code).toBe(Code.InvalidArgument);

    await call(M.setValue, { clsId: "c", partitionId: 2, objectId: 9n, key: 1, value: v("n") });
    await call(M.setValue, {
      clsId: "c",
      partitionId: 2,
      objectIdStr: "other",
      keyStr: "q",
      value: v("q"),
    });
    await call(M.setValue, {
      clsId: "c",
      partitionId: 2,
      objectIdStr: "dead",
      keyStr: "q",
      value: v("q"),
    });
    await call(M.delete, { clsId: "c", partitionId: 2, objectIdStr: "dead" });
    const objs = await call(M.listObjects, { clsId: "c", partitionId: 2, limit: 2 });
    expect(objs.responses.map((o) => o.objectId)).toEqual(["9", "lister"]);
    expect(objs.responses[1]?.entryCount).toBe(8n);
    const rest = await call(M.listObjects, {
      clsId: "c",
      partitionId: 2,
      cursor: objs.responses[1]?.nextCursor,
    });
    expect(rest.responses.map((o) => o.objectId)).toEqual(["other"]);
    const prefixed = await call(M.listObjects, { clsId: "c", partitionId: 2, objectIdPrefix: "L" });
    expect(prefixed.responses.map((o) => o.objectId)).toEqual(["lister"]);
  });

  it("Stats, Capabilities, InvokeFn and InvokeObj through the function route", async () => {
    const call = transcripts.recorder(client, "misc", c);
    const stats = await call(M.stats, create(StatsRequestSchema));
    expect(stats.code).toBe(0);
    const shards = stats.responses[0]?.shards ?? [];
    expect(shards.find((s) => s.collection === "c" && s.partitionId === 2)?.count).toBe(3n);
    expect(shards.map((s) => s.collection).sort()).toEqual(["c", "c", "c"]);

    const caps = await call(M.capabilities, create(CapabilitiesRequestSchema));
    expect(caps.responses[0]).toMatchObject({
      stringIds: true,
      stringEntryKeys: true,
      granularEntryStorage: true,
      eventPipelineV2: true,
    });

    const fn = await call(
      F.invokeFn,
      create(InvocationRequestSchema, {
        clsId: "c",
        partitionId: 1,
        fnId: "echo",
        options: { a: "b" },
        payload: utf8("abc"),
      }),
    );
    expect(fn.code).toBe(0);
    expect(text(fn.responses[0]?.payload)).toBe("cba");
    expect(fn.responses[0]?.invocationId).toBe("inv-echo");
    const failing = await call(F.invokeFn, { clsId: "c", partitionId: 1, fnId: "fail" });
    expect(failing.code).toBe(0);
    expect(failing.responses[0]?.status).toBe(ResponseStatus.APP_ERROR);
    const byNum = await call(
      F.invokeObj,
      create(ObjectInvocationRequestSchema, {
        clsId: "c",
        partitionId: 1,
        objectId: 5n,
        fnId: "f",
      }),
    );
    expect(text(byNum.responses[0]?.payload)).toBe("numeric:5:f");
    const byStr = await call(F.invokeObj, {
      clsId: "c",
      partitionId: 1,
      objectIdStr: "Obj-A",
      fnId: "f",
    });
    expect(text(byStr.responses[0]?.payload)).toBe("string:obj-a:f");

    // No route, disabled, unknown collection/partition → NOT_FOUND; unreachable → UNAVAILABLE.
    expect((await call(F.invokeFn, { clsId: "c", partitionId: 1, fnId: "nope" })).code).toBe(
      Code.NotFound,
    );
    expect((await call(F.invokeFn, { clsId: "c", partitionId: 1, fnId: "off" })).code).toBe(
      Code.NotFound,
    );
    expect((await call(F.invokeFn, { clsId: "zz", partitionId: 0, fnId: "f" })).code).toBe(
      Code.NotFound,
    );
    expect(
      (await call(F.invokeObj, { clsId: "c", partitionId: 7, objectId: 1n, fnId: "f" })).code,
    ).toBe(Code.NotFound);
    expect((await call(F.invokeFn, { clsId: "c", partitionId: 0, fnId: "gone" })).code).toBe(
      Code.Unavailable,
    );
    const crash = await call(F.invokeObj, {
      clsId: "c",
      partitionId: 0,
      objectId: 1n,
      fnId: "crash",
    });
    expect(crash.code).toBe(Code.Unavailable);
    expect(crash.message).toContain("function crashed");
    expect((await call(F.invokeFn, { clsId: "c", partitionId: 1 })).code).toBe(
      Code.InvalidArgument,
    );
  });

  it("status codes: invalid ids and keys, unknown collection/partition, Set without object", async () => {
    const call = transcripts.recorder(client, "status", c);
    const base = { clsId: "c", partitionId: 0 };
    const both = await call(M.get, { ...base, objectId: 3n, objectIdStr: "x" });
    expect(both.code).toBe(Code.InvalidArgument);
    expect((await call(M.get, base)).code).toBe(Code.InvalidArgument);
    const badChar = await call(M.getValue, { ...base, objectIdStr: "a/b", key: 1 });
    expect(badChar.code).toBe(Code.InvalidArgument);
    expect(badChar.message).toContain('"/"');
    const tooLong = await call(M.get, { ...base, objectIdStr: "x".repeat(161) });
    expect(tooLong.code).toBe(Code.InvalidArgument);
    expect(tooLong.message).toMatch(/161.*160/);
    expect((await call(M.getValue, { ...base, objectId: 1n, keyStr: "a b" })).code).toBe(
      Code.InvalidArgument,
    );

    const unknownCls = await call(M.get, { clsId: "nope", partitionId: 0, objectId: 1n });
    expect(unknownCls.code).toBe(Code.NotFound);
    expect(unknownCls.message).toContain("nope");
    expect(
      (await call(M.getValue, { clsId: "c", partitionId: 9, objectId: 1n, key: 1 })).code,
    ).toBe(Code.NotFound);
    expect(
      (
        await call(M.setValue, {
          clsId: "nope",
          partitionId: 0,
          objectId: 1n,
          key: 1,
          value: v("x"),
        })
      ).code,
    ).toBe(Code.NotFound);
    expect((await call(M.listObjects, { clsId: "c", partitionId: 9 })).code).toBe(Code.NotFound);
    expect((await call(M.listValues, { clsId: "nope", partitionId: 0, objectId: 1n })).code).toBe(
      Code.NotFound,
    );

    // Regression (spec §12): a missing `object` in Set is INVALID_ARGUMENT, never a crash.
    const noObj = await call(M.set, { ...base, objectId: 1n });
    expect(noObj.code).toBe(Code.InvalidArgument);
    expect((await call(M.merge, { ...base, objectId: 1n })).code).toBe(Code.InvalidArgument);
    expect((await call(M.setValue, { ...base, objectId: 1n, key: 1 })).code).toBe(
      Code.InvalidArgument,
    );
    expect((await call(M.getValue, { ...base, objectId: 5n, key: 1 })).code).toBe(0); // still serving
  });
});

describe.each(clients)("feature flags off, via %s", (client, make, env) => {
  let n: TempNode;
  let c: Caller;
  beforeAll(async () => {
    n = await startTempNode({
      ...env,
      ODGM_ENABLE_STRING_IDS: "false",
      ODGM_ENABLE_STRING_KEYS: "false",
      ODGM_ENABLE_GRANULAR_STORAGE: "false",
      ODGM_EVENT_PIPELINE_V2: "false",
      ODGM_MAX_STRING_ID_LEN: "8",
    });
    c = make(n);
  });
  afterAll(async () => {
    await c?.close();
    await n?.close();
  });

  it("string ids/keys are UNIMPLEMENTED and Capabilities reports exactly what is on", async () => {
    const call = transcripts.recorder(client, "flags-off", c);
    const base = { clsId: "default", partitionId: 0 };
    const sid = await call(M.get, { ...base, objectIdStr: "user-1" });
    expect(sid.code).toBe(Code.Unimplemented);
    expect((await call(M.getValue, { ...base, objectId: 1n, keyStr: "name" })).code).toBe(
      Code.Unimplemented,
    );
    expect(
      (await call(M.batchSetValues, { ...base, objectId: 1n, values: { name: v("x") } })).code,
    ).toBe(Code.Unimplemented);
    // Canonical numeric strings are the numeric id/key; legacy (blob) storage serves them.
    expect(
      (await call(M.setValue, { ...base, objectIdStr: "42", keyStr: "7", value: v("x") })).code,
    ).toBe(0);
    const gv = await call(M.getValue, { ...base, objectId: 42n, key: 7 });
    expect(text(gv.responses[0]?.value?.data)).toBe("x");
    const caps = await call(M.capabilities, {});
    expect(caps.responses[0]).toMatchObject({
      stringIds: false,
      stringEntryKeys: false,
      granularEntryStorage: false,
      eventPipelineV2: false,
    });
  });
});

describe("all clients", () => {
  it.skipIf(clients.length < 2)(
    "produce identical transcripts (codes, messages, responses, trailers)",
    () => transcripts.expectIdentical(clients.map(([name]) => name)),
  );
});
