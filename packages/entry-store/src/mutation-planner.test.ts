// The planner on its own: no engine, no clock. Every mutation kind and every CAS, version,
// tombstone and revival rule of spec §4, plus determinism and a model-based property.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  decodeKey,
  encodeEventConfigKey,
  encodeLegacyKey,
  encodeMetadataKey,
} from "@oprc/granular-key";
import {
  EntryRecordSchema,
  type ObjData,
  ObjDataSchema,
  type ObjectEvent,
  ObjectEventSchema,
  ObjectMetaRecordSchema,
  ValDataSchema,
  ValType,
} from "@oprc/grpc-api/messages";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { KvWriteOp } from "./kv.js";
import type { OpValue } from "./mutation-op.js";
import {
  ABSENT_STATE,
  type MutationPlan,
  type ObjectState,
  type PlanEnv,
  planMutation,
  type StoreOp,
  stateNeeds,
} from "./mutation-planner.js";
import { isStoreError, type StoreErrorCode } from "./store-error.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
const v = (s: string, type = 0): OpValue => ({ data: enc.encode(s), type });
const ENV: PlanEnv = { granular: true, legacyFallback: true };
const T = 1_700_000_000_000;
const ID = "obj-1";
const base = (ts = T, id = ID) => ({ objectId: id, timestampMs: ts });
const event = (fn: string): ObjectEvent =>
  create(ObjectEventSchema, { funcTrigger: { [fn]: { onComplete: [], onError: [] } } });
const eventBytes = (fn: string) => toBinary(ObjectEventSchema, event(fn));

/** Folds a plan into the state the next operation sees (what the applier's cache does). */
function fold(state: ObjectState, plan: MutationPlan): ObjectState {
  const entries = new Map(state.entries);
  if (plan.next.meta === undefined || plan.next.meta.tombstone) entries.clear();
  for (const [k, val] of plan.entryChanges) {
    if (val === null) entries.delete(k);
    else entries.set(k, val);
  }
  return { ...plan.next, entries };
}

/** Plans `ops` one after another from `state`, giving every state all of its keys. */
function run(ops: StoreOp[], state: ObjectState = ABSENT_STATE, env = ENV): MutationPlan[] {
  const plans: MutationPlan[] = [];
  for (const op of ops) {
    const plan = planMutation(op, state, env);
    plans.push(plan);
    state = fold(state, plan);
  }
  return plans;
}
function stateAfter(ops: StoreOp[], env = ENV): ObjectState {
  let state = ABSENT_STATE;
  for (const op of ops) state = fold(state, planMutation(op, state, env));
  return state;
}

function codeOf(fn: () => unknown): StoreErrorCode | "ok" {
  try {
    fn();
    return "ok";
  } catch (err) {
    if (isStoreError(err)) return err.code;
    throw err;
  }
}

function metaOf(plan: MutationPlan) {
  const w = plan.writes.find(
    (op) => op.type === "put" && decodeKey(op.key).record === "metadata",
  ) as Extract<KvWriteOp, { type: "put" }> | undefined;
  return w === undefined ? undefined : fromBinary(ObjectMetaRecordSchema, w.value);
}
function entryWrites(plan: MutationPlan): Map<string, { version: bigint; data: string } | null> {
  const out = new Map<string, { version: bigint; data: string } | null>();
  for (const op of plan.writes) {
    if (op.keyspace !== "objects") continue;
    const d = decodeKey(op.key);
    const key =
      d.record === "numeric_entry"
        ? String(d.key.numeric)
        : d.record === "string_entry"
          ? d.key.str
          : undefined;
    if (key === undefined) continue;
    if (op.type === "del") out.set(key, null);
    else {
      const rec = fromBinary(EntryRecordSchema, op.value);
      out.set(key, { version: rec.version, data: dec.decode(rec.value?.data) });
    }
  }
  return out;
}

