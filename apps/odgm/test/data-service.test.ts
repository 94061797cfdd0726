// The shared DataService scenario (@oprc/grpc-api/testing, also run by grpc-api over its
// in-memory plane) and every OprcFunction RPC, against a real odgm (RocksDB in a temp dir,
// gRPC over h2c on loopback) through two independent clients: connect-node and Google's gRPC C-core (python3-grpcio), against the gRPC unary
// fast path and (connect-node, ODGM_GRPC_FAST_PATH=false) against connect-node's own server
// pipeline. Each run uses its own fresh node; all transcripts must be identical.
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { DataService, OprcFunction, StatsRequestSchema } from "@oprc/grpc-api";
import {
  type Caller,
  createConnectCaller,
  createPythonCaller,
  createTranscripts,
  DATA_SERVICE_SCENARIO,
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

  for (const scenario of DATA_SERVICE_SCENARIO) {
    it(scenario.title, () => scenario.run(transcripts.recorder(client, scenario.name, c)));
  }

  it("Stats lists every partition; function routes: missing, disabled, unreachable, crashing", async () => {
    const call = transcripts.recorder(client, "routes", c);
    const stats = await call(M.stats, create(StatsRequestSchema));
    const shards = stats.responses[0]?.shards ?? [];
    expect(shards.map((s) => s.collection).sort()).toEqual(["c", "c", "c"]);

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
    // Canonical numeric strings are the numeric id/key (dual-written, blob beside entries).
    expect(
      (await call(M.setValue, { ...base, objectIdStr: "42", keyStr: "7", value: v("x") })).code,
    ).toBe(0);
    const gv = await call(M.getValue, { ...base, objectId: 42n, key: 7 });
    expect(text(gv.responses[0]?.value?.data)).toBe("x");
    const caps = await call(M.capabilities, {});
    expect(caps.responses[0]).toMatchObject({
      stringIds: false,
      stringEntryKeys: false,
      granularEntryStorage: true,
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
