// ODGM on Zenoh, end to end: a real odgm process connects through the loopback router
// (@oprc/zenoh-router, its own process) and this test process talks to it with the real
// zenoh-ts client. Covers every key kind with numeric and string ids (ids that need
// percent-encoding included), change events in order, liveliness and capabilities, bad
// input, and the router killed and restarted while the node runs.
import { createServer } from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Config, open, type Sample, SampleKind, type Session } from "@eclipse-zenoh/zenoh-ts";
import {
  BatchSetValuesRequestSchema,
  CapabilitiesResponseSchema,
  EventInfoSchema,
  EventType,
  InvocationRequestSchema,
  InvocationResponseSchema,
  ObjDataSchema,
  ObjectInvocationRequestSchema,
  ResponseStatus,
  TriggerPayloadSchema,
  ValDataSchema,
  ValueResponseSchema,
} from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeKeyChunk } from "../src/zenoh/zenoh-keys.js";
import { type FunctionServer, startFunctionServer } from "./fixtures/function-server.js";
import { type OdgmProcess, startOdgmProcess } from "./fixtures/odgm-process.js";
import { type Answer, type RouterProcess, replies, startRouter } from "./fixtures/zenoh-router.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

let router: RouterProcess;
let node: OdgmProcess;
let session: Session;
let functions: FunctionServer;

async function readyz(): Promise<{ status: number; body: Record<string, string> }> {
  const res = await fetch(`${node.url}/readyz`);
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

/** Polls until `check` holds (no time assertion: the suite's timeout is the only bound). */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 100));
}

const zenohIs = (state: "up" | "down") => async () => (await readyz()).body.zenoh === state;

/** Runs a get and returns its one reply. */
async function query(key: string, payload?: Uint8Array): Promise<Answer> {
  const answers = await replies(session, key, payload);
  expect(answers).toHaveLength(1);
  return answers[0] as Answer;
}

async function ok(key: string, payload?: Uint8Array): Promise<Uint8Array> {
  const a = await query(key, payload);
  if ("err" in a) throw new Error(`${key}: ${a.err.code}: ${a.err.message}`);
  return a.ok;
}

async function err(key: string, payload?: Uint8Array): Promise<{ code: string; message: string }> {
  const a = await query(key, payload);
  if ("ok" in a) throw new Error(`${key}: expected an error reply`);
  return a.err;
}

const val = (s: string) => toBinary(ValDataSchema, create(ValDataSchema, { data: enc.encode(s) }));
const obj = (entries: Record<string, string>) =>
  toBinary(
    ObjDataSchema,
    create(ObjDataSchema, {
      entriesStr: Object.fromEntries(
        Object.entries(entries).map(([k, v]) => [k, { data: enc.encode(v) }]),
      ),
    }),
  );
const entriesOf = (bytes: Uint8Array) => {
  const o = fromBinary(ObjDataSchema, bytes);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(o.entries)) out[k] = dec.decode(v.data);
  for (const [k, v] of Object.entries(o.entriesStr)) out[k] = dec.decode(v.data);
  return out;
};
const valueResponse = (bytes: Uint8Array) => fromBinary(ValueResponseSchema, bytes);

// Objects addressed both ways: numeric under objects/, strings (some needing encoding)
// under sobjects/.
const P = "oprc/zc/1";
const STRING_IDS = ["plain-id", "*", "**", "a$b", "q?x", "h#1", "@at", "100%", "ünï"];

beforeAll(async () => {
  router = await startRouter(0);
  functions = await startFunctionServer();
  const fnRoutes = { echo: { url: functions.url }, fail: { url: functions.url } };
  node = await startOdgmProcess({
    ODGM_STORAGE: "memory",
    ODGM_STRING_ID_UNICODE: "true",
    ODGM_ZENOH_ENDPOINT: `ws/127.0.0.1:${router.port}`,
    ODGM_ZENOH_RETRY_MS: "200",
    ODGM_COLLECTION: JSON.stringify([
      { name: "zc", partition_count: 2, invocations: { fnRoutes } },
    ]),
  });
  await until(zenohIs("up"));
  session = await open(new Config(`ws/127.0.0.1:${router.port}`, 10_000));
});

afterAll(async () => {
  await session?.close();
  node?.child.kill("SIGTERM");
  await node?.exited;
  router?.child.kill("SIGTERM");
  await router?.exited;
  await functions?.close();
});

