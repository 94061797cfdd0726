// One busy HTTP/2 connection. Node's HTTP/2 server advertised no stream limit and, past
// what its session memory allowed (~11.7k streams), refused streams and then destroyed the
// session: 20,000 concurrent SetValue calls on one grpcio channel lost 45-94% of them
// (INTERNAL, RESOURCE_EXHAUSTED, UNAVAILABLE). With a SETTINGS_MAX_CONCURRENT_STREAMS
// limit the client queues, and every call succeeds exactly once.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DataService, SetKeyRequestSchema } from "@oprc/grpc-api";
import { findPythonWithGrpc, skipPythonInterop } from "@oprc/grpc-api/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTempNode, type TempNode } from "./fixtures/temp-node.js";

const run = promisify(execFile);
const FLOOD = fileURLToPath(new URL("./fixtures/grpc_flood.py", import.meta.url));
const CALLS = 20_000;

let temp: TempNode;
beforeAll(async () => {
  temp = await startTempNode();
});
afterAll(async () => {
  await temp?.close();
});

describe.skipIf(skipPythonInterop)("one HTTP/2 connection under load", () => {
  it(`${CALLS} concurrent SetValue calls on one grpcio channel all succeed, once each`, {
    timeout: 180_000,
  }, async () => {
    const python = findPythonWithGrpc();
    if (python === undefined)
      throw new Error("python3 with grpcio is required (apt-get install python3-grpcio)");
    const body = toBinary(
      SetKeyRequestSchema,
      create(SetKeyRequestSchema, {
        clsId: "default",
        partitionId: 0,
        objectIdStr: "flood",
        keyStr: "k",
        value: { data: new Uint8Array([1]) },
      }),
    );
    const { stdout } = await run(
      python,
      [
        FLOOD,
        temp.target,
        "/oprc.DataService/SetValue",
        Buffer.from(body).toString("hex"),
        String(CALLS),
        "120",
      ],
      { timeout: 170_000 },
    );
    const flood = JSON.parse(stdout) as { counts: Record<string, number>; seconds: number };
    // The duration is printed for diagnosis only (shared machines are noisy), never asserted.
    console.log(`${CALLS} SetValue calls on one channel: ${JSON.stringify(flood)}`);
    expect(flood.counts).toEqual({ OK: CALLS });
    // Each call was applied exactly once.
    const data = createClient(DataService, createGrpcTransport({ baseUrl: temp.node.url }));
    const got = await data.getValue({ clsId: "default", objectIdStr: "flood", keyStr: "k" });
    expect(got.objectVersion).toBe(BigInt(CALLS));
  });
});