describe("stateNeeds", () => {
  it("asks for the keys a plan depends on, all keys for replace and delete, the blob for conversion", () => {
    expect(stateNeeds({ kind: "set_entry", ...base(), key: "a", value: v("1") })).toEqual({
      keys: ["a"],
      allKeys: false,
      values: false,
      blobAlways: false,
    });
    expect(
      stateNeeds({ kind: "batch", ...base(), sets: new Map([["a", v("1")]]), deletes: ["b"] }).keys,
    ).toEqual(["a", "b"]);
    expect(stateNeeds({ kind: "set_object", ...base(), entries: new Map() }).allKeys).toBe(true);
    expect(stateNeeds({ kind: "delete_object", ...base() }).allKeys).toBe(true);
    expect(stateNeeds({ kind: "convert_legacy", ...base(T, "7") }).blobAlways).toBe(true);
    // Dual-write rebuilds a numeric id's blob: every entry, with values.
    const dual = { dualWrite: true };
    expect(
      stateNeeds({ kind: "set_entry", ...base(T, "7"), key: "a", value: v("1") }, dual),
    ).toEqual({ keys: [], allKeys: true, values: true, blobAlways: false });
    expect(
      stateNeeds({ kind: "set_entry", ...base(T, "abc"), key: "a", value: v("1") }, dual).allKeys,
    ).toBe(false);
  });
});

describe("versions and single entries", () => {
  it("creates an object at version 1 from 0: metadata, entry, a create, one more live object", () => {
    const [p] = run([{ kind: "set_entry", ...base(), key: "name", value: v("ann") }]);
    const plan = p as MutationPlan;
    expect(plan.result).toMatchObject({
      versionBefore: 0n,
      versionAfter: 1n,
      wrote: true,
      existedBefore: false,
      exists: true,
      changed: [{ key: "name", numeric: false, action: "create" }],
    });
    expect(plan.liveDelta).toBe(1);
    expect(metaOf(plan)).toMatchObject({
      objectVersion: 1n,
      tombstone: false,
      entryCount: 1n,
      createdAtMs: BigInt(T),
      updatedAtMs: BigInt(T),
    });
    expect(entryWrites(plan).get("name")).toEqual({ version: 1n, data: "ann" });
  });

  it("bumps by exactly one per changing call; update vs create; created time kept", () => {
    const plans = run([
      { kind: "set_entry", ...base(T), key: "a", value: v("1") },
      { kind: "set_entry", ...base(T + 5), key: "a", value: v("2") },
      { kind: "set_entry", ...base(T + 9), key: "b", value: v("3") },
    ]);
    expect(plans.map((p) => p.result.versionAfter)).toEqual([1n, 2n, 3n]);
    expect(plans.map((p) => p.result.changed[0]?.action)).toEqual(["create", "update", "create"]);
    expect(plans.map((p) => p.liveDelta)).toEqual([1, 0, 0]);
    expect(metaOf(plans[2] as MutationPlan)).toMatchObject({
      entryCount: 2n,
      createdAtMs: BigInt(T),
      updatedAtMs: BigInt(T + 9),
    });
  });

  it("deleting a missing key or object changes nothing and writes nothing", () => {
    const [none] = run([{ kind: "delete_entry", ...base(), key: "x" }]);
    expect(none?.writes).toEqual([]);
    expect(none?.result).toMatchObject({ versionBefore: 0n, versionAfter: 0n, wrote: false });
    const plans = run([
      { kind: "set_entry", ...base(), key: "a", value: v("1") },
      { kind: "delete_entry", ...base(), key: "zz" },
      { kind: "delete_entry", ...base(), key: "a" },
    ]);
    expect(plans[1]?.writes).toEqual([]);
    expect(plans[2]?.result.changed).toEqual([{ key: "a", numeric: false, action: "delete" }]);
    expect(entryWrites(plans[2] as MutationPlan).get("a")).toBeNull();
    expect(metaOf(plans[2] as MutationPlan)?.entryCount).toBe(0n);
  });

  it("numeric keys are canonical u32 strings; '007' is a string key", () => {
    const [p] = run([
      {
        kind: "batch",
        ...base(),
        sets: new Map([
          ["007", v("s")],
          ["7", v("n")],
          ["4294967296", v("big")],
        ]),
        deletes: [],
      },
    ]);
    expect(p?.result.changed).toEqual([
      { key: "7", numeric: true, action: "create" },
      { key: "007", numeric: false, action: "create" },
      { key: "4294967296", numeric: false, action: "create" },
    ]);
  });

  it("refuses malformed operations with invalid_argument", () => {
    const s = ABSENT_STATE;
    expect(
      codeOf(() =>
        planMutation({ kind: "set_entry", ...base(0, ""), key: "a", value: v("x") }, s, ENV),
      ),
    ).toBe("invalid_argument");
    expect(
      codeOf(() =>
        planMutation(
          { kind: "set_entry", ...base(0, "a\u0000b"), key: "a", value: v("x") },
          s,
          ENV,
        ),
      ),
    ).toBe("invalid_argument");
    expect(
      codeOf(() => planMutation({ kind: "set_entry", ...base(), key: "", value: v("x") }, s, ENV)),
    ).toBe("invalid_argument");
    expect(
      codeOf(() =>
        planMutation({ kind: "set_entry", ...base(), key: "a", value: {} as OpValue }, s, ENV),
      ),
    ).toBe("invalid_argument");
    expect(
      codeOf(() =>
        planMutation({ kind: "set_entry", ...base(Number.NaN), key: "a", value: v("x") }, s, ENV),
      ),
    ).toBe("invalid_argument");
    expect(
      codeOf(() =>
        planMutation({ kind: "set_event_config", ...base(), event: Uint8Array.of(0xff) }, s, ENV),
      ),
    ).toBe("invalid_argument");
    expect(
      codeOf(() =>
        planMutation(
          { kind: "set_entry", ...base(), key: "a", value: v("x"), expectedVersion: -1n },
          s,
          ENV,
        ),
      ),
    ).toBe("invalid_argument");
  });
});

