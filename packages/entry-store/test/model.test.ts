// Model-based property test: random sequences of mutations against the store and a
// plain reference model must agree on every result (versions, changed keys and actions)
// and on the stored state (whole objects, listings in storage order, counts). A second
// property switches dual-write (seed 003 phases A–C) on and off between the mutations, as
// a node restarted from phase to phase does: results are the same, and every numeric-id
// object last written under dual-write has a legacy blob holding exactly its entries.
import { create } from "@bufbuild/protobuf";
import { ValDataSchema } from "@oprc/grpc-api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  createEntryStore,
  createMemoryEngine,
  type EntryStore,
  type MutationResult,
} from "../src/index.js";

const IDS = ["a", "ab", "7", "b.c"];
const KEYS = ["0", "7", "42", "4294967295", "007", "x", "xy", "xyz", "y"];

interface ModelObject {
  version: bigint;
  live: boolean;
  entries: Map<string, string>;
}

type Cmd =
  | { op: "set"; id: string; key: string; v: string }
  | { op: "del"; id: string; key: string }
  | { op: "batch"; id: string; set: [string, string][]; del: string[] }
  | { op: "replace"; id: string; set: [string, string][] }
  | { op: "merge"; id: string; set: [string, string][] }
  | { op: "remove"; id: string }
  /** Restart the store with dual-write on or off. */
  | { op: "phase"; dual: boolean };

const isNumeric = (k: string): boolean =>
  /^(0|[1-9][0-9]{0,9})$/.test(k) && Number(k) <= 0xffffffff;
const enc = new TextEncoder();
/** Storage order: numeric ascending, then strings by (UTF-8 length, bytes). */
function order(a: string, b: string): number {
  const na = isNumeric(a);
  const nb = isNumeric(b);
  if (na !== nb) return na ? -1 : 1;
  if (na) return Number(a) - Number(b);
  const ea = enc.encode(a);
  const eb = enc.encode(b);
  return ea.length !== eb.length ? ea.length - eb.length : Buffer.compare(ea, eb);
}

const id = fc.constantFrom(...IDS);
const key = fc.constantFrom(...KEYS);
const v = fc.string({ maxLength: 4 });
const pairs = fc.uniqueArray(fc.tuple(key, v), { maxLength: 4, selector: (p) => p[0] });
const cmd: fc.Arbitrary<Exclude<Cmd, { op: "phase" }>> = fc.oneof(
  fc.record({ op: fc.constant("set" as const), id, key, v }),
  fc.record({ op: fc.constant("del" as const), id, key }),
  fc
    .record({
      op: fc.constant("batch" as const),
      id,
      set: pairs,
      del: fc.uniqueArray(key, { maxLength: 3 }),
    })
    .map((c) => ({ ...c, del: c.del.filter((k) => !c.set.some(([s]) => s === k)) })),
  fc.record({ op: fc.constant("replace" as const), id, set: pairs }),
  fc.record({ op: fc.constant("merge" as const), id, set: pairs }),
  fc.record({ op: fc.constant("remove" as const), id }),
);

function apply(
  model: Map<string, ModelObject>,
  c: Exclude<Cmd, { op: "phase" }>,
): { before: bigint; after: bigint; changed: string[] } {
  const o = model.get(c.id) ?? { version: 0n, live: false, entries: new Map<string, string>() };
  const before = o.version;
  const changed: [string, string][] = [];
  const next = new Map(o.live ? o.entries : []);
  let write = false;
  const set = (k: string, x: string): void => {
    changed.push([k, next.has(k) ? "update" : "create"]);
    next.set(k, x);
    write = true;
  };
  const del = (k: string): void => {
    if (next.has(k)) {
      changed.push([k, "delete"]);
      next.delete(k);
      write = true;
    }
  };
  let live = true;
  switch (c.op) {
    case "set":
      set(c.key, c.v);
      break;
    case "del":
      del(c.key);
      break;
    case "batch":
      for (const [k, x] of c.set) set(k, x);
      for (const k of c.del) del(k);
      break;
    case "replace":
      for (const k of [...next.keys()]) if (!c.set.some(([s]) => s === k)) del(k);
      for (const [k, x] of c.set) set(k, x);
      write = true;
      break;
    case "merge":
      for (const [k, x] of c.set) set(k, x);
      if (!o.live) write = true;
      break;
    case "remove":
      for (const k of [...next.keys()]) del(k);
      write = o.live;
      live = false;
      break;
  }
  if (!write) return { before, after: before, changed: [] };
  model.set(c.id, { version: before + 1n, live, entries: next });
  changed.sort((a, b) => order(a[0], b[0]));
  return { before, after: before + 1n, changed: changed.map(([k, a]) => `${k}:${a}`) };
}

