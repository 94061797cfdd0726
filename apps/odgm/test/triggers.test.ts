// Triggers end to end: a real odgm (RocksDB) fires data and function triggers to a real gRPC
// OprcFunction server on loopback, through the collection's function routes. Each received
// payload is decoded and checked (EventInfo fields, numeric and string ids and keys).
import { fromBinary, type MessageInitShape as Init } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  DataService,
  EventType,
  type ObjectEventSchema,
  OprcFunction,
  ResponseStatus,
  TriggerPayloadSchema,
} from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type FunctionServer,
  type ReceivedCall,
  startFunctionServer,
} from "./fixtures/function-server.js";
import { startTempNode, type TempNode } from "./fixtures/temp-node.js";

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const v = (s: string) => ({ data: utf8(s) });

let functions: FunctionServer;
let n: TempNode;
let data: ReturnType<typeof createClient<typeof DataService>>;
let fns: ReturnType<typeof createClient<typeof OprcFunction>>;

beforeAll(async () => {
  functions = await startFunctionServer();
  const routes = Object.fromEntries(
    ["on-num", "on-str", "f", "fail", "crash", "done", "errored"].map((fn) => [
      fn,
      { url: functions.url },
    ]),
  );
  n = await startTempNode({
    ODGM_COLLECTION: JSON.stringify([
      { name: "c", partitionCount: 2, invocations: { fnRoutes: routes } },
    ]),
  });
  const transport = createGrpcTransport({ baseUrl: n.node.url });
  data = createClient(DataService, transport);
  fns = createClient(OprcFunction, transport);
});
afterAll(async () => {
  await n?.close();
  await functions?.close();
});

const payloadOf = (c: ReceivedCall) => fromBinary(TriggerPayloadSchema, c.request.payload);
const fnIs = (fn: string) => (c: ReceivedCall) => c.request.fnId === fn;

/** Every data action of numeric key 3 → stateless `on-num`; of string key "title" → `on-str` on object "watcher". */
const dataEvents = (): Init<typeof ObjectEventSchema> => {
  const num = { clsId: "c", partitionId: 0, fnId: "on-num", reqOptions: { tag: "n" } };
  const str = { clsId: "c", partitionId: 1, fnId: "on-str", objectIdStr: "watcher" };
  return {
    dataTrigger: { 3: { onCreate: [num], onUpdate: [num], onDelete: [num] } },
    dataTriggerStr: { title: { onCreate: [str], onUpdate: [str], onDelete: [str] } },
  };
};

describe("data triggers", () => {
  it("fire on create, update and delete with numeric ids and keys", async () => {
    const obj = { clsId: "c", partitionId: 0, objectId: 77n };
    await data.set({ ...obj, object: { event: dataEvents() } });
    await data.setValue({ ...obj, key: 3, value: v("a") });
    await data.setValue({ ...obj, key: 3, value: v("b") });
    await data.setValue({ ...obj, key: 4, value: v("no trigger") });
    await data.deleteValue({ ...obj, key: 3 });
    const calls = await functions.waitFor(
      (c) => fnIs("on-num")(c) && payloadOf(c).eventInfo?.sourceObjectId === 77n,
      3,
    );
    const infos = calls.map((c) => payloadOf(c).eventInfo);
    expect(infos.map((i) => i?.eventType)).toEqual([
      EventType.DATA_CREATE,
      EventType.DATA_UPDATE,
      EventType.DATA_DELETE,
    ]);
    for (const info of infos) {
      expect(info).toMatchObject({
        sourceClsId: "c",
        sourcePartitionId: 0,
        sourceObjectId: 77n,
        key: 3,
      });
      expect(info?.keyStr).toBeUndefined();
      expect(info?.timestamp).toBeGreaterThan(0n);
    }
    expect(infos.map((i) => i?.context.object_version)).toEqual(["2", "3", "5"]);
    const first = calls[0];
    expect(first?.kind).toBe("fn");
    expect(first?.request.options).toMatchObject({ tag: "n", "oprc-trigger-depth": "1" });
  });

  it("keep string ids and keys in the payload; deleting the object fires per-entry on_delete", async () => {
    const obj = { clsId: "c", partitionId: 1, objectIdStr: "Doc-1" };
    await data.set({ ...obj, object: { event: dataEvents(), entriesStr: { other: v("o") } } });
    await data.setValue({ ...obj, keyStr: "Title", value: v("t1") });
    await data.batchSetValues({ ...obj, values: { title: v("t2"), "3": v("n") } });
    await data.delete(obj);

    const str = await functions.waitFor(
      (c) => fnIs("on-str")(c) && payloadOf(c).eventInfo?.sourceObjectIdStr === "doc-1",
      3,
    );
    const infos = str.map((c) => payloadOf(c).eventInfo);
    expect(infos.map((i) => i?.eventType)).toEqual([
      EventType.DATA_CREATE,
      EventType.DATA_UPDATE,
      EventType.DATA_DELETE, // regression (spec §12): per-entry on_delete on object delete
    ]);
    for (const info of infos) {
      expect(info).toMatchObject({
        sourceClsId: "c",
        sourcePartitionId: 1,
        sourceObjectId: 0n,
        sourceObjectIdStr: "doc-1", // regression (spec §12): string ids kept in payloads
        keyStr: "title",
      });
      expect(info?.key).toBeUndefined();
      expect(info?.context.key_str).toBe("title");
    }
    const target = str[0];
    expect(target?.kind).toBe("obj");
    if (target?.kind === "obj") {
      expect(target.request).toMatchObject({ clsId: "c", partitionId: 1, objectIdStr: "watcher" });
    }
    // Numeric key 3 of a string-id object: key set, id string.
    const num = await functions.waitFor(
      (c) => fnIs("on-num")(c) && payloadOf(c).eventInfo?.sourceObjectIdStr === "doc-1",
      2,
    );
    expect(num.map((c) => payloadOf(c).eventInfo?.eventType)).toEqual([
      EventType.DATA_CREATE,
      EventType.DATA_DELETE,
    ]);
    expect(payloadOf(num[0] as ReceivedCall).eventInfo?.key).toBe(3);
    // Revived after delete: triggers are gone with the event config (delete removes it).
    await data.setValue({ ...obj, keyStr: "title", value: v("t3") });
    expect((await data.get(obj)).obj?.event).toBeUndefined();
  });
});