describe("batches and CAS", () => {
  it("applies sets and deletes under one version, changes in storage order", () => {
    const plans = run([
      {
        kind: "batch",
        ...base(),
        sets: new Map([
          ["a", v("1")],
          ["b", v("2")],
          ["3", v("3")],
        ]),
        deletes: [],
      },
      {
        kind: "batch",
        ...base(),
        sets: new Map([
          ["b", v("x")],
          ["c", v("y")],
        ]),
        deletes: ["a", "3", "nope", "a"],
      },
    ]);
    const p = plans[1] as MutationPlan;
    expect(p.result.versionAfter).toBe(2n);
    expect(p.result.changed).toEqual([
      { key: "3", numeric: true, action: "delete" },
      { key: "a", numeric: false, action: "delete" },
      { key: "b", numeric: false, action: "update" },
      { key: "c", numeric: false, action: "create" },
    ]);
    const w = entryWrites(p);
    expect(w.get("b")).toEqual({ version: 2n, data: "x" });
    expect(w.get("a")).toBeNull();
    expect(w.has("nope")).toBe(false);
    expect(metaOf(p)?.entryCount).toBe(2n);
  });

  it("an empty batch changes nothing; a key both set and deleted is refused", () => {
    expect(run([{ kind: "batch", ...base(), sets: new Map(), deletes: [] }])[0]?.writes).toEqual(
      [],
    );
    expect(
      codeOf(() =>
        planMutation(
          { kind: "batch", ...base(), sets: new Map([["a", v("1")]]), deletes: ["a"] },
          ABSENT_STATE,
          ENV,
        ),
      ),
    ).toBe("invalid_argument");
  });

  it("CAS: a missing object is version 0; a mismatch names both numbers and writes nothing", () => {
    const first = run([
      { kind: "set_entry", ...base(), key: "a", value: v("1"), expectedVersion: 0n },
    ]);
    expect(first[0]?.result.versionAfter).toBe(1n);
    const state = stateAfter([{ kind: "set_entry", ...base(), key: "a", value: v("1") }]);
    for (const op of [
      { kind: "set_entry", ...base(), key: "a", value: v("2"), expectedVersion: 0n },
      { kind: "delete_object", ...base(), expectedVersion: 5n },
      { kind: "set_object", ...base(), entries: new Map(), expectedVersion: 2n },
    ] satisfies StoreOp[]) {
      try {
        planMutation(op, state, ENV);
        expect.unreachable();
      } catch (err) {
        expect(isStoreError(err, "version_mismatch")).toBe(true);
        expect(err).toMatchObject({ actual: 1n });
      }
    }
    expect(
      planMutation(
        {
          kind: "batch",
          ...base(),
          sets: new Map([["b", v("2")]]),
          deletes: [],
          expectedVersion: 1n,
        },
        state,
        ENV,
      ).result.versionAfter,
    ).toBe(2n);
  });
});

