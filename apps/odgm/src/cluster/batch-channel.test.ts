import { describe, expect, it } from "vitest";
import { BatchChannel } from "./batch-channel.js";

describe("BatchChannel", () => {
  it("hands items over one at a time, in order, as the reader takes them", async () => {
    const ch = new BatchChannel<number>();
    const got: number[] = [];
    const reader = (async () => {
      for await (const n of ch) got.push(n);
    })();
    for (let i = 0; i < 5; i++) await ch.offer(i);
    ch.close(new Error("done"));
    await reader;
    expect(got).toEqual([0, 1, 2, 3, 4]);
  });

  it("close rejects the pending offer, so nothing waits forever on a reader that is gone", async () => {
    const ch = new BatchChannel<number>();
    const pending = ch.offer(1); // nobody reads
    ch.close(new Error("stream failed"));
    await expect(pending).rejects.toThrow("stream failed");
    await expect(ch.offer(2)).rejects.toThrow("stream failed");
    expect(await ch[Symbol.asyncIterator]().next()).toEqual({ value: undefined, done: true });
  });

  it("a reader that stops ends the channel", async () => {
    const ch = new BatchChannel<number>();
    const reader = (async () => {
      for await (const n of ch) if (n === 1) break;
    })();
    await ch.offer(1);
    await reader;
    await expect(ch.offer(2)).rejects.toThrow("the reader stopped");
  });
});

describe("BatchChannel with a reader that asks ahead", () => {
  it("answers overlapping next() calls in order", async () => {
    const ch = new BatchChannel<number>();
    const it = ch[Symbol.asyncIterator]();
    const a = it.next();
    const b = it.next();
    await ch.offer(1);
    await ch.offer(2);
    expect([(await a).value, (await b).value]).toEqual([1, 2]);
    ch.close(new Error("x"));
    expect((await it.next()).done).toBe(true);
  });
});

describe("BatchChannel when the reader fails", () => {
  it("throw() ends the channel with the reader's error", async () => {
    const ch = new BatchChannel<number>();
    const pending = ch.offer(1);
    await ch[Symbol.asyncIterator]().throw?.(new Error("call aborted"));
    await expect(pending).rejects.toThrow("call aborted");
  });
});