async function run(store: EntryStore, c: Exclude<Cmd, { op: "phase" }>): Promise<MutationResult> {
  const val = (x: string) => create(ValDataSchema, { data: enc.encode(x) });
  const entries = (set: [string, string][]) => set.map(([k, x]) => [k, val(x)] as const);
  switch (c.op) {
    case "set":
      return store.setEntry(c.id, c.key, val(c.v));
    case "del":
      return store.deleteEntry(c.id, c.key);
    case "batch":
      return store.batch(c.id, { set: entries(c.set), delete: c.del });
    case "replace":
      return store.setObject(c.id, { entries: entries(c.set) });
    case "merge":
      return store.mergeObject(c.id, { entries: entries(c.set) });
    case "remove":
      return store.deleteObject(c.id);
  }
}

describe("entry store vs reference model", () => {
  it("agrees on every result and on the final state", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 1, maxLength: 40 }), async (cmds) => {
        const engine = createMemoryEngine();
        const store = await createEntryStore({ engine, shard: "m/0" });
        const model = new Map<string, ModelObject>();
        for (const c of cmds) {
          const expected = apply(model, c);
          const r = await run(store, c);
          expect({
            before: r.versionBefore,
            after: r.versionAfter,
            changed: r.changed.map((x) => `${x.key}:${x.action}`),
          }).toEqual(expected);
          for (const x of r.changed) expect(x.numeric).toBe(isNumeric(x.key));
        }
        let live = 0n;
        for (const objectId of IDS) {
          const m = model.get(objectId);
          const meta = await store.getMetadata(objectId);
          expect(meta?.version ?? 0n).toBe(m?.version ?? 0n);
          if (m === undefined || !m.live) {
            expect(await store.getObject(objectId)).toBeUndefined();
            continue;
          }
          live++;
          expect(meta?.entryCount).toBe(BigInt(m.entries.size));
          const listed: string[] = [];
          let cursor: Uint8Array | undefined;
          do {
            const page = await store.listEntries(objectId, {
              limit: 2,
              ...(cursor ? { cursor } : {}),
            });
            for (const e of page.entries)
              listed.push(`${e.key}=${new TextDecoder().decode(e.value.data)}`);
            cursor = page.nextCursor;
          } while (cursor !== undefined);
          const keys = [...m.entries.keys()].sort(order);
          expect(listed).toEqual(keys.map((k) => `${k}=${m.entries.get(k)}`));
          for (const prefix of ["x", "4", "0"]) {
            const got = (await store.listEntries(objectId, { prefix, limit: 1024 })).entries.map(
              (e) => e.key,
            );
            expect(got).toEqual(keys.filter((k) => k.startsWith(prefix)));
          }
        }
        expect(store.stats().liveObjects).toBe(live);
        expect((await store.listObjects()).objects.length).toBe(Number(live));
        await store.close();
      }),
      { numRuns: 150 },
    );
  });
});

describe("dual-write across phase changes", () => {
  it("keeps the results of the model and, under dual-write, a blob equal to the entries", async () => {
    const phase = fc.record({ op: fc.constant("phase" as const), dual: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.array(fc.oneof({ weight: 6, arbitrary: cmd }, { weight: 1, arbitrary: phase }), {
          minLength: 1,
          maxLength: 40,
        }),
        async (dualAtStart, cmds) => {
          const engine = createMemoryEngine();
          const open = (dualWrite: boolean) =>
            createEntryStore({ engine, shard: "m/0", dualWrite });
          let dual = dualAtStart;
          let store = await open(dual);
          const model = new Map<string, ModelObject>();
          /** Numeric ids whose last write was under dual-write. */
          const blobCurrent = new Set<string>();
          for (const c of cmds) {
            if (c.op === "phase") {
              await store.close();
              dual = c.dual;
              store = await open(dual);
              continue;
            }
            const expected = apply(model, c);
            const r = await run(store, c);
            expect({
              before: r.versionBefore,
              after: r.versionAfter,
              changed: r.changed.map((x) => `${x.key}:${x.action}`),
            }).toEqual(expected);
            if (r.wrote && /^[0-9]+$/.test(c.id)) {
              if (dual) blobCurrent.add(c.id);
              else blobCurrent.delete(c.id);
            }
          }
          for (const objectId of blobCurrent) {
            const m = model.get(objectId);
            const blob = await store.getLegacyBlob(BigInt(objectId));
            if (m === undefined || !m.live) {
              expect(blob).toBeUndefined();
              continue;
            }
            const inBlob = new Map<string, string>();
            for (const [k, x] of Object.entries(blob?.entriesStr ?? {}))
              inBlob.set(k, new TextDecoder().decode(x.data));
            for (const [k, x] of Object.entries(blob?.entries ?? {}))
              inBlob.set(k, new TextDecoder().decode(x.data));
            expect(inBlob).toEqual(m.entries);
          }
          // Reads come from the entries whatever the blobs hold; the count ignores blobs.
          let live = 0n;
          for (const objectId of IDS) {
            const m = model.get(objectId);
            expect((await store.getMetadata(objectId))?.version ?? 0n).toBe(m?.version ?? 0n);
            if (m?.live === true) live++;
          }
          expect(store.stats().liveObjects).toBe(live);
          await store.close();
        },
      ),
      { numRuns: 150 },
    );
  });
});