describe("replace and merge", () => {
  it("set_object replaces: unlisted removed, listed written, even identical content writes", () => {
    const plans = run([
      {
        kind: "batch",
        ...base(),
        sets: new Map([
          ["a", v("1")],
          ["b", v("2")],
        ]),
        deletes: [],
      },
      {
        kind: "set_object",
        ...base(),
        entries: new Map([
          ["b", v("2")],
          ["c", v("3")],
        ]),
      },
      {
        kind: "set_object",
        ...base(),
        entries: new Map([
          ["b", v("2")],
          ["c", v("3")],
        ]),
      },
    ]);
    expect(plans[1]?.result.changed.map((c) => `${c.key}:${c.action}`)).toEqual([
      "a:delete",
      "b:update",
      "c:create",
    ]);
    expect(plans[2]?.result.versionAfter).toBe(3n);
    expect(metaOf(plans[2] as MutationPlan)?.entryCount).toBe(2n);
  });

  it("set_object and merge_object replace the event config only when given, storing its bytes as given", () => {
    const bytes = eventBytes("f");
    const plans = run([
      { kind: "set_object", ...base(), entries: new Map(), event: bytes },
      { kind: "set_object", ...base(), entries: new Map([["a", v("1")]]) },
      { kind: "merge_object", ...base(), entries: new Map(), event: eventBytes("g") },
    ]);
    const eventKey = encodeEventConfigKey(ID);
    const put = plans[0]?.writes.find((w) => w.type === "put" && w.key.join() === eventKey.join());
    expect(put).toMatchObject({ value: bytes });
    expect(plans[1]?.result.eventConfig?.funcTrigger.f).toBeDefined();
    expect(plans[1]?.writes.some((w) => w.key.join() === eventKey.join())).toBe(false);
    expect(plans[2]?.result.eventConfig?.funcTrigger.g).toBeDefined();
  });

  it("merge_object upserts and keeps the rest; an empty merge creates a missing object but is a no-op on a live one", () => {
    const plans = run([
      { kind: "merge_object", ...base(), entries: new Map() },
      { kind: "merge_object", ...base(), entries: new Map([["a", v("1")]]) },
      { kind: "merge_object", ...base(), entries: new Map([["b", v("2")]]) },
      { kind: "merge_object", ...base(), entries: new Map() },
    ]);
    expect(plans.map((p) => p.result.versionAfter)).toEqual([1n, 2n, 3n, 3n]);
    expect(plans[3]?.writes).toEqual([]);
    expect(metaOf(plans[2] as MutationPlan)?.entryCount).toBe(2n);
  });

  it("merges two CRDT_MAP values with the injected merge, and refuses without one", () => {
    const state = stateAfter([
      { kind: "set_entry", ...base(), key: "doc", value: v("left", ValType.CRDT_MAP) },
    ]);
    const op: StoreOp = {
      kind: "merge_object",
      ...base(),
      entries: new Map([["doc", v("right", ValType.CRDT_MAP)]]),
    };
    const crdt = (a: Uint8Array, b: Uint8Array) => enc.encode(`${dec.decode(a)}+${dec.decode(b)}`);
    const plan = planMutation(op, state, { ...ENV, crdt });
    expect(entryWrites(plan).get("doc")).toEqual({ version: 2n, data: "left+right" });
    expect(codeOf(() => planMutation(op, state, ENV))).toBe("unavailable");
    // A byte value over a CRDT (or the reverse) is a plain overwrite.
    const plain = planMutation(
      { kind: "merge_object", ...base(), entries: new Map([["doc", v("bytes")]]) },
      state,
      ENV,
    );
    expect(entryWrites(plain).get("doc")?.data).toBe("bytes");
  });
});

