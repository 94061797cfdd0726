import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DataService, ValDataSchema } from "@oprc/grpc-api";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadConfig, type OdgmNode, startOdgm } from "../src/index.js";

let node: OdgmNode;
beforeAll(async () => {
  node = await startOdgm(
    loadConfig({
      ODGM_STORAGE: "memory",
      ODGM_HTTP_HOST: "127.0.0.1",
      ODGM_HTTP_PORT: "0",
      ODGM_LOG_LEVEL: "silent",
    }),
  );
});
afterAll(async () => node?.close());

it("serves gRPC and REST on one port", async () => {
  const client = createClient(DataService, createGrpcTransport({ baseUrl: node.url }));
  await client.setValue({
    clsId: "default",
    objectIdStr: "user-1",
    keyStr: "name",
    value: create(ValDataSchema, { data: new TextEncoder().encode('"ada"') }),
  });
  const got = await client.getValue({ clsId: "default", objectIdStr: "user-1", keyStr: "name" });
  expect(new TextDecoder().decode(got.value?.data)).toBe('"ada"');
  expect(got.objectVersion).toBe(1n);
  const res = await fetch(`${node.url}/api/class/default/0/objects/user-1/values/name`);
  expect(res.status).toBe(200);
  expect(await res.text()).toContain("ada");
  const health = await fetch(`${node.url}/healthz`);
  expect(health.status).toBe(200);
  const metrics = await (await fetch(`${node.url}/metrics`)).text();
  expect(metrics).toContain("odgm_entry_writes_total");
});
