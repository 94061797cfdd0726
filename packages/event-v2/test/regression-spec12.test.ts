// Regression suite for the Rust defects of spec §12 that concern the event pipeline.
import { EventType } from "@oprc/grpc-api";
import { describe, expect, it } from "vitest";
import { createEventDispatcher } from "../src/event-dispatcher.js";
import { mutationContextFromResult, objectDeleteChanges } from "../src/mutation-context.js";
import { fnTarget, objectEvent, objTarget, payloadOf, recordingSink } from "./fixtures.js";

describe("spec §12 regressions", () => {
  it("per-entry on_delete triggers fire, including for every key of a deleted object", async () => {
    const { sink, calls } = recordingSink();
    const d = createEventDispatcher({ sink });
    const eventConfig = objectEvent({
      data: { 1: { onDelete: [fnTarget("del-num")] } },
      dataStr: { name: { onDelete: [fnTarget("del-str")] } },
    });
    const target = { objectId: "user-9", clsId: "users", partitionId: 0, eventConfig };
    // Single-entry delete.
    const one = mutationContextFromResult(
      {
        versionBefore: 3n,
        versionAfter: 4n,
        changed: [{ key: "name", numeric: false, action: "delete" }],
      },
      target,
    );
    // Whole-object delete: a delete for every key it had.
    const all = mutationContextFromResult(
      { versionBefore: 4n, versionAfter: 5n, changed: objectDeleteChanges(["1", "email"]) },
      target,
    );
    if (one === undefined || all === undefined) throw new Error("contexts expected");
    d.tryEnqueue(one);
    d.tryEnqueue(all);
    await d.idle();
    expect(calls.map((c) => c.request.fnId)).toEqual(["del-str", "del-num"]);
    const infos = calls.map((c) => payloadOf(c).eventInfo);
    expect(infos.map((i) => i?.eventType)).toEqual([EventType.DATA_DELETE, EventType.DATA_DELETE]);
    expect(infos.map((i) => [i?.keyStr, i?.key])).toEqual([
      ["name", undefined],
      [undefined, 1],
    ]);
    expect(d.metrics().emittedDelete).toBe(3);
    await d.close();
  });

  it("string ids are kept in trigger payloads and in object-bound invocations", async () => {
    const { sink, calls } = recordingSink();
    const d = createEventDispatcher({ sink });
    const eventConfig = objectEvent({
      dataStr: { status: { onUpdate: [objTarget("notify", "order-77")] } },
    });
    d.tryEnqueue({
      objectId: "customer:ann.smith",
      clsId: "customers",
      partitionId: 5,
      versionBefore: 1n,
      versionAfter: 2n,
      changed: [{ key: "status", numeric: false, action: "update" }],
      eventConfig,
    });
    await d.idle();
    const call = calls[0];
    if (call?.kind !== "object") throw new Error("object invocation expected");
    expect(call.request.objectIdStr).toBe("order-77");
    const info = payloadOf(call).eventInfo;
    expect(info?.sourceObjectIdStr).toBe("customer:ann.smith");
    expect(info?.sourceObjectId).toBe(0n);
    expect(info?.sourceClsId).toBe("customers");
    expect(info?.sourcePartitionId).toBe(5);
    await d.close();
  });

  it("function-complete and function-error triggers fire", async () => {
    const { sink, calls } = recordingSink();
    const d = createEventDispatcher({ sink });
    const eventConfig = objectEvent({
      func: { f: { onComplete: [fnTarget("ok")], onError: [fnTarget("err")] } },
    });
    const base = { objectId: "o", clsId: "c", partitionId: 0, fnId: "f", eventConfig };
    d.tryEnqueueFunctionOutcome({ ...base, outcome: "complete" });
    d.tryEnqueueFunctionOutcome({ ...base, outcome: "error", error: "x" });
    await d.idle();
    expect(calls.map((c) => [c.request.fnId, payloadOf(c).eventInfo?.eventType])).toEqual([
      ["ok", EventType.FUNC_COMPLETE],
      ["err", EventType.FUNC_ERROR],
    ]);
    await d.close();
  });
});