describe("delete, tombstones and revival", () => {
  it("deletes: entries and event removed, tombstone at version+1, a delete per key, one fewer live object", () => {
    const before: StoreOp[] = [
      {
        kind: "set_object",
        ...base(T),
        entries: new Map([
          ["a", v("1")],
          ["9", v("2")],
        ]),
        event: eventBytes("f"),
      },
    ];
    const state = stateAfter(before);
    const plan = planMutation({ kind: "delete_object", ...base(T + 1) }, state, ENV);
    expect(plan.result).toMatchObject({
      versionBefore: 1n,
      versionAfter: 2n,
      existedBefore: true,
      exists: false,
    });
    expect(plan.result.changed).toEqual([
      { key: "9", numeric: true, action: "delete" },
      { key: "a", numeric: false, action: "delete" },
    ]);
    // The events of a delete carry the config the object had.
    expect(plan.result.eventConfig?.funcTrigger.f).toBeDefined();
    expect(plan.liveDelta).toBe(-1);
    expect(metaOf(plan)).toMatchObject({ objectVersion: 2n, tombstone: true, entryCount: 0n });
    expect(
      plan.writes.some((w) => w.type === "del" && w.key.join() === encodeEventConfigKey(ID).join()),
    ).toBe(true);
    // Idempotent: deleting again (or a missing object) writes nothing.
    expect(
      planMutation({ kind: "delete_object", ...base() }, fold(state, plan), ENV).writes,
    ).toEqual([]);
    expect(planMutation({ kind: "delete_object", ...base() }, ABSENT_STATE, ENV).writes).toEqual(
      [],
    );
  });

  it("a deleted object is revived by a later write; its version continues (no sticky tombstone)", () => {
    const plans = run([
      { kind: "set_entry", ...base(T), key: "a", value: v("1") },
      { kind: "delete_object", ...base(T + 1) },
      { kind: "set_entry", ...base(T + 2), key: "a", value: v("2") },
    ]);
    const revive = plans[2] as MutationPlan;
    expect(revive.result).toMatchObject({
      versionBefore: 2n,
      versionAfter: 3n,
      existedBefore: false,
      exists: true,
    });
    expect(revive.result.changed).toEqual([{ key: "a", numeric: false, action: "create" }]);
    expect(revive.liveDelta).toBe(1);
    expect(metaOf(revive)).toMatchObject({
      createdAtMs: BigInt(T + 2),
      entryCount: 1n,
      tombstone: false,
    });
  });
});

describe("event config", () => {
  it("set_event_config creates a missing object, removes a config, and is a no-op removing none", () => {
    const plans = run([
      { kind: "set_event_config", ...base(), event: eventBytes("f") },
      { kind: "set_event_config", ...base() },
      { kind: "set_event_config", ...base() },
    ]);
    expect(plans.map((p) => p.result.versionAfter)).toEqual([1n, 2n, 2n]);
    expect(plans[0]?.liveDelta).toBe(1);
    expect(plans[1]?.writes.some((w) => w.type === "del")).toBe(true);
    expect(plans[2]?.writes).toEqual([]);
  });
});

