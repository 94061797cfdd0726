// The DataService conformance scenario (spec §2–§4, §6): numeric and string ids and keys,
// batches with CAS, listing with cursors and prefixes, and the status codes of bad input.
// Both the gRPC API package (its handlers over an in-memory data plane) and odgm (a real
// node on RocksDB) run these cases, through connect-node and through Google's gRPC C-core,
// and compare the transcripts. Each case is a function of a recorded call, so a suite runs
// it inside its own `describe` against its own server; the cases run in this order on one
// server that serves collection "c" with partitions 0..2, empty at the start, whose
// functions are `echo` (answers the payload reversed, invocation id "inv-echo"), `fail`
// (answers APP_ERROR) and `f` (answers "numeric:<id>:f" or "string:<id>:f").
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { expect } from "vitest";
import {
  CapabilitiesRequestSchema,
  DataService,
  InvocationRequestSchema,
  ObjectInvocationRequestSchema,
  OprcFunction,
  ResponseStatus,
  StatsRequestSchema,
  ValType,
} from "../../src/index.js";
import type { RecordedCall } from "./transcripts.js";

/** One case of the scenario. */
export interface DataServiceCase {
  /** Transcript name (the same on every client, so transcripts can be compared). */
  readonly name: string;
  /** Test title. */
  readonly title: string;
  readonly run: (call: RecordedCall) => Promise<void>;
}

const M = DataService.method;
const F = OprcFunction.method;
const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined =>
  b === undefined ? undefined : new TextDecoder().decode(b);
const v = (s: string) => ({ data: utf8(s) });

async function numericIdsAndKeys(call: RecordedCall): Promise<void> {
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
  expect(o?.metadata).toMatchObject({ clsId: "c", partitionId: 0, objectId: 1n, objectIdStr: "1" });

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

  const zeroValue = { data: utf8("zero"), type: ValType.BYTE };
  expect((await call(M.setValue, { ...obj, key: 0, value: zeroValue })).code).toBe(0);
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
}

async function stringIdsAndKeys(call: RecordedCall): Promise<void> {
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
  // CAS on a missing object compares against 0.
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
}

async function listing(call: RecordedCall): Promise<void> {
  const obj = { clsId: "c", partitionId: 2, objectIdStr: "lister" };
  const values: Record<string, { data: Uint8Array }> = {};
  for (const k of ["3", "1", "bb", "a", "ccc", "ab", "abc", "abcdefgh-long-key"]) {
    values[k] = v(`v${k}`);
  }
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
  expect(p2.responses.map((e) => e.key)).toEqual(["ab", "bb", "abc", "ccc", "abcdefgh-long-key"]);
  expect(p2.responses.at(-1)?.nextCursor).toBeUndefined();

  // Default limit (0 → 100) returns everything.
  expect((await call(M.listValues, { ...obj })).responses).toHaveLength(8);
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
  expect(bad.responses).toHaveLength(0);
  // A cursor from another object is rejected, never silently restarted.
  const foreign = await call(M.listValues, {
    clsId: "c",
    partitionId: 2,
    objectIdStr: "other",
    cursor,
  });
  expect(foreign.code).toBe(Code.InvalidArgument);

  await call(M.setValue, { clsId: "c", partitionId: 2, objectId: 9n, key: 1, value: v("n") });
  for (const objectIdStr of ["other", "dead"]) {
    await call(M.setValue, { clsId: "c", partitionId: 2, objectIdStr, keyStr: "q", value: v("q") });
  }
  await call(M.delete, { clsId: "c", partitionId: 2, objectIdStr: "dead" });
  const objs = await call(M.listObjects, { clsId: "c", partitionId: 2, limit: 2 });
  expect(objs.responses.map((o) => o.objectId)).toEqual(["9", "lister"]);
  expect(objs.responses[1]?.entryCount).toBe(8n);
  expect(objs.responses[1]?.version).toBe(1n);
  const rest = await call(M.listObjects, {
    clsId: "c",
    partitionId: 2,
    cursor: objs.responses[1]?.nextCursor,
  });
  expect(rest.responses.map((o) => o.objectId)).toEqual(["other"]);
  const prefixed = await call(M.listObjects, { clsId: "c", partitionId: 2, objectIdPrefix: "L" });
  expect(prefixed.responses.map((o) => o.objectId)).toEqual(["lister"]);
}

