import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type CachedObject,
  MAX_KNOWN_KEYS,
  notePresence,
  ObjectStateCache,
  type PendingWrite,
  pruneDurable,
} from "./object-state-cache.js";

function object(write?: PendingWrite): CachedObject {
  return {
    meta: undefined,
    event: undefined,
    blob: null,
    pending: new Map(),
    present: new Map(),
    last: write,
    users: 0,
  };
}
const unsettled: PendingWrite = { settled: false, done: Promise.resolve() };

describe("ObjectStateCache", () => {
  it("keeps at most its capacity of idle objects, evicting in insertion order", () => {
    const cache = new ObjectStateCache(3);
    for (const id of ["a", "b", "c", "d", "e"]) cache.set(id, object());
    expect(cache.size).toBe(3);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.get("b")).toBeUndefined();
    expect(cache.get("e")).toBeDefined();
  });

  it("spares an object used since the hand last passed it", () => {
    const cache = new ObjectStateCache(2);
    cache.set("a", object());
    cache.set("b", object());
    cache.get("a");
    cache.set("c", object());
    expect(cache.get("a")).toBeDefined();
    expect(cache.get("b")).toBeUndefined();
  });

  it("never evicts an object with a planner at work or a write in flight", () => {
    const cache = new ObjectStateCache(1);
    const busy = object();
    busy.users = 1;
    cache.set("busy", busy);
    cache.set("writing", object(unsettled));
    cache.set("idle", object());
    expect(cache.get("busy")).toBe(busy);
    expect(cache.get("writing")).toBeDefined();
    // The newest object itself is not its own victim; the bound is exceeded by the busy ones.
    expect(cache.size).toBe(3);
    busy.users = 0;
    cache.set("next", object());
    expect(cache.get("busy")).toBeUndefined();
  });

  it("holds the bound plus the busy objects under any sequence of gets and sets", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 20 }), fc.boolean()), {
          maxLength: 200,
        }),
        (capacity, steps) => {
          const cache = new ObjectStateCache(capacity);
          const busy = new Set<string>();
          for (const [isSet, n, makeBusy] of steps) {
            const id = String(n);
            if (isSet && cache.get(id) === undefined) {
              const o = object();
              if (makeBusy && busy.size < 3) {
                o.users = 1;
                busy.add(id);
              }
              cache.set(id, o);
              expect(cache.get(id)).toBe(o);
            } else cache.get(id);
            expect(cache.size).toBeLessThanOrEqual(capacity + busy.size + 1);
          }
          for (const id of busy) expect(cache.get(id)?.users).toBe(1);
        },
      ),
    );
  });
});

describe("remembered presence", () => {
  it("takes what durable writes left, and keeps pending ones pending", () => {
    const o = object();
    const durable: PendingWrite = { settled: true, done: Promise.resolve() };
    const value = { data: new Uint8Array(1), type: 0 };
    o.pending.set("set", { value, write: durable });
    o.pending.set("deleted", { value: null, write: durable });
    o.pending.set("in-flight", { value, write: unsettled });
    pruneDurable(o);
    expect([...o.pending.keys()]).toEqual(["in-flight"]);
    expect(o.present).toEqual(
      new Map([
        ["set", true],
        ["deleted", false],
      ]),
    );
  });

  it("remembers at most MAX_KNOWN_KEYS keys of one object", () => {
    const o = object();
    for (let i = 0; i < MAX_KNOWN_KEYS; i++) notePresence(o, `k${i}`, true);
    notePresence(o, "k0", false);
    expect(o.present.size).toBe(MAX_KNOWN_KEYS);
    notePresence(o, "one-more", true);
    expect(o.present).toEqual(new Map([["one-more", true]]));
  });
});