describe("objects", () => {
  it("sets (acknowledged query), gets and deletes a numeric-id object", async () => {
    expect(await ok(`${P}/objects/42/set`, obj({ a: "1", b: "2" }))).toEqual(new Uint8Array(0));
    expect(entriesOf(await ok(`${P}/objects/42`))).toEqual({ a: "1", b: "2" });
    await ok(`${P}/objects/42/delete`);
    expect((await err(`${P}/objects/42`)).code).toBe("not_found");
  });

  it("applies put and delete samples on an object key", async () => {
    await session.put(`${P}/objects/7`, obj({ k: "v" }));
    await until(async () => "ok" in (await query(`${P}/objects/7`)));
    expect(entriesOf(await ok(`${P}/objects/7`))).toEqual({ k: "v" });
    await session.delete(`${P}/objects/7`);
    await until(async () => "err" in (await query(`${P}/objects/7`)));
    expect((await err(`${P}/objects/7`)).code).toBe("not_found");
  });

  it.each(STRING_IDS)("serves string id %j under sobjects/, percent-encoded", async (id) => {
    const key = `${P}/sobjects/${encodeKeyChunk(id)}`;
    await ok(`${key}/set`, obj({ who: id }));
    expect(entriesOf(await ok(key))).toEqual({ who: id });
    const meta = fromBinary(ObjDataSchema, await ok(key)).metadata;
    expect(meta?.objectIdStr).toBe(id.normalize("NFC").toLowerCase());
    await ok(`${key}/delete`);
    expect((await err(key)).code).toBe("not_found");
  });

  it('numeric id N and string id "N" are one object', async () => {
    await ok(`${P}/objects/99/set`, obj({ x: "y" }));
    expect(entriesOf(await ok(`${P}/sobjects/99`))).toEqual({ x: "y" });
  });
});

describe("entries", () => {
  it("sets, gets and deletes numeric and string entry keys with versions, on both id kinds", async () => {
    for (const o of [`${P}/objects/500`, `${P}/sobjects/${encodeKeyChunk("ent*ry")}`]) {
      await ok(`${o}/values/7/set`, val("seven"));
      const key = encodeKeyChunk("na#me*");
      await ok(`${o}/values/${key}/set`, val("named"));
      const seven = valueResponse(await ok(`${o}/values/7`));
      expect(dec.decode(seven.value?.data)).toBe("seven");
      const named = valueResponse(await ok(`${o}/values/${key}`));
      expect(dec.decode(named.value?.data)).toBe("named");
      expect(named.objectVersion).toBe(2n);
      await ok(`${o}/values/${key}/delete`);
      // As GetValue over gRPC: a missing entry is an answer without a value.
      const gone = valueResponse(await ok(`${o}/values/${key}`));
      expect(gone.value).toBeUndefined();
      expect(gone.objectVersion).toBe(3n);
      // Put and delete samples on an entry key.
      const has8 = async () => valueResponse(await ok(`${o}/values/8`)).value !== undefined;
      await session.put(`${o}/values/8`, val("eight"));
      await until(has8);
      expect(dec.decode(valueResponse(await ok(`${o}/values/8`)).value?.data)).toBe("eight");
      await session.delete(`${o}/values/8`);
      await until(async () => !(await has8()));
    }
  });

  it("applies batches by put and by query, with CAS on the object version", async () => {
    const o = `${P}/sobjects/batch-obj`;
    const batch = (values: Record<string, string>, deleteKeys: string[], expected?: bigint) =>
      toBinary(
        BatchSetValuesRequestSchema,
        create(BatchSetValuesRequestSchema, {
          values: Object.fromEntries(
            Object.entries(values).map(([k, v]) => [k, { data: enc.encode(v) }]),
          ),
          deleteKeys,
          ...(expected === undefined ? {} : { expectedObjectVersion: expected }),
        }),
      );
    await session.put(`${o}/values-batch/inv-1`, batch({ a: "1", b: "2" }, []));
    await until(async () => valueResponse(await ok(`${o}/values/b`)).value !== undefined);
    expect(valueResponse(await ok(`${o}/values/a`)).objectVersion).toBe(1n);
    await ok(`${o}/values-batch/inv-2`, batch({ c: "3" }, ["a"], 1n));
    expect(entriesOf(await ok(o))).toEqual({ b: "2", c: "3" });
    expect((await err(`${o}/values-batch/inv-3`, batch({ d: "4" }, [], 1n))).code).toBe("aborted");
  });
});

