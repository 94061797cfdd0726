import { create } from "@bufbuild/protobuf";
import { EventType, TriggerTargetSchema } from "@oprc/grpc-api/messages";
import { describe, expect, it } from "vitest";
import { fnTarget, objTarget } from "../test/fixtures.js";
import {
  createTriggerInvocation,
  TRIGGER_DEPTH_OPTION,
  targetNamesObject,
  triggerDepthOf,
} from "./trigger-invocation.js";
import type { DataTriggerMatch } from "./trigger-matching.js";

const changed = { key: "k", numeric: false, action: "create" } as const;
const payload = new Uint8Array([9, 9]);

function match(target = fnTarget("f")): DataTriggerMatch {
  return { kind: "data", target, eventType: EventType.DATA_CREATE, changed };
}

describe("createTriggerInvocation", () => {
  it("builds an InvocationRequest for a target without object", () => {
    const inv = createTriggerInvocation(match(fnTarget("f", { a: "1" })), payload, 1);
    expect(inv.kind).toBe("stateless");
    expect(inv.depth).toBe(1);
    expect(inv.request.$typeName).toBe("oprc.InvocationRequest");
    expect(inv.request.clsId).toBe("handlers");
    expect(inv.request.partitionId).toBe(1);
    expect(inv.request.fnId).toBe("f");
    expect(inv.request.payload).toBe(payload);
    expect(inv.request.options).toEqual({ a: "1", [TRIGGER_DEPTH_OPTION]: "1" });
  });

  it("builds an ObjectInvocationRequest for a string-id target", () => {
    const inv = createTriggerInvocation(match(objTarget("g", "order-9")), payload, 3);
    expect(inv.kind).toBe("object");
    if (inv.kind !== "object") return;
    expect(inv.request.$typeName).toBe("oprc.ObjectInvocationRequest");
    expect(inv.request.objectIdStr).toBe("order-9");
    expect(inv.request.objectId).toBe(0n);
    expect(inv.request.options[TRIGGER_DEPTH_OPTION]).toBe("3");
  });

  it("builds an ObjectInvocationRequest for a numeric-id target; a string id wins over both", () => {
    const numeric = create(TriggerTargetSchema, { clsId: "c", fnId: "h", objectId: 12n });
    const inv = createTriggerInvocation(match(numeric), payload, 1);
    expect(inv.kind === "object" && inv.request.objectId).toBe(12n);
    expect(inv.kind === "object" && inv.request.objectIdStr).toBeUndefined();
    const both = create(TriggerTargetSchema, { fnId: "h", objectId: 12n, objectIdStr: "x" });
    const inv2 = createTriggerInvocation(match(both), payload, 1);
    expect(inv2.kind === "object" && [inv2.request.objectId, inv2.request.objectIdStr]).toEqual([
      0n,
      "x",
    ]);
  });

  it("the depth option overrides a user req_option of the same name", () => {
    const inv = createTriggerInvocation(
      match(fnTarget("f", { [TRIGGER_DEPTH_OPTION]: "0" })),
      payload,
      4,
    );
    expect(inv.request.options[TRIGGER_DEPTH_OPTION]).toBe("4");
  });
});

describe("targetNamesObject / triggerDepthOf", () => {
  it("treats object_id 0 and empty object_id_str as absent", () => {
    expect(targetNamesObject(create(TriggerTargetSchema, { objectId: 0n }))).toBe(false);
    expect(targetNamesObject(create(TriggerTargetSchema, { objectIdStr: "" }))).toBe(false);
    expect(targetNamesObject(create(TriggerTargetSchema, { objectId: 1n }))).toBe(true);
  });

  it("reads the depth, treating absent or malformed values as 0", () => {
    expect(triggerDepthOf(undefined)).toBe(0);
    expect(triggerDepthOf({})).toBe(0);
    expect(triggerDepthOf({ [TRIGGER_DEPTH_OPTION]: "7" })).toBe(7);
    expect(triggerDepthOf({ [TRIGGER_DEPTH_OPTION]: "-1" })).toBe(0);
    expect(triggerDepthOf({ [TRIGGER_DEPTH_OPTION]: "x" })).toBe(0);
  });
});
