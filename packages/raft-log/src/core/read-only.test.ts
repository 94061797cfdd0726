import { describe, expect, it } from "vitest";
import { createMessage } from "./message.js";
import { ReadOnly } from "./read-only.js";

describe("ReadOnly", () => {
  it("acknowledging a request releases it and every earlier one", () => {
    const ro = new ReadOnly();
    const req = (n: number) => createMessage({ type: "read_index", context: new Uint8Array([n]) });
    ro.add(5, req(1));
    ro.add(6, req(2));
    ro.add(6, req(2)); // duplicate ignored
    expect(ro.size()).toBe(2);
    expect(ro.recvAck(2, new Uint8Array([9]))).toBeUndefined();
    expect([...(ro.recvAck(2, new Uint8Array([2])) ?? [])]).toEqual([2]);
    expect(ro.advance(new Uint8Array([2])).map((r) => r.index)).toEqual([5, 6]);
    expect(ro.size()).toBe(0);
  });
});
