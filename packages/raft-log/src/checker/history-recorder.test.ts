import { describe, expect, it } from "vitest";
import { checkOperations } from "./check-operations.js";
import { createHistoryRecorder } from "./history-recorder.js";
import type { KvInput, KvOutput } from "./kv-model.js";
import { kvModel } from "./kv-model.js";

describe("createHistoryRecorder", () => {
  it("records events with logical timestamps and yields checkable operations", () => {
    const rec = createHistoryRecorder<KvInput, KvOutput>();
    const w = rec.invoke(1, { op: "put", key: "k", value: "v" });
    const r = rec.invoke(2, { op: "get", key: "k" });
    rec.ok(r, { value: "v" });
    const lost = rec.invoke(3, { op: "append", key: "k", value: "x" });
    rec.fail(lost);
    const unsure = rec.invoke(3, { op: "append", key: "k", value: "y" });
    rec.info(unsure);
    expect(rec.events().map((e) => [e.kind, e.opId, e.time])).toEqual([
      ["invoke", 0, 0],
      ["invoke", 1, 1],
      ["ok", 1, 2],
      ["invoke", 2, 3],
      ["fail", 2, 4],
      ["invoke", 3, 5],
      ["info", 3, 6],
    ]);
    const ops = rec.operations();
    expect(ops.map((o) => [o.clientId, o.call, o.return])).toEqual([
      [1, 0, Number.POSITIVE_INFINITY],
      [2, 1, 2],
      [3, 5, Number.POSITIVE_INFINITY],
    ]);
    expect(w).toBe(0);
    expect(checkOperations(kvModel, ops)).toBe("ok");
  });

  it("uses an injected clock", () => {
    let t = 100;
    const rec = createHistoryRecorder<KvInput, KvOutput>({ now: () => (t += 10) });
    rec.ok(rec.invoke(1, { op: "get", key: "k" }), { value: "" });
    expect(rec.operations()[0]).toMatchObject({ call: 110, return: 120 });
  });

  it("rejects a second open operation per client and closing twice", () => {
    const rec = createHistoryRecorder<KvInput, KvOutput>();
    const id = rec.invoke(1, { op: "get", key: "k" });
    expect(() => rec.invoke(1, { op: "get", key: "k" })).toThrow(RangeError);
    rec.ok(id, { value: "" });
    expect(() => rec.ok(id, { value: "" })).toThrow(RangeError);
    expect(() => rec.fail(42)).toThrow(RangeError);
  });
});