describe("legacy blobs", () => {
  const blob: ObjData = create(ObjDataSchema, {
    entries: { 1: create(ValDataSchema, { data: enc.encode("one") }) },
    entriesStr: { name: create(ValDataSchema, { data: enc.encode("bob") }) },
    event: event("f"),
  });
  const blobState: ObjectState = { meta: undefined, event: undefined, blob, entries: new Map() };
  const blobKey = encodeLegacyKey(42n);

  it("the first write converts the blob in the same write: untouched entries at version 0, blob removed", () => {
    const plan = planMutation(
      { kind: "set_entry", ...base(T, "42"), key: "name", value: v("ann") },
      blobState,
      ENV,
    );
    expect(plan.result).toMatchObject({ versionBefore: 0n, versionAfter: 1n, existedBefore: true });
    expect(plan.result.changed).toEqual([{ key: "name", numeric: false, action: "update" }]);
    const w = entryWrites(plan);
    expect(w.get("1")).toEqual({ version: 0n, data: "one" });
    expect(w.get("name")).toEqual({ version: 1n, data: "ann" });
    expect(plan.writes).toContainEqual({ type: "del", keyspace: "blobs", key: blobKey });
    expect(metaOf(plan)?.entryCount).toBe(2n);
    expect(plan.liveDelta).toBe(0);
    expect(plan.next.blob).toBeNull();
    expect(plan.writes.some((x) => x.key.join() === encodeEventConfigKey("42").join())).toBe(true);
  });

  it("deleting a blob object tombstones it and removes the blob", () => {
    const plan = planMutation({ kind: "delete_object", ...base(T, "42") }, blobState, ENV);
    expect(plan.result.changed.map((c) => c.action)).toEqual(["delete", "delete"]);
    expect(plan.writes).toContainEqual({ type: "del", keyspace: "blobs", key: blobKey });
    expect(metaOf(plan)).toMatchObject({ tombstone: true, objectVersion: 1n });
  });

  it("legacy mode (granular off) writes numeric ids as blobs without versions; string ids stay granular", () => {
    const legacy: PlanEnv = { granular: false, legacyFallback: true };
    const plan = planMutation(
      { kind: "set_entry", ...base(T, "42"), key: "k", value: v("v") },
      blobState,
      legacy,
    );
    expect(plan.result.versionAfter).toBe(0n);
    const put = plan.writes[0] as Extract<KvWriteOp, { type: "put" }>;
    expect(put).toMatchObject({ keyspace: "blobs", key: blobKey });
    const stored = fromBinary(ObjDataSchema, put.value);
    expect(Object.keys(stored.entriesStr).sort()).toEqual(["k", "name"]);
    const str = planMutation(
      { kind: "set_entry", ...base(T, "user"), key: "k", value: v("v") },
      ABSENT_STATE,
      legacy,
    );
    expect(str.result.versionAfter).toBe(1n);
  });

  it("convert_legacy converts once, drops a stale blob beside metadata, refuses string ids", () => {
    const converted = planMutation({ kind: "convert_legacy", ...base(T, "42") }, blobState, ENV);
    expect(converted.conversion).toEqual({ converted: true, entries: 2, blobRemoved: true });
    expect(converted.result.versionAfter).toBe(0n);
    expect(metaOf(converted)).toMatchObject({ objectVersion: 0n, entryCount: 2n });
    const none = planMutation(
      { kind: "convert_legacy", ...base(T, "42") },
      { ...blobState, blob: null },
      ENV,
    );
    expect(none.writes).toEqual([]);
    const stale = planMutation(
      { kind: "convert_legacy", ...base(T, "42") },
      { ...blobState, meta: converted.next.meta },
      ENV,
    );
    expect(stale.writes).toEqual([{ type: "del", keyspace: "blobs", key: blobKey }]);
    expect(stale.liveDelta).toBe(0);
    // Under dual-write the blob beside metadata is the object's current copy: it stays.
    const dual = { ...ENV, dualWrite: true };
    const kept = planMutation(
      { kind: "convert_legacy", ...base(T, "42") },
      { ...blobState, meta: converted.next.meta },
      dual,
    );
    expect(kept.writes).toEqual([]);
    const fresh = planMutation({ kind: "convert_legacy", ...base(T, "42") }, blobState, dual);
    expect(fresh.conversion).toEqual({ converted: true, entries: 2, blobRemoved: false });
    expect(fresh.writes.some((w) => w.keyspace === "blobs")).toBe(false);
    expect(
      codeOf(() => planMutation({ kind: "convert_legacy", ...base(T, "abc") }, ABSENT_STATE, ENV)),
    ).toBe("invalid_argument");
  });
});

// ----------------------------------------------------------------- properties

