// Every RPC, with numeric and string ids and keys, through two independent gRPC clients:
// connect-node's transport and Google's gRPC C-core (python3-grpcio). Both run the same
// scenario against their own fresh server; the transcripts must be identical.
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CapabilitiesRequestSchema,
  DataPlaneError,
  DataService,
  InvocationRequestSchema,
  ObjectInvocationRequestSchema,
  OprcFunction,
  ResponseStatus,
  StatsRequestSchema,
  ValType,
} from "../src/index.js";
import {
  type Caller,
  createConnectCaller,
  createPythonCaller,
  createTranscripts,
  skipPythonInterop,
  startServer,
  type TestServer,
} from "./fixtures/harness.js";
import { createMemoryPlane } from "./fixtures/memory-plane.js";

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined =>
  b === undefined ? undefined : new TextDecoder().decode(b);
const v = (s: string) => ({ data: utf8(s) });

type Make = (s: TestServer) => Caller;
const clients: [string, Make][] = [["connect-node", (s) => createConnectCaller(s.baseUrl)]];
if (skipPythonInterop) {
  console.warn(
    "ODGM_SKIP_PYTHON_INTEROP=1: skipping the grpc C-core (python3-grpcio) interop runs",
  );
} else {
  clients.push(["grpc C-core (python3-grpcio)", (s) => createPythonCaller(s.target)]);
}

const transcripts = createTranscripts();

const M = DataService.method;
const F = OprcFunction.method;

