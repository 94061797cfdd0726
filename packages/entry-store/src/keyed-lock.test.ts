import { describe, expect, it } from "vitest";
import { KeyedLock } from "./keyed-lock.js";

describe("KeyedLock", () => {
  it("runs one task per key at a time, in call order, and says which keys are busy", async () => {
    const lock = new KeyedLock();
    const order: string[] = [];
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const a1 = lock.run("a", async () => {
      order.push("a1 start");
      await gate;
      order.push("a1 end");
    });
    const a2 = lock.run("a", async () => {
      order.push("a2");
    });
    const b = lock.run("b", async () => {
      order.push("b");
    });
    expect(lock.busy("a")).toBe(true);
    expect(lock.busy("c")).toBe(false);
    await b;
    expect(lock.busy("b")).toBe(false);
    expect(order).toEqual(["a1 start", "b"]);
    open();
    await Promise.all([a1, a2]);
    expect(order).toEqual(["a1 start", "b", "a1 end", "a2"]);
    // Idle keys hold nothing.
    expect(lock.busy("a")).toBe(false);
    expect(lock.size).toBe(0);
  });
});
