// At-least-once trigger delivery (ODGM_TRIGGER_DELIVERY=at-least-once) against real odgm
// processes: writes are acknowledged while the trigger target is down, the node is killed
// with SIGKILL before it could deliver them, and after a restart every acknowledged write's
// trigger reaches the target. Retries and dead letters show in the metrics, and the trigger
// configuration kept in the change log never reaches watchers.

import { rm } from "node:fs/promises";
import { fromBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DataService, TriggerPayloadSchema, WatchService } from "@oprc/grpc-api";
import { freePorts } from "@oprc/test-config/ports";
import { afterEach, describe, expect, it } from "vitest";
import { type FunctionServer, startFunctionServer } from "./fixtures/function-server.js";
import { type OdgmProcess, startOdgmProcess } from "./fixtures/odgm-process.js";
import { startTempNode, type TempNode, tempDir } from "./fixtures/temp-node.js";

const v = (s: string) => ({ data: new TextEncoder().encode(s) });

const cleanup: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

const collection = (fnUrl: string) =>
  JSON.stringify([
    {
      name: "c",
      partitionCount: 1,
      invocations: { fnRoutes: { f: { url: fnUrl }, fail: { url: fnUrl } } },
    },
  ]);

/** On create of key "k", call `fn` (stateless). */
const eventFor = (fn: string) => ({
  dataTriggerStr: { k: { onCreate: [{ clsId: "c", partitionId: 0, fnId: fn }] } },
});

async function metric(url: string, line: RegExp): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = text.split("\n").find((l) => line.test(l));
  return m === undefined ? 0 : Number(m.split(" ").pop());
}

