import { EventType } from "@oprc/grpc-api/messages";
import { describe, expect, it } from "vitest";
import { fnTarget, mutation, objectEvent } from "../test/fixtures.js";
import { collectFunctionTriggers, collectTriggers, eventTypeOf } from "./trigger-matching.js";

describe("collectTriggers", () => {
  const onNum = fnTarget("on-num");
  const onStr = fnTarget("on-str");
  const config = objectEvent({
    data: { 42: { onCreate: [onNum], onUpdate: [onNum], onDelete: [onNum] } },
    dataStr: { "042": { onCreate: [onStr] }, email: { onUpdate: [onStr, fnTarget("audit")] } },
  });

  it('routes "42" to data_trigger[42] and "042" to data_trigger_str["042"]', () => {
    const ctx = mutation([
      ["42", "create"],
      ["042", "create"],
    ]);
    const matches = collectTriggers(ctx, config);
    expect(matches.map((m) => [m.changed.key, m.target.fnId])).toEqual([
      ["42", "on-num"],
      ["042", "on-str"],
    ]);
    expect(matches.every((m) => m.eventType === EventType.DATA_CREATE)).toBe(true);
  });

  it("selects the list of the action and fires one match per target", () => {
    const ctx = mutation([
      ["email", "update"],
      ["email", "create"],
      ["42", "delete"],
    ]);
    const matches = collectTriggers(ctx, config);
    expect(matches.map((m) => [m.changed.key, m.target.fnId, m.eventType])).toEqual([
      ["email", "on-str", EventType.DATA_UPDATE],
      ["email", "audit", EventType.DATA_UPDATE],
      ["42", "on-num", EventType.DATA_DELETE],
    ]);
  });

  it("uses ctx.eventConfig by default and returns nothing without a config", () => {
    expect(collectTriggers(mutation([["42", "create"]]))).toEqual([]);
    expect(collectTriggers(mutation([["42", "create"]], { eventConfig: config }))).toHaveLength(1);
  });

  it("does not confuse numeric and string maps", () => {
    const strOnly = objectEvent({ dataStr: { "42": { onCreate: [onStr] } } });
    const numOnly = objectEvent({ data: { 42: { onCreate: [onNum] } } });
    expect(collectTriggers(mutation([["42", "create"]]), strOnly)).toEqual([]);
    expect(collectTriggers(mutation([["042", "create"]]), numOnly)).toEqual([]);
  });

  it("never matches prototype properties", () => {
    const ctx = mutation([
      ["constructor", "create"],
      ["__proto__", "create"],
      ["tostring", "create"],
    ]);
    expect(collectTriggers(ctx, objectEvent({}))).toEqual([]);
  });

  it("evaluates only the first `limit` keys", () => {
    const ctx = mutation([
      ["42", "create"],
      ["042", "create"],
    ]);
    expect(collectTriggers(ctx, config, 1).map((m) => m.changed.key)).toEqual(["42"]);
    expect(collectTriggers(ctx, config, 0)).toEqual([]);
  });

  it("maps actions to event types", () => {
    expect(eventTypeOf("create")).toBe(EventType.DATA_CREATE);
    expect(eventTypeOf("update")).toBe(EventType.DATA_UPDATE);
    expect(eventTypeOf("delete")).toBe(EventType.DATA_DELETE);
  });
});

describe("collectFunctionTriggers", () => {
  const config = objectEvent({
    func: {
      resize: { onComplete: [fnTarget("done")], onError: [fnTarget("alert"), fnTarget("log")] },
    },
  });

  it("returns on_complete targets for a completed function", () => {
    const m = collectFunctionTriggers(config, "resize", "complete");
    expect(m.map((x) => [x.target.fnId, x.eventType, x.fnId])).toEqual([
      ["done", EventType.FUNC_COMPLETE, "resize"],
    ]);
  });

  it("returns on_error targets for a failed function", () => {
    const m = collectFunctionTriggers(config, "resize", "error");
    expect(m.map((x) => [x.target.fnId, x.eventType])).toEqual([
      ["alert", EventType.FUNC_ERROR],
      ["log", EventType.FUNC_ERROR],
    ]);
  });

  it("returns nothing for unknown functions or no config", () => {
    expect(collectFunctionTriggers(config, "other", "complete")).toEqual([]);
    expect(collectFunctionTriggers(config, "constructor", "complete")).toEqual([]);
    expect(collectFunctionTriggers(undefined, "resize", "error")).toEqual([]);
  });
});