describe("function triggers", () => {
  const events = {
    funcTrigger: {
      f: {
        onComplete: [{ clsId: "c", partitionId: 0, fnId: "done" }],
        onError: [{ clsId: "c", partitionId: 0, fnId: "errored" }],
      },
      fail: { onError: [{ clsId: "c", partitionId: 0, fnId: "errored" }] },
      crash: { onError: [{ clsId: "c", partitionId: 0, fnId: "errored", objectId: 5n }] },
    },
  };

  it("on_complete fires after a successful InvokeObj, with the function's output", async () => {
    await data.set({
      clsId: "c",
      partitionId: 0,
      objectIdStr: "acct-9",
      object: { event: events },
    });
    const res = await fns.invokeObj({
      clsId: "c",
      partitionId: 0,
      objectIdStr: "acct-9",
      fnId: "f",
    });
    expect(res.status).toBe(ResponseStatus.OKAY);
    const [done] = await functions.waitFor(fnIs("done"));
    const p = payloadOf(done as ReceivedCall);
    expect(p.eventInfo).toMatchObject({
      eventType: EventType.FUNC_COMPLETE,
      fnId: "f",
      sourceClsId: "c",
      sourceObjectIdStr: "acct-9",
    });
    expect(new TextDecoder().decode(p.originalPayload)).toBe("string:acct-9:f");
  });

  it("on_error fires for an application error and for a failed call", async () => {
    await data.set({ clsId: "c", partitionId: 0, objectId: 12n, object: { event: events } });
    const res = await fns.invokeObj({
      clsId: "c",
      partitionId: 0,
      objectId: 12n,
      fnId: "fail",
      payload: utf8("in"),
    });
    expect(res.status).toBe(ResponseStatus.APP_ERROR);
    await expect(
      fns.invokeObj({ clsId: "c", partitionId: 0, objectId: 12n, fnId: "crash" }),
    ).rejects.toThrow(/function crashed/);
    const errs = await functions.waitFor(
      (c) => fnIs("errored")(c) && payloadOf(c).eventInfo?.sourceObjectId === 12n,
      2,
    );
    const infos = errs.map((c) => payloadOf(c).eventInfo);
    expect(infos.map((i) => i?.fnId)).toEqual(["fail", "crash"]);
    expect(infos.every((i) => i?.eventType === EventType.FUNC_ERROR)).toBe(true);
    expect(infos[1]?.context.error).toContain("function crashed");
    expect(errs[1]?.kind).toBe("obj"); // the crash trigger targets object 5
    expect(new TextDecoder().decode(payloadOf(errs[0] as ReceivedCall).originalPayload)).toBe("in");
  });

  it("events are counted in /metrics", async () => {
    const text = await (await fetch(`${n.node.url}/metrics`)).text();
    expect(text).toMatch(/odgm_events_emitted_total\{collection="c",action="create"\} [1-9]/);
    expect(text).toMatch(/odgm_triggers_fired_total\{collection="c",kind="object"\} [1-9]/);
    expect(text).toMatch(/odgm_invocations_total\{kind="obj",status="OKAY"\} [1-9]/);
  });

  it("deliveries are counted per target, and none stays in flight", async () => {
    let text = "";
    for (let i = 0; i < 50; i++) {
      text = await (await fetch(`${n.node.url}/metrics`)).text();
      if (/odgm_trigger_inflight\{target="c\/on-num"\} 0\b/.test(text)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(text).toMatch(/odgm_trigger_inflight\{target="c\/on-num"\} 0\b/);
    expect(text).toMatch(/odgm_trigger_deliveries_total\{target="c\/on-num",outcome="ok"\} [1-9]/);
    expect(text).toMatch(/odgm_trigger_deliveries_total\{target="c\/errored",outcome="ok"\} [1-9]/);
  });
});