async function badInput(call: RecordedCall): Promise<void> {
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
  // A cls_id that no collection can have is refused, and never echoed in full: a 100 KB
  // name used to come back in grpc-message (RESOURCE_EXHAUSTED on the client, or INTERNAL).
  for (const clsId of ["a/b", "x".repeat(129), "y".repeat(100_000)]) {
    const bad = await call(M.get, { clsId, partitionId: 0, objectId: 1n });
    expect(bad.code, clsId.slice(0, 10)).toBe(Code.InvalidArgument);
    expect(bad.message).toMatch(/^\[invalid_argument\] cls_id ".*is not a collection name/);
    expect(bad.message.length).toBeLessThan(300);
  }

  // Unknown collection or partition → NOT_FOUND.
  const unknownCls = await call(M.get, { clsId: "nope", partitionId: 0, objectId: 1n });
  expect(unknownCls.code).toBe(Code.NotFound);
  expect(unknownCls.message).toMatch(/^\[not_found\] collection "?nope"? /);
  const unknown = [
    await call(M.getValue, { clsId: "c", partitionId: 9, objectId: 1n, key: 1 }),
    await call(M.setValue, { clsId: "nope", partitionId: 0, objectId: 1n, key: 1, value: v("x") }),
    await call(M.listObjects, { clsId: "c", partitionId: 9 }),
    await call(M.listValues, { clsId: "nope", partitionId: 0, objectId: 1n }),
  ];
  expect(unknown.map((r) => r.code)).toEqual(unknown.map(() => Code.NotFound));

  // int32 partition ids: negative → INVALID_ARGUMENT.
  const negSet = await call(M.set, { clsId: "c", partitionId: -1, objectId: 1n, object: {} });
  expect(negSet.code).toBe(Code.InvalidArgument);
  expect(negSet.message).toContain("partition_id");
  const negative = [
    await call(M.setValue, { clsId: "c", partitionId: -5, objectId: 1n, value: v("x") }),
    await call(M.merge, { clsId: "c", partitionId: -1, objectId: 1n, object: {} }),
  ];
  expect(negative.map((r) => r.code)).toEqual([Code.InvalidArgument, Code.InvalidArgument]);

  // Regression (spec §12): a missing `object` in Set is INVALID_ARGUMENT, never a crash.
  const noObj = await call(M.set, { ...base, objectId: 1n });
  expect(noObj.code).toBe(Code.InvalidArgument);
  expect(noObj.message).toBe("[invalid_argument] object is required");
  expect((await call(M.merge, { ...base, objectId: 1n })).code).toBe(Code.InvalidArgument);
  expect((await call(M.setValue, { ...base, objectId: 1n, key: 1 })).code).toBe(
    Code.InvalidArgument,
  );
  expect((await call(M.getValue, { ...base, objectId: 5n, key: 1 })).code).toBe(0); // still serving

  // Duplicate keys after normalization, a key both set and deleted, an empty key.
  const refused = [
    await call(M.set, {
      ...base,
      objectId: 2n,
      object: { entries: { 4: v("a") }, entriesStr: { "4": v("b") } },
    }),
    await call(M.batchSetValues, { ...base, objectId: 2n, values: { A: v("1"), a: v("2") } }),
    await call(M.batchSetValues, {
      ...base,
      objectId: 2n,
      values: { a: v("1") },
      deleteKeys: ["A"],
    }),
    await call(M.batchSetValues, { ...base, objectId: 2n, values: { "": v("1") } }),
  ];
  expect(refused.map((r) => r.code)).toEqual(refused.map(() => Code.InvalidArgument));
  expect((await call(M.get, { ...base, objectId: 2n })).code).toBe(Code.NotFound);
}

async function statsAndInvocations(call: RecordedCall): Promise<void> {
  const stats = await call(M.stats, create(StatsRequestSchema));
  expect(stats.code).toBe(0);
  const shards = stats.responses[0]?.shards ?? [];
  expect(shards.find((s) => s.collection === "c" && s.partitionId === 2)?.count).toBe(3n);

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
    create(ObjectInvocationRequestSchema, { clsId: "c", partitionId: 1, objectId: 5n, fnId: "f" }),
  );
  expect(text(byNum.responses[0]?.payload)).toBe("numeric:5:f");
  const byStr = await call(F.invokeObj, {
    clsId: "c",
    partitionId: 1,
    objectIdStr: "Obj-A",
    fnId: "f",
  });
  expect(text(byStr.responses[0]?.payload)).toBe("string:obj-a:f");

  const refused = [
    await call(F.invokeFn, { clsId: "c", partitionId: 1 }),
    await call(F.invokeObj, { clsId: "c", partitionId: 1, fnId: "f" }),
    await call(F.invokeFn, { clsId: "nope", partitionId: 0, fnId: "f" }),
  ];
  expect(refused.map((r) => r.code)).toEqual([
    Code.InvalidArgument,
    Code.InvalidArgument,
    Code.NotFound,
  ]);
}

/** The cases, in the order a suite runs them on one server. */
export const DATA_SERVICE_SCENARIO: readonly DataServiceCase[] = [
  {
    name: "numeric",
    title: "numeric ids and keys: Get/Set/GetValue/SetValue/DeleteValue/Merge/Delete",
    run: numericIdsAndKeys,
  },
  {
    name: "string",
    title: "string ids and keys: SetValue/GetValue/Get/BatchSetValues with CAS",
    run: stringIdsAndKeys,
  },
  {
    name: "list",
    title: "ListValues and ListObjects stream pages with cursors; prefixes return longer keys",
    run: listing,
  },
  {
    name: "invoke",
    title: "Stats, Capabilities, InvokeFn and InvokeObj",
    run: statsAndInvocations,
  },
  {
    name: "status",
    title: "bad input: ids, keys, unknown collection or partition, missing object, duplicates",
    run: badInput,
  },
];
