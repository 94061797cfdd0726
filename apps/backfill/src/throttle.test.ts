import { describe, expect, it } from "vitest";
import { createThrottle } from "./throttle.js";

/** A fake clock whose sleep advances time, recording every wait. */
function fakeClock() {
  let t = 1000;
  const waits: number[] = [];
  return {
    now: () => t,
    sleep: async (ms: number) => {
      waits.push(ms);
      t += ms;
    },
    advance: (ms: number) => {
      t += ms;
    },
    waits,
  };
}

describe("createThrottle", () => {
  it("is a no-op when unlimited", async () => {
    const c = fakeClock();
    const t = createThrottle({ perSecond: 0, now: c.now, sleep: c.sleep });
    for (let i = 0; i < 1000; i++) await t.acquire(100);
    expect(c.waits).toEqual([]);
  });

  it("lets one second's burst through, then holds the long-run rate", async () => {
    const c = fakeClock();
    const t = createThrottle({ perSecond: 100, now: c.now, sleep: c.sleep });
    for (let i = 0; i < 10; i++) await t.acquire(10); // the burst: 100 objects
    expect(c.waits).toEqual([]);
    const start = c.now();
    for (let i = 0; i < 50; i++) await t.acquire(10); // 500 more objects
    expect(c.now() - start).toBeCloseTo(5000, 6);
  });

  it("does not bank more than a burst while idle", async () => {
    const c = fakeClock();
    const t = createThrottle({ perSecond: 10, now: c.now, sleep: c.sleep });
    c.advance(60_000);
    await t.acquire(10);
    expect(c.waits).toEqual([]);
    await t.acquire(10);
    expect(c.waits).toEqual([1000]);
  });

  it("rejects when the signal aborts while waiting", async () => {
    const t = createThrottle({ perSecond: 1 });
    await t.acquire(1);
    const controller = new AbortController();
    const p = t.acquire(5, controller.signal);
    controller.abort(new Error("stop"));
    await expect(p).rejects.toThrow("stop");
  });
});