describe("change events", () => {
  it("publishes every committed entry change on the entry's and the object's change key, in order", async () => {
    const id = "ev*ent$s";
    const o = `${P}/sobjects/${encodeKeyChunk(id)}`;
    const perEntry: Sample[] = [];
    const perObject: Sample[] = [];
    const s1 = await session.declareSubscriber(`${o}/values/k/change`, {
      handler: (s: Sample) => void perEntry.push(s),
    });
    const s2 = await session.declareSubscriber(`${o}/change`, {
      handler: (s: Sample) => void perObject.push(s),
    });
    // Declarations on the loopback router take effect at once; writes go through queries
    // (acknowledged), so events follow in commit order.
    for (const v of ["1", "2", "3"]) await ok(`${o}/values/k/set`, val(v));
    await ok(`${o}/values/other/set`, val("x"));
    await ok(`${o}/values/k/delete`);
    await until(async () => perEntry.length >= 4 && perObject.length >= 5);
    const infos = perEntry.map((s) => fromBinary(EventInfoSchema, s.payload().toBytes()));
    expect(infos.map((i) => i.eventType)).toEqual([
      EventType.DATA_CREATE,
      EventType.DATA_UPDATE,
      EventType.DATA_UPDATE,
      EventType.DATA_DELETE,
    ]);
    expect(infos.map((i) => i.context.version_after)).toEqual(["1", "2", "3", "5"]);
    expect(infos.every((i) => i.keyStr === "k" && i.sourceObjectIdStr === id)).toBe(true);
    const objectKeys = perObject.map(
      (s) => fromBinary(EventInfoSchema, s.payload().toBytes()).keyStr,
    );
    expect(objectKeys).toEqual(["k", "k", "k", "other", "k"]);
    expect(perEntry.every((s) => s.kind() === SampleKind.PUT)).toBe(true);
    await s1.undeclare();
    await s2.undeclare();
  });
});