describe.each(clients)("DataService and OprcFunction via %s", (client, make) => {
  let server: TestServer;
  let c: Caller;
  beforeAll(async () => {
    server = await startServer();
    c = make(server);
  });
  afterAll(async () => {
    await c?.close();
    await server?.close();
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

    // One namespace: numeric 1 and string "1" are the same object.
    const byStr = await call(M.get, { clsId: "c", partitionId: 0, objectIdStr: "1" });
    expect(text(byStr.responses[0]?.obj?.entries[1]?.data)).toBe("a");

    const gv = await call(M.getValue, { ...obj, key: 1 });
    expect(gv.code).toBe(0);
    expect(text(gv.responses[0]?.value?.data)).toBe("a");
    expect(gv.responses[0]?.objectVersion).toBe(1n);
    expect(gv.responses[0]?.key).toBe("1");

    // key_str "2" is numeric key 2; the echo is canonical.
    const gv2 = await call(M.getValue, { ...obj, keyStr: "2" });
    expect(text(gv2.responses[0]?.value?.data)).toBe("b");
    expect(gv2.responses[0]?.key).toBe("2");

    // Missing entry of an existing object: OK, value unset, object_version set.
    const missing = await call(M.getValue, { ...obj, key: 99 });
    expect(missing.code).toBe(0);
    expect(missing.responses[0]?.value).toBeUndefined();
    expect(missing.responses[0]?.objectVersion).toBe(1n);
    expect(missing.responses[0]?.key).toBe("99");

    // Missing object: OK, value and object_version unset.
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

    const merged = await call(M.merge, {
      ...obj,
      object: { entriesStr: { Email: { data: utf8("e"), type: ValType.CRDT_MAP } } },
    });
    expect(merged.code).toBe(0);
    const mo = merged.responses[0]?.obj;
    expect(Object.keys(mo?.entries ?? {}).sort()).toEqual(["1", "2"]);
    expect(Object.keys(mo?.entriesStr ?? {}).sort()).toEqual(["email", "name"]);
    expect(mo?.entriesStr.email?.type).toBe(ValType.CRDT_MAP);

    expect((await call(M.delete, obj)).code).toBe(0);
    expect((await call(M.get, obj)).code).toBe(Code.NotFound);
    expect((await call(M.delete, obj)).code).toBe(0); // idempotent
    expect((await call(M.set, { ...obj, object: { entries: { 5: v("back") } } })).code).toBe(0);
    const revived = await call(M.get, obj);
    expect(Object.keys(revived.responses[0]?.obj?.entries ?? {})).toEqual(["5"]);
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
    expect(gv.responses[0]?.objectVersion).toBe(1n);

    const got = await call(M.get, { clsId: "c", partitionId: 1, objectIdStr: "USER-1" });
    expect(got.responses[0]?.obj?.metadata).toMatchObject({ objectId: 0n, objectIdStr: "user-1" });
    expect(Object.keys(got.responses[0]?.obj?.entriesStr ?? {})).toEqual(["name"]);

    // Batch map keys: canonical u32 decimal → numeric entry; "007" stays a string key.
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
    expect(cas.message).toContain("expected object version 7");
    expect(cas.message).toContain("actual 2");
    expect(cas.trailers["odgm-expected-version"]).toBe("7");
    expect(cas.trailers["odgm-actual-version"]).toBe("2");

    const ok = await call(M.batchSetValues, {
      ...obj,
      values: { x: v("1") },
      expectedObjectVersion: 2n,
    });
    expect(ok.code).toBe(0);
    // CAS on a missing object compares against 0.
    const fresh = await call(M.batchSetValues, {
      clsId: "c",
      partitionId: 1,
      objectIdStr: "fresh",
      values: { a: v("1") },
      expectedObjectVersion: 0n,
    });
    expect(fresh.code).toBe(0);
  });

  it("ListValues and ListObjects stream pages with cursors", async () => {
    const call = transcripts.recorder(client, "list", c);
    const obj = { clsId: "c", partitionId: 2, objectIdStr: "lister" };
    const values: Record<string, { data: Uint8Array }> = {};
    for (const k of ["3", "1", "bb", "a", "ccc", "ab", "abc"]) values[k] = v(`v${k}`);
    expect((await call(M.batchSetValues, { ...obj, values })).code).toBe(0);

    // Storage order: numeric keys numerically, then string keys by (length, bytes).
    const p1 = await call(M.listValues, { ...obj, limit: 3 });
    expect(p1.code).toBe(0);
    expect(p1.responses.map((e) => e.key)).toEqual(["1", "3", "a"]);
    expect(p1.responses.slice(0, 2).every((e) => e.nextCursor === undefined)).toBe(true);
    const cursor = p1.responses[2]?.nextCursor;
    expect(cursor).toBeInstanceOf(Uint8Array);
    expect(p1.responses[0]?.version).toBe(1n);
    expect(text(p1.responses[0]?.value?.data)).toBe("v1");

    const p2 = await call(M.listValues, { ...obj, limit: 10, cursor });
    expect(p2.responses.map((e) => e.key)).toEqual(["ab", "bb", "abc", "ccc"]);
    expect(p2.responses.at(-1)?.nextCursor).toBeUndefined();

    // Default limit (0 → 100) returns everything; the prefix returns every matching string key.
    const all = await call(M.listValues, { ...obj });
    expect(all.responses).toHaveLength(7);
    const pre = await call(M.listValues, { ...obj, keyPrefix: "A" });
    expect(pre.responses.map((e) => e.key)).toEqual(["a", "ab", "abc"]);

    const bad = await call(M.listValues, { ...obj, cursor: utf8("garbage") });
    expect(bad.code).toBe(Code.InvalidArgument);
    expect(bad.responses).toHaveLength(0);
    // A cursor from another object is rejected, never silently restarted.
    await call(M.setValue, {
      clsId: "c",
      partitionId: 2,
      objectIdStr: "other",
      keyStr: "q",
      value: v("q"),
    });
    const foreign = await call(M.listValues, {
      clsId: "c",
      partitionId: 2,
      objectIdStr: "other",
      cursor,
    });
    expect(foreign.code).toBe(Code.InvalidArgument);

    await call(M.setValue, { clsId: "c", partitionId: 2, objectId: 9n, key: 1, value: v("n") });
    const objs = await call(M.listObjects, { clsId: "c", partitionId: 2, limit: 2 });
    expect(objs.responses.map((o) => o.objectId)).toEqual(["9", "lister"]);
    expect(objs.responses[1]?.entryCount).toBe(7n);
    expect(objs.responses[1]?.version).toBe(1n);
    const rest = await call(M.listObjects, {
      clsId: "c",
      partitionId: 2,
      cursor: objs.responses[1]?.nextCursor,
    });
    expect(rest.responses.map((o) => o.objectId)).toEqual(["other"]);
    const prefixed = await call(M.listObjects, { clsId: "c", partitionId: 2, objectIdPrefix: "L" });
    expect(prefixed.responses.map((o) => o.objectId)).toEqual(["lister"]);
  });

  it("Stats, Capabilities, InvokeFn and InvokeObj", async () => {
    const call = transcripts.recorder(client, "misc", c);
    const stats = await call(M.stats, create(StatsRequestSchema));
    expect(stats.code).toBe(0);
    expect(stats.responses[0]?.shards.find((s) => s.partitionId === 2)?.count).toBe(3n);

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
    expect(fn.responses[0]?.headers).toEqual({ fn: "echo", a: "b" });
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
    expect((await call(F.invokeFn, { clsId: "c", partitionId: 1 })).code).toBe(
      Code.InvalidArgument,
    );
    expect((await call(F.invokeObj, { clsId: "c", partitionId: 1, fnId: "f" })).code).toBe(
      Code.InvalidArgument,
    );
    expect((await call(F.invokeFn, { clsId: "nope", partitionId: 0, fnId: "f" })).code).toBe(
      Code.NotFound,
    );
  });

  it("status codes (spec §6)", async () => {
    const call = transcripts.recorder(client, "status", c);
    const base = { clsId: "c", partitionId: 0 };

    const both = await call(M.get, { ...base, objectId: 3n, objectIdStr: "x" });
    expect(both.code).toBe(Code.InvalidArgument);
    expect(both.message).toMatch(/^\[both_provided\]/);
    const neither = await call(M.get, base);
    expect(neither.code).toBe(Code.InvalidArgument);
    expect(neither.message).toMatch(/^\[none_provided\]/);
    const badChar = await call(M.getValue, { ...base, objectIdStr: "a/b", key: 1 });
    expect(badChar.code).toBe(Code.InvalidArgument);
    expect(badChar.message).toMatch(/^\[invalid_char\].*"\/"/);
    const tooLong = await call(M.get, { ...base, objectIdStr: "x".repeat(161) });
    expect(tooLong.code).toBe(Code.InvalidArgument);
    expect(tooLong.message).toMatch(/^\[too_long\].*161.*160/);
    const badKey = await call(M.getValue, { ...base, objectId: 1n, keyStr: "a b" });
    expect(badKey.code).toBe(Code.InvalidArgument);
    const bothKeys = await call(M.getValue, { ...base, objectId: 1n, key: 5, keyStr: "x" });
    expect(bothKeys.code).toBe(Code.InvalidArgument);
    expect(bothKeys.message).toMatch(/^\[both_provided\]/);
    expect((await call(M.get, { clsId: "", partitionId: 0, objectId: 1n })).code).toBe(
      Code.InvalidArgument,
    );

    // Unknown collection or partition → NOT_FOUND.
    const unknownCls = await call(M.get, { clsId: "nope", partitionId: 0, objectId: 1n });
    expect(unknownCls.code).toBe(Code.NotFound);
    expect(unknownCls.message).toBe("[not_found] collection nope not found");
    expect((await call(M.getValue, { clsId: "c", partitionId: 9, objectId: 1n })).code).toBe(
      Code.NotFound,
    );
    expect((await call(M.listObjects, { clsId: "c", partitionId: 9 })).code).toBe(Code.NotFound);

    // int32 partition ids: negative → INVALID_ARGUMENT.
    const negSet = await call(M.set, { clsId: "c", partitionId: -1, objectId: 1n, object: {} });
    expect(negSet.code).toBe(Code.InvalidArgument);
    expect(negSet.message).toContain("partition_id");
    const negSv = await call(M.setValue, {
      clsId: "c",
      partitionId: -5,
      objectId: 1n,
      value: v("x"),
    });
    expect(negSv.code).toBe(Code.InvalidArgument);
    expect(
      (await call(M.merge, { clsId: "c", partitionId: -1, objectId: 1n, object: {} })).code,
    ).toBe(Code.InvalidArgument);

    // Regression (spec §12): a missing `object` in Set never crashes the handler.
    const noObj = await call(M.set, { ...base, objectId: 1n });
    expect(noObj.code).toBe(Code.InvalidArgument);
    expect(noObj.message).toBe("[invalid_argument] object is required");
    expect((await call(M.merge, { ...base, objectId: 1n })).code).toBe(Code.InvalidArgument);
    expect((await call(M.setValue, { ...base, objectId: 1n, key: 1 })).code).toBe(
      Code.InvalidArgument,
    );
    expect((await call(M.getValue, { ...base, objectId: 5n, key: 1 })).code).toBe(0); // still serving

    // Duplicate keys after normalization, and a key both set and deleted.
    const dup = await call(M.set, {
      ...base,
      objectId: 2n,
      object: { entries: { 4: v("a") }, entriesStr: { "4": v("b") } },
    });
    expect(dup.code).toBe(Code.InvalidArgument);
    const dup2 = await call(M.batchSetValues, {
      ...base,
      objectId: 2n,
      values: { A: v("1"), a: v("2") },
    });
    expect(dup2.code).toBe(Code.InvalidArgument);
    const setDel = await call(M.batchSetValues, {
      ...base,
      objectId: 2n,
      values: { a: v("1") },
      deleteKeys: ["A"],
    });
    expect(setDel.code).toBe(Code.InvalidArgument);
    expect(
      (await call(M.batchSetValues, { ...base, objectId: 2n, values: { "": v("1") } })).code,
    ).toBe(Code.InvalidArgument);

    // Not ready → UNAVAILABLE; oversized → RESOURCE_EXHAUSTED; unexpected → INTERNAL, no leak.
    server.plane.ready = false;
    const unavailable = await call(M.get, { ...base, objectId: 5n });
    server.plane.ready = true;
    expect(unavailable.code).toBe(Code.Unavailable);
    server.plane.failNext = new DataPlaneError(
      "too_large",
      "object has 100001 entries; use ListValues",
    );
    const big = await call(M.get, { ...base, objectId: 5n });
    expect(big.code).toBe(Code.ResourceExhausted);
    expect(big.message).toContain("ListValues");
    const before = server.internalErrors.length;
    server.plane.failNext = new TypeError("secret internals at /var/lib/odgm");
    const internal = await call(M.getValue, { ...base, objectId: 5n, key: 1 });
    expect(internal.code).toBe(Code.Internal);
    expect(internal.message).toBe("internal error");
    expect(server.internalErrors.length).toBe(before + 1);
    expect(String(server.internalErrors.at(-1))).toContain("secret internals");
    server.plane.failNext = new DataPlaneError("not_leader", "not the leader", {
      leaderHint: "node-2",
    });
    const notLeader = await call(M.setValue, { ...base, objectId: 5n, key: 1, value: v("x") });
    expect(notLeader.code).toBe(Code.Unavailable);
    expect(notLeader.trailers["odgm-leader-hint"]).toBe("node-2");
    // An error thrown inside a stream is a status too.
    server.plane.failNext = new Error("boom");
    const streamFail = await call(M.listValues, { ...base, objectId: 5n });
    expect(streamFail.code).toBe(Code.Internal);
    expect(streamFail.message).toBe("internal error");
  });
});