describe("at-least-once trigger delivery", () => {
  it("delivers after SIGKILL what was acknowledged while the target was down", async () => {
    const dir = await tempDir("odgm-alo-");
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const [fnPort] = await freePorts(1);
    const env = {
      ODGM_DATA_DIR: dir,
      ODGM_TRIGGER_DELIVERY: "at-least-once",
      ODGM_TRIGGER_RETRY_ATTEMPTS: "1000",
      ODGM_TRIGGER_RETRY_BASE_MS: "20",
      ODGM_TRIGGER_RETRY_MAX_MS: "200",
      ODGM_COLLECTION: collection(`http://127.0.0.1:${fnPort}`),
    };
    let node: OdgmProcess = await startOdgmProcess(env);
    cleanup.push(() => node.child.kill("SIGKILL"));
    const data = createClient(DataService, createGrpcTransport({ baseUrl: node.url }));
    // 150 numeric and 150 string ids, each acknowledged (synced writes, the default).
    const acked: string[] = [];
    for (let i = 0; i < 300; i++) {
      const id = i % 2 === 0 ? { objectId: BigInt(1000 + i) } : { objectIdStr: `s-${i}` };
      await data.set({
        clsId: "c",
        partitionId: 0,
        ...id,
        object: { event: eventFor("f"), entriesStr: { k: v(String(i)) } },
      });
      acked.push("objectId" in id ? String(id.objectId) : `s-${i}`);
    }
    // The target is down: deliveries are being retried, none can have finished.
    expect(await metric(node.url, /^odgm_trigger_retries_total\{target="c\/f"\}/)).toBeGreaterThan(
      0,
    );
    node.child.kill("SIGKILL");
    await node.exited;

    const fns: FunctionServer = await startFunctionServer(fnPort);
    cleanup.push(() => fns.close());
    node = await startOdgmProcess(env);
    const calls = await fns.waitFor(() => true, acked.length);
    const delivered = new Map<string, number>();
    for (const c of fns.calls) {
      const info = fromBinary(TriggerPayloadSchema, c.request.payload).eventInfo;
      const id = info?.sourceObjectIdStr ?? String(info?.sourceObjectId);
      delivered.set(id, (delivered.get(id) ?? 0) + 1);
    }
    console.log(
      JSON.stringify({
        acked: acked.length,
        deliveries: fns.calls.length,
        objects: delivered.size,
      }),
    );
    expect(calls.length).toBeGreaterThanOrEqual(acked.length);
    expect(acked.filter((id) => !delivered.has(id))).toEqual([]);
    // Nothing beyond the acknowledged writes was invented.
    expect([...delivered.keys()].sort()).toEqual([...acked].sort());
    // A clean stop saves the cursors: a second restart delivers nothing again.
    node.child.kill("SIGTERM");
    expect(await node.exited).toBe(0);
    const before = fns.calls.length;
    node = await startOdgmProcess(env);
    const again = createClient(DataService, createGrpcTransport({ baseUrl: node.url }));
    await again.set({
      clsId: "c",
      partitionId: 0,
      objectIdStr: "after",
      object: { event: eventFor("f"), entriesStr: { k: v("x") } },
    });
    await fns.waitFor(
      (c) =>
        fromBinary(TriggerPayloadSchema, c.request.payload).eventInfo?.sourceObjectIdStr ===
        "after",
    );
    expect(fns.calls.length).toBe(before + 1);
  }, 120_000);

  it("dead-letters a delivery whose attempts run out, counts retries, and never shows the trigger config to watchers", async () => {
    const fns = await startFunctionServer();
    cleanup.push(() => fns.close());
    const n: TempNode = await startTempNode({
      ODGM_TRIGGER_DELIVERY: "at-least-once",
      ODGM_TRIGGER_RETRY_ATTEMPTS: "3",
      ODGM_TRIGGER_RETRY_BASE_MS: "5",
      ODGM_TRIGGER_RETRY_MAX_MS: "20",
      ODGM_COLLECTION: collection(fns.url),
    });
    cleanup.push(() => n.close());
    const transport = createGrpcTransport({ baseUrl: n.node.url });
    const data = createClient(DataService, transport);
    for (let i = 0; i < 4; i++) {
      await data.set({
        clsId: "c",
        partitionId: 0,
        objectIdStr: `d-${i}`,
        object: { event: eventFor("fail"), entriesStr: { k: v("x") } },
      });
    }
    // `fail` answers APP_ERROR: 3 attempts each, then given up.
    await fns.waitFor((c) => c.request.fnId === "fail", 12);
    const url = n.node.url;
    for (let i = 0; i < 100; i++) {
      if ((await metric(url, /^odgm_trigger_dead_letters_total\{target="c\/fail"\}/)) >= 4) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await metric(url, /^odgm_trigger_dead_letters_total\{target="c\/fail"\}/)).toBe(4);
    expect(await metric(url, /^odgm_trigger_retries_total\{target="c\/fail"\}/)).toBe(8);
    expect(
      await metric(url, /^odgm_trigger_deliveries_total\{target="c\/fail",outcome="error"\}/),
    ).toBe(12);
    expect(fns.calls.filter((c) => c.request.fnId === "fail")).toHaveLength(12);

    const watch = createClient(WatchService, transport);
    const ac = new AbortController();
    let seen = 0;
    for await (const msg of watch.watch({ clsId: "c", startRevision: 1n }, { signal: ac.signal })) {
      if (msg.event.case !== "change") continue;
      expect(msg.event.value.event).toBeUndefined();
      if (++seen === 4) break;
    }
    ac.abort();
    expect(seen).toBe(4);
  }, 60_000);

  it("is refused with a clear error when the change log is off or the mode is unknown", async () => {
    const { loadConfig } = await import("../src/index.js");
    expect(() =>
      loadConfig({ ODGM_TRIGGER_DELIVERY: "at-least-once", ODGM_CHANGEFEED: "false" }),
    ).toThrow(/ODGM_CHANGEFEED=true/);
    expect(() => loadConfig({ ODGM_TRIGGER_DELIVERY: "exactly-once" })).toThrow(
      /ODGM_TRIGGER_DELIVERY.*at-most-once or at-least-once/,
    );
    expect(loadConfig({}).triggerDelivery.mode).toBe("at-most-once");
  });
});
