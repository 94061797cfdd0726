import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Entry } from "../types.js";
import { coalesceMessages } from "./coalesce.js";
import { createMessage, type Message } from "./message.js";
import { electLeader, msg, newHarness, take } from "./testing/harness.js";

const entry = (index: number, term: number, bytes = 0): Entry => ({
  index,
  term,
  type: "normal",
  data: new Uint8Array(bytes),
});

const app = (to: number, index: number, logTerm: number, entries: Entry[], commit = 0) =>
  createMessage({ type: "app", from: 1, to, term: 2, index, logTerm, entries, commit });

describe("coalesceMessages", () => {
  it("joins appends to a peer that continue one another, keeping the later commit", () => {
    const out = coalesceMessages(
      [
        app(2, 10, 2, [entry(11, 2)], 9),
        app(3, 10, 2, [entry(11, 2)], 9),
        app(2, 11, 2, [entry(12, 2)], 10),
        app(2, 12, 2, [], 12),
        app(3, 11, 2, [entry(12, 2)], 10),
      ],
      1 << 20,
    );
    expect(
      out.map((m) => [m.to, m.index, m.logTerm, m.entries.map((e) => e.index), m.commit]),
    ).toEqual([
      [2, 10, 2, [11, 12], 12],
      [3, 10, 2, [11, 12], 10],
    ]);
  });

  it("keeps appends apart that do not continue, or that something else separates", () => {
    const hb = createMessage({ type: "heartbeat", from: 1, to: 2, term: 2, commit: 3 });
    const gap = [app(2, 10, 2, [entry(11, 2)]), app(2, 13, 2, [entry(14, 2)])];
    const otherTerm = [app(2, 10, 2, [entry(11, 2)]), app(2, 11, 1, [entry(12, 2)])];
    const between = [app(2, 10, 2, [entry(11, 2)]), hb, app(2, 11, 2, [entry(12, 2)])];
    for (const ms of [gap, otherTerm, between]) expect(coalesceMessages(ms, 1 << 20)).toEqual(ms);
  });

  it("stops joining entries at the byte bound, but always joins a commit update", () => {
    const out = coalesceMessages(
      [
        app(2, 10, 2, [entry(11, 2, 600)]),
        app(2, 11, 2, [entry(12, 2, 600)]),
        app(2, 12, 2, [], 12),
      ],
      1000,
    );
    expect(out.map((m) => [m.index, m.entries.length, m.commit])).toEqual([
      [10, 1, 0],
      [11, 1, 12],
    ]);
  });

  it("folds accepting append responses into the highest, never a rejection", () => {
    const resp = (index: number, commit: number, reject = false) =>
      createMessage({ type: "app_resp", from: 2, to: 1, term: 2, index, commit, reject });
    expect(coalesceMessages([resp(11, 9), resp(13, 10), resp(12, 10)], 1 << 20)).toEqual([
      resp(13, 10),
    ]);
    const withReject = [resp(11, 9), resp(5, 0, true), resp(12, 10)];
    expect(coalesceMessages(withReject, 1 << 20)).toEqual(withReject);
  });

  it("keeps, per peer, every entry in order and every other message in order (property)", () => {
    // Messages as a leader in replicate state emits them: per peer, appends continue from
    // where the last one to that peer ended, sometimes with a heartbeat or a gap between.
    const step = fc.record({
      to: fc.constantFrom(2, 3, 4),
      kind: fc.constantFrom("entries", "empty", "heartbeat", "gap"),
      count: fc.integer({ min: 1, max: 3 }),
      bytes: fc.integer({ min: 0, max: 40 }),
    });
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 40 }),
        fc.integer({ min: 1, max: 100 }),
        (steps, max) => {
          const next = new Map<number, number>();
          const input: Message[] = [];
          let commit = 0;
          for (const s of steps) {
            const prev = next.get(s.to) ?? 10;
            commit++;
            if (s.kind === "heartbeat") {
              input.push(createMessage({ type: "heartbeat", from: 1, to: s.to, term: 2, commit }));
              continue;
            }
            const from = s.kind === "gap" ? prev + 5 : prev;
            const es =
              s.kind === "empty"
                ? []
                : Array.from({ length: s.count }, (_, i) => entry(from + 1 + i, 2, s.bytes));
            input.push(app(s.to, from, 2, es, commit));
            next.set(s.to, from + es.length);
          }
          const out = coalesceMessages(input, max);
          for (const peer of [2, 3, 4]) {
            const a = input.filter((m) => m.to === peer);
            const b = out.filter((m) => m.to === peer);
            // Every entry arrives, once, in order; so does every heartbeat.
            expect(b.flatMap((m) => m.entries)).toEqual(a.flatMap((m) => m.entries));
            expect(b.filter((m) => m.type === "heartbeat")).toEqual(
              a.filter((m) => m.type === "heartbeat"),
            );
            // Each output append is a valid append: consecutive entries after its index.
            for (const m of b.filter((x) => x.type === "app")) {
              expect(m.entries.map((e) => e.index)).toEqual(
                m.entries.map((_, i) => m.index + 1 + i),
              );
              const bytes = m.entries.reduce((n, e) => n + e.data.byteLength, 0);
              // Over the bound only when a single input append already was.
              if (bytes > max)
                expect(
                  a.some(
                    (x) => x.entries.length === m.entries.length && x.entries[0] === m.entries[0],
                  ),
                ).toBe(true);
            }
            // The last commit index the peer hears is the last one sent to it.
            expect(b.at(-1)?.commit).toBe(a.at(-1)?.commit);
          }
        },
      ),
    );
  });
});

describe("a leader under load", () => {
  it("sends each follower one append per Ready, however many proposals it took", () => {
    const h = newHarness(1, [1, 2, 3], { preVote: false });
    // Elected, with both followers caught up (replicating, not probing).
    let out = electLeader(h);
    for (let round = 0; round < 3; round++) {
      for (const m of out) if (m.type === "app") h.raft.step(ack(m));
      out = take(h);
    }
    for (let i = 0; i < 10; i++) h.raft.propose(new Uint8Array([i]));
    const rd = h.raft.ready();
    const apps = rd.messages.filter((m) => m.type === "app");
    expect(apps.map((m) => [m.to, m.entries.length])).toEqual([
      [2, 10],
      [3, 10],
    ]);
  });
});

function ack(m: Message): Message {
  return msg({
    type: "app_resp",
    from: m.to,
    to: m.from,
    term: m.term,
    index: m.index + m.entries.length,
  });
}
