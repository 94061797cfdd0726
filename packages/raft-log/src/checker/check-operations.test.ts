import { describe, expect, it } from "vitest";
import { analyzeOperations, checkOperations } from "./check-operations.js";
import type { KvInput, KvOperation } from "./kv-model.js";
import { kvModel } from "./kv-model.js";
import type { Model, Operation } from "./model.js";

const put = (c: number, key: string, value: string, call: number, ret: number): KvOperation => ({
  clientId: c,
  input: { op: "put", key, value },
  call,
  output: { value: "" },
  return: ret,
});
const append = (c: number, key: string, value: string, call: number, ret: number): KvOperation => ({
  clientId: c,
  input: { op: "append", key, value },
  call,
  output: { value: "" },
  return: ret,
});
const get = (c: number, key: string, value: string, call: number, ret: number): KvOperation => ({
  clientId: c,
  input: { op: "get", key },
  call,
  output: { value },
  return: ret,
});
const pending = (c: number, input: KvInput, call: number): KvOperation => ({
  clientId: c,
  input,
  call,
  output: undefined,
  return: Number.POSITIVE_INFINITY,
});

describe("checkOperations (key-value model)", () => {
  it("accepts the empty history", () => {
    expect(checkOperations(kvModel, [])).toBe("ok");
  });

  it("accepts a sequential history and rejects a stale read after a completed write", () => {
    expect(checkOperations(kvModel, [put(0, "x", "a", 0, 1), get(1, "x", "a", 2, 3)])).toBe("ok");
    expect(checkOperations(kvModel, [put(0, "x", "a", 0, 1), get(1, "x", "", 2, 3)])).toBe(
      "illegal",
    );
  });

  it("lets a read concurrent with a write see either value", () => {
    expect(checkOperations(kvModel, [put(0, "x", "a", 0, 10), get(1, "x", "", 1, 2)])).toBe("ok");
    expect(checkOperations(kvModel, [put(0, "x", "a", 0, 10), get(1, "x", "a", 1, 2)])).toBe("ok");
    expect(checkOperations(kvModel, [put(0, "x", "a", 0, 10), get(1, "x", "b", 1, 2)])).toBe(
      "illegal",
    );
  });

  it("rejects a new-old inversion between two sequential reads", () => {
    // w(a) spans both reads; the first read sees a, the later one the old value.
    const h = [put(0, "x", "a", 0, 10), get(1, "x", "a", 1, 2), get(2, "x", "", 3, 4)];
    expect(checkOperations(kvModel, h)).toBe("illegal");
  });

  it("orders concurrent appends consistently with the reads", () => {
    const h = [
      append(0, "k", "1", 0, 10),
      append(1, "k", "2", 0, 10),
      get(2, "k", "21", 11, 12),
      get(3, "k", "21", 13, 14),
    ];
    expect(checkOperations(kvModel, h)).toBe("ok");
    const bad = [...h.slice(0, 3), get(3, "k", "12", 13, 14)];
    expect(checkOperations(kvModel, bad)).toBe("illegal");
  });

  it("treats operations touching at the same instant as concurrent", () => {
    expect(checkOperations(kvModel, [put(0, "x", "a", 0, 5), get(1, "x", "", 5, 6)])).toBe("ok");
  });

  it("lets a pending write take effect late, or never", () => {
    const w = pending(0, { op: "put", key: "x", value: "a" }, 0);
    expect(checkOperations(kvModel, [w, get(1, "x", "", 1, 2), get(1, "x", "a", 3, 4)])).toBe("ok");
    expect(checkOperations(kvModel, [w, get(1, "x", "", 1, 2)])).toBe("ok");
    // ...but not before it was invoked.
    const late = pending(0, { op: "put", key: "x", value: "a" }, 5);
    expect(checkOperations(kvModel, [get(1, "x", "a", 1, 2), late])).toBe("illegal");
    // ...and not undone once observed.
    expect(checkOperations(kvModel, [w, get(1, "x", "a", 1, 2), get(1, "x", "", 3, 4)])).toBe(
      "illegal",
    );
  });

  it("checks keys independently and reports the failing partition", () => {
    const h = [
      put(0, "a", "1", 0, 1),
      put(0, "b", "1", 2, 3),
      get(1, "a", "1", 4, 5),
      get(1, "b", "2", 6, 7),
    ];
    const r = analyzeOperations(kvModel, h);
    expect(r.verdict).toBe("illegal");
    const bad = r.partitions.find((p) => p.verdict === "illegal");
    // The longest legal prefix of key b is the put (history index 1).
    expect(bad?.linearization).toEqual([1]);
  });

  it("returns the linearization it found as indices into the history", () => {
    const h = [get(1, "x", "a", 5, 6), put(0, "x", "a", 0, 10)];
    const r = analyzeOperations(kvModel, h);
    expect(r.verdict).toBe("ok");
    expect(r.partitions[0]?.linearization).toEqual([1, 0]);
  });

  it("answers unknown when the step budget runs out, and ok with enough budget", () => {
    // n concurrent appends and a read of one particular order: a search that needs many steps.
    const n = 8;
    const h: KvOperation[] = [];
    for (let i = 0; i < n; i++) h.push(append(i, "k", String(i), 0, 100));
    h.push(get(99, "k", "76543210", 101, 102));
    expect(checkOperations(kvModel, h, { maxSteps: 5 })).toBe("unknown");
    const r = analyzeOperations(kvModel, h, { maxSteps: 1_000_000 });
    expect(r.verdict).toBe("ok");
    expect(r.steps).toBeGreaterThan(5);
  });

  it("works without partition, equal or hash (a plain counter model)", () => {
    type In = { inc: boolean };
    const counter: Model<number, In, number> = {
      init: () => 0,
      step: (s, input, out) => (input.inc ? [true, s + 1] : [out === undefined || out === s, s]),
    };
    const op = (c: number, inc: boolean, out: number, call: number, ret: number) =>
      ({ clientId: c, input: { inc }, call, output: out, return: ret }) as Operation<In, number>;
    expect(checkOperations(counter, [op(0, true, 0, 0, 3), op(1, false, 1, 1, 2)])).toBe("ok");
    expect(checkOperations(counter, [op(0, true, 0, 0, 1), op(1, false, 0, 2, 3)])).toBe("illegal");
  });
});
