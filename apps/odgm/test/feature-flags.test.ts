// Feature flags and event variables really gate behaviour on a real node (RocksDB).

import { fromJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DataService, EventType, OprcFunction, TriggerPayloadSchema } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FunctionServer, startFunctionServer } from "./fixtures/function-server.js";
import { startTempNode, type TempNode } from "./fixtures/temp-node.js";

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const v = (s: string) => ({ data: utf8(s) });
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 0,
    (e: unknown) => ConnectError.from(e).code,
  );

let functions: FunctionServer;
beforeAll(async () => {
  functions = await startFunctionServer();
});
afterAll(async () => functions?.close());

const withNode = async (env: Record<string, string>, body: (n: TempNode) => Promise<void>) => {
  const n = await startTempNode({
    ODGM_COLLECTION: JSON.stringify([
      {
        name: "c",
        invocations: {
          fnRoutes: {
            hook: { url: functions.url },
            f: { url: functions.url },
            slow: { url: functions.url },
          },
        },
      },
    ]),
    ...env,
  });
  try {
    await body(n);
  } finally {
    await n.close();
  }
};
const hookEvents = {
  dataTriggerStr: { k: { onCreate: [{ clsId: "c", fnId: "hook" }] } },
};

describe("feature flags", () => {
  it("ODGM_STRING_IDS_WRITE_ONLY hides string-id objects from ListObjects only", async () => {
    await withNode({ ODGM_STRING_IDS_WRITE_ONLY: "true" }, async (n) => {
      const data = createClient(DataService, createGrpcTransport({ baseUrl: n.node.url }));
      await data.setValue({ clsId: "c", objectIdStr: "named", keyStr: "a", value: v("1") });
      await data.setValue({ clsId: "c", objectId: 5n, key: 1, value: v("1") });
      const listed: string[] = [];
      for await (const o of data.listObjects({ clsId: "c" })) listed.push(o.objectId);
      expect(listed).toEqual(["5"]);
      expect(
        (await data.getValue({ clsId: "c", objectIdStr: "named", keyStr: "a" })).value,
      ).toBeDefined();
    });
  });

  it("ODGM_MAX_STRING_ID_LEN bounds ids and keys", async () => {
    await withNode({ ODGM_MAX_STRING_ID_LEN: "8" }, async (n) => {
      const data = createClient(DataService, createGrpcTransport({ baseUrl: n.node.url }));
      await data.setValue({
        clsId: "c",
        objectIdStr: "abcdefgh",
        keyStr: "12345678x".slice(0, 8),
        value: v("1"),
      });
      const err = await data.get({ clsId: "c", objectIdStr: "abcdefghi" }).catch((e: unknown) => e);
      expect(ConnectError.from(err).code).toBe(Code.InvalidArgument);
      expect(ConnectError.from(err).rawMessage).toMatch(/9.*8/);
      expect(
        await codeOf(
          data.setValue({ clsId: "c", objectId: 1n, keyStr: "123456789a", value: v("1") }),
        ),
      ).toBe(Code.InvalidArgument);
    });
  });

  it("ODGM_EVENT_PIPELINE_V2=false fires no triggers; ODGM_MAX_TRIGGER_DEPTH=0 fires none and counts them", async () => {
    const before = functions.calls.length;
    await withNode({ ODGM_EVENT_PIPELINE_V2: "false" }, async (n) => {
      const data = createClient(DataService, createGrpcTransport({ baseUrl: n.node.url }));
      await data.set({ clsId: "c", objectIdStr: "x", object: { event: hookEvents } });
      await data.setValue({ clsId: "c", objectIdStr: "x", keyStr: "k", value: v("1") });
      expect((await data.capabilities({})).eventPipelineV2).toBe(false);
    });
    await withNode({ ODGM_MAX_TRIGGER_DEPTH: "0" }, async (n) => {
      const data = createClient(DataService, createGrpcTransport({ baseUrl: n.node.url }));
      await data.set({ clsId: "c", objectIdStr: "x", object: { event: hookEvents } });
      await data.setValue({ clsId: "c", objectIdStr: "x", keyStr: "k", value: v("1") });
      let metrics = "";
      for (
        let i = 0;
        i < 100 && !/odgm_trigger_depth_exceeded_total\{collection="c"\} 1/.test(metrics);
        i++
      ) {
        metrics = await (await fetch(`${n.node.url}/metrics`)).text();
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(metrics).toMatch(/odgm_trigger_depth_exceeded_total\{collection="c"\} 1/);
    });
    expect(functions.calls.length).toBe(before);
  });

  it("ODGM_EVENT_PAYLOAD_FORMAT=json sends proto3 JSON payloads", async () => {
    await withNode({ ODGM_EVENT_PAYLOAD_FORMAT: "json" }, async (n) => {
      const data = createClient(DataService, createGrpcTransport({ baseUrl: n.node.url }));
      await data.set({ clsId: "c", objectIdStr: "json-obj", object: { event: hookEvents } });
      await data.setValue({ clsId: "c", objectIdStr: "json-obj", keyStr: "k", value: v("1") });
      const [call] = await functions.waitFor((c) =>
        new TextDecoder().decode(c.request.payload).includes("json-obj"),
      );
      // Canonical proto3 JSON: parses with the schema, enum by name.
      const text = new TextDecoder().decode(call?.request.payload);
      expect(text).toContain('"eventType":"EVENT_TYPE_DATA_CREATE"');
      const payload = fromJsonString(TriggerPayloadSchema, text);
      expect(payload.eventInfo).toMatchObject({
        sourceObjectIdStr: "json-obj",
        eventType: EventType.DATA_CREATE,
        keyStr: "k",
      });
    });
  });

  it("REST invocations forward to the function route and map its status", async () => {
    await withNode({}, async (n) => {
      const ok = await fetch(`${n.node.url}/api/class/c/0/objects/7/invokes/f`, {
        method: "POST",
        body: "hi",
      });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toBe("numeric:7:f");
      const missing = await fetch(`${n.node.url}/api/class/c/0/invokes/nope`, { method: "POST" });
      expect(missing.status).toBe(404);
    });
  });

  it("ODGM_INVOKE_TIMEOUT_MS bounds a forwarded invocation: DEADLINE_EXCEEDED", async () => {
    await withNode({ ODGM_INVOKE_TIMEOUT_MS: "200" }, async (n) => {
      const fns = createClient(OprcFunction, createGrpcTransport({ baseUrl: n.node.url }));
      const err = await fns.invokeFn({ clsId: "c", fnId: "slow" }).catch((e: unknown) => e);
      expect(ConnectError.from(err).code).toBe(Code.DeadlineExceeded);
      expect(ConnectError.from(err).rawMessage).toContain("200 ms");
    });
  });
});
