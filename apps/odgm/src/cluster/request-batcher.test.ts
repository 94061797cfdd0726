import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createRequestBatcher } from "./request-batcher.js";

/** A peer whose calls the test answers by hand. */
function manualPeer() {
  const calls: { requests: number[]; answer(): void; fail(err: unknown): void }[] = [];
  const send = (requests: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      calls.push({
        requests,
        answer: () => resolve(requests.map((r) => `ok:${r}`)),
        fail: reject,
      });
    });
  return { calls, send };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("createRequestBatcher", () => {
  it("sends a lone request at once, alone", async () => {
    const peer = manualPeer();
    const b = createRequestBatcher({ send: peer.send });
    const a = b.submit(1);
    expect(peer.calls.map((c) => c.requests)).toEqual([[1]]);
    peer.calls[0]?.answer();
    expect(await a).toBe("ok:1");
  });

  it("coalesces what arrives while maxInFlight calls are out into the next call", async () => {
    const peer = manualPeer();
    const b = createRequestBatcher({ send: peer.send, maxInFlight: 1 });
    const answers = [1, 2, 3, 4].map((n) => b.submit(n));
    expect(peer.calls.map((c) => c.requests)).toEqual([[1]]);
    peer.calls[0]?.answer();
    await tick();
    expect(peer.calls.map((c) => c.requests)).toEqual([[1], [2, 3, 4]]);
    peer.calls[1]?.answer();
    expect(await Promise.all(answers)).toEqual(["ok:1", "ok:2", "ok:3", "ok:4"]);
  });

  it("a failed call fails its own requests only", async () => {
    const peer = manualPeer();
    const b = createRequestBatcher({ send: peer.send, maxInFlight: 1 });
    const first = b.submit(1);
    const second = b.submit(2);
    peer.calls[0]?.fail(new Error("connection reset"));
    await expect(first).rejects.toThrow("connection reset");
    await tick();
    peer.calls[1]?.answer();
    expect(await second).toBe("ok:2");
  });

  it("a wrong number of answers fails the batch instead of mismatching them", async () => {
    const b = createRequestBatcher<number, number>({ send: async () => [] });
    await expect(b.submit(1)).rejects.toThrow("a batch of 1 requests got 0 answers");
  });

  it("a send that throws synchronously rejects, and the batcher keeps going", async () => {
    let n = 0;
    const b = createRequestBatcher<number, number>({
      send: (reqs) => {
        if (n++ === 0) throw new Error("boom");
        return Promise.resolve(reqs);
      },
    });
    await expect(b.submit(1)).rejects.toThrow("boom");
    expect(await b.submit(2)).toBe(2);
  });

  it("refuses nonsense limits", () => {
    expect(() => createRequestBatcher({ send: async () => [], maxInFlight: 0 })).toThrow(
      RangeError,
    );
  });

  it("every request gets its own answer, in submission order, within the limits", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 8 }),
        async (gaps, maxInFlight, maxBatch) => {
          const sent: number[][] = [];
          let out = 0;
          let maxOut = 0;
          const b = createRequestBatcher<number, number>({
            maxInFlight,
            maxBatch,
            send: async (reqs) => {
              sent.push(reqs);
              out++;
              maxOut = Math.max(maxOut, out);
              await tick();
              out--;
              return reqs.map((r) => r * 10);
            },
          });
          const answers: Promise<number>[] = [];
          for (const [i, gap] of gaps.entries()) {
            answers.push(b.submit(i));
            for (let k = 0; k < gap; k++) await tick();
          }
          expect(await Promise.all(answers)).toEqual(gaps.map((_, i) => i * 10));
          expect(sent.flat()).toEqual(gaps.map((_, i) => i));
          expect(Math.max(...sent.map((s) => s.length))).toBeLessThanOrEqual(maxBatch);
          expect(maxOut).toBeLessThanOrEqual(maxInFlight);
        },
      ),
      { numRuns: 200 },
    );
  });
});