describe("invocations", () => {
  const invReq = (payload: string) =>
    toBinary(
      InvocationRequestSchema,
      create(InvocationRequestSchema, { payload: enc.encode(payload), options: { a: "b" } }),
    );
  const objReq = (payload: string) =>
    toBinary(
      ObjectInvocationRequestSchema,
      create(ObjectInvocationRequestSchema, { payload: enc.encode(payload) }),
    );
  const response = (b: Uint8Array) => fromBinary(InvocationResponseSchema, b);

  it("routes sync invocation queries like InvokeFn and InvokeObj", async () => {
    const fn = response(await ok(`${P}/invokes/echo`, invReq("abc")));
    expect(fn.status).toBe(ResponseStatus.OKAY);
    expect(dec.decode(fn.payload)).toBe("cba");
    const id = "inv*o$k";
    const o = response(await ok(`${P}/sobjects/${encodeKeyChunk(id)}/invokes/echo`, objReq("xy")));
    expect(dec.decode(o.payload)).toBe("yx");
    const calls = await functions.waitFor(
      (c) => c.kind === "obj" && c.request.objectIdStr === id && c.request.fnId === "echo",
    );
    expect(calls[0]?.request.clsId).toBe("zc");
    const n = response(await ok(`${P}/objects/31/invokes/fail`, objReq("p")));
    expect(n.status).toBe(ResponseStatus.APP_ERROR);
  });

  it("runs async invocation puts through the route", async () => {
    await session.put(`${P}/objects/77/invokes/echo/async/inv-1`, objReq("async!"));
    const got = await functions.waitFor(
      (c) =>
        c.kind === "obj" &&
        c.request.objectId === 77n &&
        dec.decode(c.request.payload) === "async!",
    );
    expect(got).toHaveLength(1);
    await session.put(`${P}/invokes/echo/async/inv-2`, invReq("stateless-async"));
    await functions.waitFor(
      (c) => c.kind === "fn" && dec.decode(c.request.payload) === "stateless-async",
    );
  });

  it("publishes fired triggers on the target's async key, for functions hosted on Zenoh", async () => {
    const target = { clsId: "zc", partitionId: 1, fnId: "zfn", objectIdStr: "target" };
    const received: Sample[] = [];
    const sub = await session.declareSubscriber(`${P}/sobjects/target/invokes/zfn/async/*`, {
      handler: (s: Sample) => void received.push(s),
    });
    const o = `${P}/sobjects/trig`;
    const withTriggers = toBinary(
      ObjDataSchema,
      create(ObjDataSchema, {
        entriesStr: { seed: { data: enc.encode("0") } },
        event: {
          dataTriggerStr: { k: { onCreate: [target] } },
          funcTrigger: { echo: { onComplete: [target] }, fail: { onError: [target] } },
        },
      }),
    );
    await ok(`${o}/set`, withTriggers);
    await ok(`${o}/values/k/set`, val("v"));
    await until(async () => received.length >= 1);
    // A function-complete trigger fires for an invocation that came in over Zenoh too.
    await ok(`${o}/invokes/echo`, objReq("done"));
    await until(async () => received.length >= 2);
    // And a function-error trigger (`fail` answers APP_ERROR, a normal reply).
    await ok(`${o}/invokes/fail`, objReq("boom"));
    await until(async () => received.length >= 3);
    const payloads = received.map((s) => {
      const req = fromBinary(ObjectInvocationRequestSchema, s.payload().toBytes());
      expect(req.fnId).toBe("zfn");
      expect(req.objectIdStr).toBe("target");
      return fromBinary(TriggerPayloadSchema, req.payload).eventInfo;
    });
    expect(payloads.map((e) => e?.eventType)).toEqual([
      EventType.DATA_CREATE,
      EventType.FUNC_COMPLETE,
      EventType.FUNC_ERROR,
    ]);
    expect(payloads[0]?.keyStr).toBe("k");
    expect(payloads[1]?.fnId).toBe("echo");
    expect(payloads[2]?.fnId).toBe("fail");
    await sub.undeclare();
  });

  it("answers bad invocations with error replies", async () => {
    expect((await err(`${P}/invokes/echo`, new Uint8Array([0xff, 0xff]))).code).toBe(
      "invalid_argument",
    );
    expect((await err(`${P}/invokes/nope`, invReq("x"))).code).toBe("not_found");
    expect((await err(`${P}/invokes/echo/async/x`, invReq("x"))).code).toBe("invalid_argument");
    expect((await err(`${P}/invokes/*`, invReq("x"))).code).toBe("invalid_argument");
    expect((await err("oprc/nope/0/invokes/echo", invReq("x"))).code).toBe("not_found");
  });
});

describe("liveliness and capabilities", () => {
  it("has a token per node and per shard, and answers capabilities", async () => {
    const tokens: string[] = [];
    for await (const r of (await session.liveliness().get("**")) ?? []) {
      const res = r.result();
      if ("kind" in res) tokens.push(res.keyexpr().toString());
    }
    expect(tokens).toContain("odgm/nodes/1");
    expect(tokens).toContain("oprc/zc/0/shards/1");
    expect(tokens).toContain("oprc/zc/1/shards/1");
    const caps = fromBinary(CapabilitiesResponseSchema, await ok("odgm/nodes/1/capabilities"));
    expect(caps.stringIds).toBe(true);
  });
});

