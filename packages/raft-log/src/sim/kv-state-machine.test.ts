import { describe, expect, it } from "vitest";
import { decodeCommand, encodeCommand, KvStateMachine } from "./kv-state-machine.js";

describe("KvStateMachine", () => {
  it("applies put and append once per (client, seq)", () => {
    const kv = new KvStateMachine();
    expect(kv.apply({ clientId: 1, seq: 1, input: { op: "put", key: "a", value: "x" } })).toBe(
      true,
    );
    expect(kv.apply({ clientId: 1, seq: 2, input: { op: "append", key: "a", value: "y" } })).toBe(
      true,
    );
    // A retried (duplicated) command has no second effect.
    expect(kv.apply({ clientId: 1, seq: 2, input: { op: "append", key: "a", value: "y" } })).toBe(
      false,
    );
    // An abandoned older command applied late has no effect either.
    expect(kv.apply({ clientId: 1, seq: 1, input: { op: "put", key: "a", value: "z" } })).toBe(
      false,
    );
    expect(kv.get("a")).toBe("xy");
    expect(kv.get("b")).toBe("");
  });

  it("round-trips through a snapshot", () => {
    const kv = new KvStateMachine();
    kv.apply({ clientId: 2, seq: 5, input: { op: "put", key: "k", value: "v" } });
    const copy = new KvStateMachine();
    copy.restore(kv.snapshot());
    expect(copy.get("k")).toBe("v");
    expect(copy.apply({ clientId: 2, seq: 5, input: { op: "put", key: "k", value: "w" } })).toBe(
      false,
    );
    copy.restore(new Uint8Array(0));
    expect(copy.get("k")).toBe("");
  });

  it("encodes commands canonically and ignores foreign payloads", () => {
    const c = { clientId: 3, seq: 9, input: { op: "append", key: "b", value: "3.9;" } } as const;
    expect(decodeCommand(encodeCommand(c))).toEqual(c);
    expect(decodeCommand(new Uint8Array(0))).toBeUndefined();
    expect(decodeCommand(new TextEncoder().encode("marker|1"))).toBeUndefined();
  });
});