const keyArb = fc.oneof(
  fc.constantFrom("a", "b", "c", "007"),
  fc.integer({ min: 0, max: 3 }).map(String),
);
const valArb = fc.string({ maxLength: 4 }).map((s) => v(s));
const opArb: fc.Arbitrary<StoreOp> = fc.oneof(
  fc
    .record({ key: keyArb, value: valArb })
    .map(({ key, value }) => ({ kind: "set_entry", ...base(), key, value }) as StoreOp),
  keyArb.map((key) => ({ kind: "delete_entry", ...base(), key }) as StoreOp),
  fc
    .tuple(
      fc.uniqueArray(keyArb, { maxLength: 3 }),
      fc.uniqueArray(keyArb, { maxLength: 3 }),
      valArb,
    )
    .map(
      ([sets, dels, value]) =>
        ({
          kind: "batch",
          ...base(),
          sets: new Map(sets.map((k) => [k, value])),
          deletes: dels.filter((k) => !sets.includes(k)),
        }) as StoreOp,
    ),
  fc
    .uniqueArray(keyArb, { maxLength: 3 })
    .map(
      (ks) =>
        ({ kind: "set_object", ...base(), entries: new Map(ks.map((k) => [k, v(k)])) }) as StoreOp,
    ),
  fc.uniqueArray(keyArb, { maxLength: 3 }).map(
    (ks) =>
      ({
        kind: "merge_object",
        ...base(),
        entries: new Map(ks.map((k) => [k, v(k)])),
      }) as StoreOp,
  ),
  fc.constant({ kind: "delete_object", ...base() } as StoreOp),
);

describe("properties", () => {
  it("matches a plain model: versions bump by one iff a write happens; entries and counts agree", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 30 }), (ops) => {
        let state = ABSENT_STATE;
        let model = new Map<string, string>();
        let live = false;
        let version = 0n;
        let liveCount = 0;
        for (const op of ops) {
          const plan = planMutation(op, state, ENV);
          const next = new Map(model);
          let nextLive: boolean = live;
          if (op.kind === "set_entry") {
            next.set(op.key, dec.decode(op.value.data));
            nextLive = true;
          } else if (op.kind === "delete_entry") next.delete(op.key);
          else if (op.kind === "batch") {
            for (const k of op.deletes) next.delete(k);
            for (const [k, val] of op.sets) next.set(k, dec.decode(val.data));
            if (op.sets.size > 0) nextLive = true;
          } else if (op.kind === "set_object" || op.kind === "merge_object") {
            if (op.kind === "set_object") next.clear();
            for (const [k, val] of op.entries) next.set(k, dec.decode(val.data));
            nextLive = true;
          } else if (op.kind === "delete_object") {
            next.clear();
            nextLive = false;
          }
          const has = (k: string) => live && model.has(k);
          const wrote =
            op.kind === "set_entry" || op.kind === "set_object"
              ? true
              : op.kind === "delete_entry"
                ? has(op.key)
                : op.kind === "batch"
                  ? op.sets.size > 0 || op.deletes.some(has)
                  : op.kind === "merge_object"
                    ? op.entries.size > 0 || !live
                    : live;
          expect(plan.result.wrote).toBe(wrote);
          expect(plan.result.versionAfter).toBe(plan.result.wrote ? version + 1n : version);
          // The planner builds metadata as a literal: it must be the message create() builds.
          if (plan.next.meta !== undefined) {
            const { $typeName: _, ...fields } = plan.next.meta;
            expect(plan.next.meta).toStrictEqual(create(ObjectMetaRecordSchema, fields));
            expect(Object.keys(plan.next.meta)).toEqual(
              Object.keys(create(ObjectMetaRecordSchema, fields)),
            );
          }
          version = plan.result.versionAfter;
          liveCount += plan.liveDelta;
          state = fold(state, plan);
          model = next;
          live = nextLive;
          expect(state.meta?.entryCount ?? 0n).toBe(BigInt(live ? model.size : 0));
          expect(liveCount).toBe(live ? 1 : 0);
          expect(new Set(state.entries.keys())).toEqual(new Set(live ? model.keys() : []));
        }
      }),
      { numRuns: 400 },
    );
  });

  it("is deterministic: the same operations on the same state give byte-identical writes", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 15 }), (ops) => {
        const a = run(ops).map((p) => p.writes);
        const b = run(ops).map((p) => p.writes);
        expect(b).toEqual(a);
      }),
      { numRuns: 200 },
    );
  });

  it("metadata keys are written under the object's own id only", () => {
    const plan = run([
      { kind: "set_entry", ...base(), key: "a", value: v("1") },
    ])[0] as MutationPlan;
    expect(plan.writes.filter((w) => w.key.join() === encodeMetadataKey(ID).join())).toHaveLength(
      1,
    );
  });
});