describe("bad input", () => {
  it("answers errors with a code and message and keeps serving", async () => {
    const garbage = new Uint8Array([0xff, 0xff, 0xff]);
    expect((await err(`${P}/objects/1/set`, garbage)).code).toBe("invalid_argument");
    expect((await err(`${P}/objects/1/values/3/set`, garbage)).code).toBe("invalid_argument");
    expect((await err(`${P}/objects/1/values-batch/i`, garbage)).code).toBe("invalid_argument");
    expect((await err(`${P}/objects/1/set`)).message).toMatch(/needs a payload/);
    expect((await err("oprc/nope/0/objects/1")).code).toBe("not_found");
    expect((await err("oprc/nope/0/objects/1/values/1/set", val("v"))).code).toBe("not_found");
    expect((await err(`${P}/sobjects/*`)).code).toBe("invalid_argument");
    expect((await err(`${P}/objects/*/values/1`)).code).toBe("invalid_argument");
    expect((await err(`${P}/objects/1/values/*`)).code).toBe("invalid_argument");
    expect((await err(`${P}/objects/abc`)).code).toBe("invalid_argument");
    expect((await err(`${P}/objects/99999999999999999999`)).code).toBe("invalid_argument");
    expect((await err(`${P}/sobjects/%zz`)).code).toBe("invalid_argument");
    expect((await err(`${P}/sobjects/${encodeKeyChunk("a/b")}`)).code).toBe("invalid_argument");
    expect((await err("oprc/zc/77/objects/1")).code).toBe("not_found");
    expect((await err(`${P}/objects/1/frobnicate`)).code).toBe("invalid_argument");
    // Malformed samples are refused without an answer; the node keeps serving.
    await session.put(`${P}/objects/1`, garbage);
    await session.put(`${P}/sobjects/*`, obj({ a: "b" }));
    await session.put("oprc/nope/0/objects/1", obj({ a: "b" }));
    await ok(`${P}/objects/1/set`, obj({ still: "alive" }));
    expect(entriesOf(await ok(`${P}/objects/1`))).toEqual({ still: "alive" });
    expect((await readyz()).status).toBe(200);
  });
});

describe("router restarts", () => {
  it("keeps serving REST while the router is down, reports it, reconnects and re-declares", async () => {
    const port = router.port;
    router.child.kill("SIGKILL");
    await router.exited;
    await until(zenohIs("down"));
    const ready = await readyz();
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: "ready", zenoh: "down" });
    const metrics = await (await fetch(`${node.url}/metrics`)).text();
    expect(metrics).toMatch(/^odgm_zenoh_up 0$/m);
    // REST serves while Zenoh is down.
    const put = await fetch(`${node.url}/api/class/zc/1/objects/4242/values/while-down`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ value: "yes" }),
    });
    expect(put.status).toBeLessThan(300);

    router = await startRouter(port);
    await until(zenohIs("up"));
    await session.close();
    session = await open(new Config(`ws/127.0.0.1:${port}`, 10_000));
    const v = valueResponse(await ok(`${P}/objects/4242/values/while-down`));
    expect(v.value).toBeDefined();
    expect(
      (await fetch(`${node.url}/metrics`).then((r) => r.text())).match(/^odgm_zenoh_up 1$/m),
    ).not.toBeNull();
    const tokens: string[] = [];
    for await (const r of (await session.liveliness().get("odgm/nodes/*")) ?? []) {
      const res = r.result();
      if ("kind" in res) tokens.push(res.keyexpr().toString());
    }
    expect(tokens).toEqual(["odgm/nodes/1"]);
  });
});

describe("router down at start", () => {
  it("starts, serves and is ready without a router, and connects once one listens", async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const p = (probe.address() as { port: number }).port;
        probe.close(() => resolve(p));
      });
    });
    const late = await startOdgmProcess({
      ODGM_STORAGE: "memory",
      ODGM_NODE_ID: "5",
      ODGM_ZENOH_ENDPOINT: `ws/127.0.0.1:${port}`,
      ODGM_ZENOH_RETRY_MS: "200",
    });
    let lateRouter: RouterProcess | undefined;
    let lateSession: Session | undefined;
    try {
      const ready = await fetch(`${late.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: "ready", zenoh: "down" });
      const put = await fetch(`${late.url}/api/class/default/0/objects/1/values/early`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ value: "before the router" }),
      });
      expect(put.status).toBeLessThan(300);
      lateRouter = await startRouter(port);
      await until(async () => {
        const body = (await (await fetch(`${late.url}/readyz`)).json()) as { zenoh?: string };
        return body.zenoh === "up";
      });
      lateSession = await open(new Config(`ws/127.0.0.1:${port}`, 10_000));
      const receiver = await lateSession.get("oprc/default/0/objects/1/values/early");
      const replies: Uint8Array[] = [];
      for await (const r of receiver ?? []) {
        const res = r.result();
        if ("kind" in res) replies.push(res.payload().toBytes());
      }
      expect(replies).toHaveLength(1);
      const v = fromBinary(ValueResponseSchema, replies[0] as Uint8Array);
      expect(v.objectVersion).toBe(1n);
    } finally {
      await lateSession?.close();
      late.child.kill("SIGTERM");
      await late.exited;
      lateRouter?.child.kill("SIGTERM");
      await lateRouter?.exited;
    }
  });
});