describe.each(clients)("feature flags off, via %s", (client, make) => {
  let server: TestServer;
  let c: Caller;
  beforeAll(async () => {
    const plane = createMemoryPlane({
      capabilities: { granularEntryStorage: false, eventPipelineV2: false },
    });
    server = await startServer({ plane, stringIds: false, stringKeys: false });
    c = make(server);
  });
  afterAll(async () => {
    await c?.close();
    await server?.close();
  });

  it("string ids/keys are UNIMPLEMENTED; Capabilities reports exactly the options and the plane", async () => {
    const call = transcripts.recorder(client, "flags-off", c);
    const base = { clsId: "c", partitionId: 0 };
    const sid = await call(M.get, { ...base, objectIdStr: "user-1" });
    expect(sid.code).toBe(Code.Unimplemented);
    expect(sid.message).toContain("string object ids are disabled");
    expect((await call(M.getValue, { ...base, objectId: 1n, keyStr: "name" })).code).toBe(
      Code.Unimplemented,
    );
    expect(
      (await call(M.setValue, { ...base, objectId: 1n, keyStr: "name", value: v("x") })).code,
    ).toBe(Code.Unimplemented);
    expect(
      (await call(M.set, { ...base, objectId: 1n, object: { entriesStr: { name: v("x") } } })).code,
    ).toBe(Code.Unimplemented);
    expect(
      (await call(M.batchSetValues, { ...base, objectId: 1n, values: { name: v("x") } })).code,
    ).toBe(Code.Unimplemented);
    expect((await call(M.listValues, { ...base, objectId: 1n, keyPrefix: "n" })).code).toBe(
      Code.Unimplemented,
    );
    expect((await call(F.invokeObj, { ...base, objectIdStr: "s", fnId: "f" })).code).toBe(
      Code.Unimplemented,
    );

    // Canonical numeric strings are the numeric id/key, so they stay accepted.
    expect(
      (await call(M.setValue, { ...base, objectIdStr: "42", keyStr: "7", value: v("x") })).code,
    ).toBe(0);
    const gv = await call(M.getValue, { ...base, objectId: 42n, key: 7 });
    expect(text(gv.responses[0]?.value?.data)).toBe("x");
    expect(
      (await call(M.batchSetValues, { ...base, objectId: 42n, values: { "8": v("y") } })).code,
    ).toBe(0);

    const caps = await call(M.capabilities, {});
    expect(caps.responses[0]).toMatchObject({
      stringIds: false,
      stringEntryKeys: false,
      granularEntryStorage: false,
      eventPipelineV2: false,
    });
    // Reports the plane's live state, not a cached guess (spec §12: misreported pipeline).
    server.plane.caps = { granularEntryStorage: true, eventPipelineV2: true };
    const caps2 = await call(M.capabilities, {});
    expect(caps2.responses[0]).toMatchObject({ granularEntryStorage: true, eventPipelineV2: true });
  });
});

describe("all clients", () => {
  it.skipIf(clients.length < 2)(
    "produce identical transcripts (codes, messages, responses, trailers)",
    () => transcripts.expectIdentical(clients.map(([name]) => name)),
  );
});
