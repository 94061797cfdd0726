// `@oprc/grpc-api/testing` (test/testing/index.ts): both callers reach the same server and
// report the same normalized results, including error statuses and streams.
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DataService } from "../src/index.js";
import { startServer, type TestServer } from "./fixtures/harness.js";
import {
  type Caller,
  createConnectCaller,
  createPythonCaller,
  PYTHON_DRIVER,
  skipPythonInterop,
} from "./testing/index.js";

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => server?.close());

it("resolves the python driver inside this package", () => {
  expect(PYTHON_DRIVER).toMatch(/packages\/grpc-api\/test\/fixtures\/grpc_call\.py$/);
});

it.skipIf(skipPythonInterop)("connect-node and grpc C-core callers agree", async () => {
  const callers: Caller[] = [
    createConnectCaller(server.baseUrl),
    createPythonCaller(server.target),
  ];
  try {
    const results = [];
    for (const c of callers) {
      const set = await c.call(
        DataService.method.setValue,
        create(DataService.method.setValue.input, {
          clsId: "c",
          objectIdStr: "t",
          keyStr: "k",
          value: { data: new Uint8Array([1]) },
        }),
      );
      const bad = await c.call(
        DataService.method.get,
        create(DataService.method.get.input, { clsId: "c" }),
      );
      const list = await c.call(
        DataService.method.listValues,
        create(DataService.method.listValues.input, { clsId: "c", objectIdStr: "t" }),
      );
      results.push({
        set: set.code,
        bad: [bad.code, bad.message],
        keys: list.responses.map((r) => r.key),
      });
    }
    expect(results[0]).toEqual({
      set: 0,
      bad: [Code.InvalidArgument, results[0]?.bad[1]],
      keys: ["k"],
    });
    expect(results[1]).toEqual(results[0]);
  } finally {
    for (const c of callers) await c.close();
  }
});
