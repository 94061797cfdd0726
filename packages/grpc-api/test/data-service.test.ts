// Every RPC through two independent gRPC clients: connect-node's transport and Google's
// gRPC C-core (python3-grpcio), each against its own fresh server over the in-memory data
// plane; the transcripts must be identical. The shared DataService scenario
// (test/testing/data-service-scenario.ts, which odgm runs against a real node too) comes
// first; then what only an injected plane can show: invocations of its scripted functions,
// data-plane errors, and the capabilities it reports.
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DataPlaneError,
  DataService,
  InvocationRequestSchema,
  OprcFunction,
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
import { DATA_SERVICE_SCENARIO } from "./testing/index.js";

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

  for (const scenario of DATA_SERVICE_SCENARIO) {
    it(scenario.title, () => scenario.run(transcripts.recorder(client, scenario.name, c)));
  }

  it("the scripted function's headers reach the client", async () => {
    const call = transcripts.recorder(client, "headers", c);
    const fn = await call(
      F.invokeFn,
      create(InvocationRequestSchema, {
        clsId: "c",
        partitionId: 1,
        fnId: "echo",
        options: { a: "b" },
      }),
    );
    expect(fn.responses[0]?.headers).toEqual({ fn: "echo", a: "b" });
  });

  it("data-plane errors become statuses (spec §6)", async () => {
    const call = transcripts.recorder(client, "plane-errors", c);
    const base = { clsId: "c", partitionId: 0 };

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
