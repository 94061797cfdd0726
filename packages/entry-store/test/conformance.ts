// The one conformance suite every storage engine runs (house style rule 11).
import * as Automerge from "@automerge/automerge";
import { create } from "@bufbuild/protobuf";
import { encodeEntryKey, encodeMetadataKey } from "@oprc/granular-key";
import {
  DataTriggerSchema,
  type ObjectEvent,
  ObjectEventSchema,
  TriggerTargetSchema,
  type ValData,
  ValDataSchema,
  ValType,
} from "@oprc/grpc-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createEntryStore,
  type EntryStore,
  type EntryStoreOptions,
  isStoreError,
  type KvEngine,
  type KvWriteOp,
  type KvWriteOptions,
  type MutationResult,
  type StoredEntry,
  type StoreError,
} from "../src/index.js";

/** Options of {@link runEntryStoreConformance}. */
export interface ConformanceOptions {
  /** Suite title, e.g. the engine kind. */
  name: string;
  /** A fresh, empty engine per test. */
  createEngine: () => Promise<KvEngine>;
  /** Called after each test with the engine (after it was closed). */
  dispose?: (engine: KvEngine) => Promise<void>;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A byte value. */
export function val(text: string): ValData {
  return create(ValDataSchema, { data: enc.encode(text), type: ValType.BYTE });
}

/** Text of a value. */
export function txt(v: ValData | undefined): string | undefined {
  return v === undefined ? undefined : dec.decode(v.data);
}

function crdt(doc: Automerge.Doc<Record<string, unknown>>): ValData {
  return create(ValDataSchema, { data: Automerge.save(doc), type: ValType.CRDT_MAP });
}

function eventWithTrigger(fn: string): ObjectEvent {
  return create(ObjectEventSchema, {
    dataTriggerStr: {
      name: create(DataTriggerSchema, {
        onUpdate: [create(TriggerTargetSchema, { clsId: "c", fnId: fn })],
      }),
    },
  });
}

async function expectCode(p: Promise<unknown>, code: string): Promise<StoreError> {
  try {
    await p;
  } catch (err) {
    expect(isStoreError(err)).toBe(true);
    expect((err as StoreError).code).toBe(code);
    expect((err as StoreError).message.startsWith(`[${code}] `)).toBe(true);
    return err as StoreError;
  }
  throw new Error(`expected a ${code} error`);
}

async function listAll(
  store: EntryStore,
  id: string,
  prefix?: string,
  limit = 3,
): Promise<StoredEntry[]> {
  const out: StoredEntry[] = [];
  let cursor: Uint8Array | undefined;
  for (let guard = 0; guard < 10_000; guard++) {
    const page = await store.listEntries(id, {
      limit,
      ...(prefix === undefined ? {} : { prefix }),
      ...(cursor === undefined ? {} : { cursor }),
    });
    out.push(...page.entries);
    if (page.nextCursor === undefined) return out;
    expect(page.entries.length).toBe(limit);
    cursor = page.nextCursor;
  }
  throw new Error("listing did not terminate");
}

/**
 * Runs the entry-store conformance suite against an engine: every operation, version
 * rule, CAS, replace vs merge, tombstones and revival, listing, stats, legacy blobs and
 * per-object serialization.
 */
export function runEntryStoreConformance(options: ConformanceOptions): void {
  describe(`entry store conformance: ${options.name}`, () => {
    let engine: KvEngine;
    let store: EntryStore;
    const open = (extra: Partial<EntryStoreOptions> = {}): Promise<EntryStore> =>
      createEntryStore({ engine, shard: "cls/0", ...extra });

    beforeEach(async () => {
      engine = await options.createEngine();
      store = await open();
    });
    afterEach(async () => {
      await store.close();
      await engine.close();
      await options.dispose?.(engine);
    });

    describe("versions and single entries", () => {
      it("creates an object at version 1 from version 0 and reports a create", async () => {
        const r = await store.setEntry("user-1", "name", val("ada"));
        expect(r).toMatchObject({
          versionBefore: 0n,
          versionAfter: 1n,
          wrote: true,
          existedBefore: false,
          exists: true,
        });
        expect(r.changed).toEqual([{ key: "name", numeric: false, action: "create" }]);
        const got = await store.getEntry("user-1", "name");
        expect(got.objectVersion).toBe(1n);
        expect(txt(got.entry?.value)).toBe("ada");
        expect(got.entry?.version).toBe(1n);
        const meta = await store.getMetadata("user-1");
        expect(meta).toMatchObject({ version: 1n, deleted: false, entryCount: 1n, legacy: false });
        expect(store.stats().liveObjects).toBe(1n);
      });

      it("bumps by exactly one per changing call; entries keep the version of their last mutation", async () => {
        await store.setEntry("o", "a", val("1"));
        const r2 = await store.setEntry("o", "b", val("2"));
        const r3 = await store.setEntry("o", "a", val("3"));
        expect([r2.versionAfter, r3.versionAfter]).toEqual([2n, 3n]);
        expect(r3.changed).toEqual([{ key: "a", numeric: false, action: "update" }]);
        expect((await store.getEntry("o", "a")).entry?.version).toBe(3n);
        expect((await store.getEntry("o", "b")).entry?.version).toBe(2n);
        expect((await store.getMetadata("o"))?.entryCount).toBe(2n);
      });

      it("a missing entry of an existing object has no value but the object version", async () => {
        await store.setEntry("o", "a", val("1"));
        expect(await store.getEntry("o", "zzz")).toEqual({ objectVersion: 1n, entry: undefined });
        expect(await store.getEntry("nope", "a")).toEqual({
          objectVersion: undefined,
          entry: undefined,
        });
      });

      it("deletes entries; deleting a missing key or object changes nothing", async () => {
        await store.setEntry("o", "a", val("1"));
        await store.setEntry("o", "b", val("2"));
        const d = await store.deleteEntry("o", "a");
        expect(d).toMatchObject({ versionBefore: 2n, versionAfter: 3n });
        expect(d.changed).toEqual([{ key: "a", numeric: false, action: "delete" }]);
        expect((await store.getEntry("o", "a")).entry).toBeUndefined();
        expect((await store.getMetadata("o"))?.entryCount).toBe(1n);
        const noop = await store.deleteEntry("o", "a");
        expect(noop).toMatchObject({
          versionBefore: 3n,
          versionAfter: 3n,
          wrote: false,
          changed: [],
        });
        const noObject = await store.deleteEntry("ghost", "a");
        expect(noObject).toMatchObject({
          versionBefore: 0n,
          versionAfter: 0n,
          wrote: false,
          exists: false,
        });
        expect(await store.getMetadata("ghost")).toBeUndefined();
        expect(store.stats().liveObjects).toBe(1n);
      });

      it("decides numeric vs string keys by canonical u32 form", async () => {
        const r = await store.batch("o", {
          set: [
            ["42", val("n42")],
            ["007", val("s007")],
            ["4294967295", val("max")],
            ["4294967296", val("over")],
          ],
        });
        expect(r.changed).toEqual([
          { key: "42", numeric: true, action: "create" },
          { key: "4294967295", numeric: true, action: "create" },
          { key: "007", numeric: false, action: "create" },
          { key: "4294967296", numeric: false, action: "create" },
        ]);
        const obj = await store.getObject("o");
        expect([...(obj?.entries.keys() ?? [])]).toEqual([42, 4294967295]);
        expect([...(obj?.entriesStr.keys() ?? [])].sort()).toEqual(["007", "4294967296"]);
      });

      it("rejects invalid arguments with invalid_argument", async () => {
        await expectCode(store.setEntry("", "a", val("x")), "invalid_argument");
        await expectCode(store.setEntry("o", "", val("x")), "invalid_argument");
        await expectCode(store.setEntry("o", "a", {} as ValData), "invalid_argument");
        await expectCode(store.listEntries("o", { limit: -1 }), "invalid_argument");
        await expectCode(store.setEntry("a\u0000b", "a", val("x")), "invalid_argument");
      });
    });

    describe("batches and CAS", () => {
      it("applies sets and deletes atomically under one version", async () => {
        await store.batch("o", {
          set: [
            ["a", val("1")],
            ["b", val("2")],
            ["c", val("3")],
          ],
        });
        const r = await store.batch("o", {
          set: [
            ["a", val("A")],
            ["d", val("4")],
          ],
          delete: ["b", "missing"],
        });
        expect(r).toMatchObject({ versionBefore: 1n, versionAfter: 2n });
        expect(r.changed).toEqual([
          { key: "a", numeric: false, action: "update" },
          { key: "b", numeric: false, action: "delete" },
          { key: "d", numeric: false, action: "create" },
        ]);
        const entries = await listAll(store, "o");
        expect(entries.map((e) => [e.key, txt(e.value), e.version])).toEqual([
          ["a", "A", 2n],
          ["c", "3", 1n],
          ["d", "4", 2n],
        ]);
        expect((await store.getMetadata("o"))?.entryCount).toBe(3n);
      });

      it("an empty batch and a batch deleting only missing keys change nothing", async () => {
        await store.setEntry("o", "a", val("1"));
        expect(await store.batch("o", {})).toMatchObject({
          versionAfter: 1n,
          wrote: false,
          changed: [],
        });
        expect(await store.batch("o", { delete: ["x", "y"] })).toMatchObject({
          versionAfter: 1n,
          wrote: false,
        });
        expect(await store.batch("new", {})).toMatchObject({ versionAfter: 0n, exists: false });
        expect(await store.getMetadata("new")).toBeUndefined();
      });

      it("rejects a key both set and deleted, or set twice", async () => {
        await expectCode(
          store.batch("o", { set: [["a", val("1")]], delete: ["a"] }),
          "invalid_argument",
        );
        await expectCode(
          store.batch("o", {
            set: [
              ["a", val("1")],
              ["a", val("2")],
            ],
          }),
          "invalid_argument",
        );
        expect(await store.getMetadata("o")).toBeUndefined();
      });

      it("CAS: matching version writes; mismatch reports both numbers and writes nothing", async () => {
        expect(
          (await store.setEntry("o", "a", val("1"), { expectedVersion: 0n })).versionAfter,
        ).toBe(1n);
        expect(
          (await store.batch("o", { set: [["b", val("2")]] }, { expectedVersion: 1n }))
            .versionAfter,
        ).toBe(2n);
        const err = await expectCode(
          store.batch("o", { set: [["c", val("3")]] }, { expectedVersion: 1n }),
          "version_mismatch",
        );
        expect(err.expected).toBe(1n);
        expect(err.actual).toBe(2n);
        expect((await store.getEntry("o", "c")).entry).toBeUndefined();
        expect((await store.getMetadata("o"))?.version).toBe(2n);
        const missing = await expectCode(
          store.setEntry("ghost", "a", val("1"), { expectedVersion: 5n }),
          "version_mismatch",
        );
        expect(missing.actual).toBe(0n);
        expect(await store.getMetadata("ghost")).toBeUndefined();
        await expectCode(store.deleteObject("o", { expectedVersion: 7n }), "version_mismatch");
        expect((await store.getMetadata("o"))?.deleted).toBe(false);
      });
    });

    describe("replace and merge", () => {
      it("setObject replaces: unlisted entries removed, listed written, event replaced only when given", async () => {
        await store.setObject("o", {
          entries: [
            ["a", val("1")],
            ["b", val("2")],
          ],
          event: eventWithTrigger("f1"),
        });
        const r = await store.setObject("o", {
          entries: new Map([
            ["b", val("B")],
            ["c", val("3")],
          ]),
        });
        expect(r).toMatchObject({ versionBefore: 1n, versionAfter: 2n });
        expect(r.changed).toEqual([
          { key: "a", numeric: false, action: "delete" },
          { key: "b", numeric: false, action: "update" },
          { key: "c", numeric: false, action: "create" },
        ]);
        const obj = await store.getObject("o");
        expect([...(obj?.entriesStr ?? [])].map(([k, v]) => [k, txt(v)])).toEqual([
          ["b", "B"],
          ["c", "3"],
        ]);
        expect(obj?.event?.dataTriggerStr.name?.onUpdate[0]?.fnId).toBe("f1");
        expect(r.eventConfig?.dataTriggerStr.name?.onUpdate[0]?.fnId).toBe("f1");
        const r3 = await store.setObject("o", { entries: [], event: eventWithTrigger("f2") });
        expect(r3.eventConfig?.dataTriggerStr.name?.onUpdate[0]?.fnId).toBe("f2");
        expect((await store.getEventConfig("o"))?.dataTriggerStr.name?.onUpdate[0]?.fnId).toBe(
          "f2",
        );
        expect((await store.getMetadata("o"))?.entryCount).toBe(0n);
        // An empty object still exists.
        expect((await store.getObject("o"))?.entriesStr.size).toBe(0);
      });

      it("mergeObject upserts and keeps other entries; an empty merge of a live object is a no-op", async () => {
        await store.setObject("o", {
          entries: [
            ["a", val("1")],
            ["b", val("2")],
          ],
        });
        const r = await store.mergeObject("o", {
          entries: [
            ["b", val("B")],
            ["7", val("seven")],
          ],
        });
        expect(r.changed).toEqual([
          { key: "7", numeric: true, action: "create" },
          { key: "b", numeric: false, action: "update" },
        ]);
        const obj = await store.getObject("o");
        expect(txt(obj?.entriesStr.get("a"))).toBe("1");
        expect(txt(obj?.entriesStr.get("b"))).toBe("B");
        expect(txt(obj?.entries.get(7))).toBe("seven");
        expect(await store.mergeObject("o", {})).toMatchObject({ wrote: false, versionAfter: 2n });
        expect(await store.mergeObject("fresh", {})).toMatchObject({
          wrote: true,
          versionAfter: 1n,
          exists: true,
        });
      });

      it("merges two CRDT_MAP values as Automerge documents", async () => {
        const base = Automerge.from<Record<string, unknown>>({ x: 1 });
        await store.setEntry("o", "doc", crdt(base));
        const other = Automerge.from<Record<string, unknown>>({ y: 2 });
        await store.mergeObject("o", { entries: [["doc", crdt(other)]] });
        const stored = (await store.getEntry("o", "doc")).entry?.value;
        expect(stored?.type).toBe(ValType.CRDT_MAP);
        const merged = Automerge.load<Record<string, unknown>>(stored?.data ?? new Uint8Array());
        expect(Automerge.toJS(merged)).toEqual({ x: 1, y: 2 });
        // A byte value replaces a CRDT value (no merge across types).
        await store.mergeObject("o", { entries: [["doc", val("plain")]] });
        expect(txt((await store.getEntry("o", "doc")).entry?.value)).toBe("plain");
      });

      it("an undecodable CRDT value is a typed error and writes nothing", async () => {
        await store.setEntry("o", "doc", crdt(Automerge.from<Record<string, unknown>>({ x: 1 })));
        const bad = create(ValDataSchema, { data: Uint8Array.of(1, 2, 3), type: ValType.CRDT_MAP });
        await expectCode(store.mergeObject("o", { entries: [["doc", bad]] }), "invalid_argument");
        expect((await store.getMetadata("o"))?.version).toBe(1n);
        // A stored value that is not a document: corrupt_record naming the key.
        await store.setEntry("o", "junk", bad);
        const good = crdt(Automerge.from<Record<string, unknown>>({ y: 1 }));
        const err = await expectCode(
          store.mergeObject("o", { entries: [["junk", good]] }),
          "corrupt_record",
        );
        expect(err.key).toEqual(encodeEntryKey("o", { str: "junk" }));
      });
    });

    describe("delete, tombstones and revival", () => {
      it("deletes an object: entries and event gone, tombstone at version+1, a delete per key", async () => {
        await store.setObject("o", {
          entries: [
            ["a", val("1")],
            ["5", val("5")],
          ],
          event: eventWithTrigger("f"),
        });
        const r = await store.deleteObject("o");
        expect(r).toMatchObject({
          versionBefore: 1n,
          versionAfter: 2n,
          existedBefore: true,
          exists: false,
        });
        expect(r.changed).toEqual([
          { key: "5", numeric: true, action: "delete" },
          { key: "a", numeric: false, action: "delete" },
        ]);
        expect(r.eventConfig?.dataTriggerStr.name?.onUpdate[0]?.fnId).toBe("f");
        expect(await store.getObject("o")).toBeUndefined();
        expect(await store.getEntry("o", "a")).toEqual({
          objectVersion: undefined,
          entry: undefined,
        });
        expect(await store.getEventConfig("o")).toBeUndefined();
        expect(await store.getMetadata("o")).toMatchObject({
          deleted: true,
          version: 2n,
          entryCount: 0n,
        });
        expect((await store.listEntries("o")).entries).toEqual([]);
        expect(store.stats().liveObjects).toBe(0n);
        const again = await store.deleteObject("o");
        expect(again).toMatchObject({
          versionBefore: 2n,
          versionAfter: 2n,
          wrote: false,
          changed: [],
        });
        expect(await store.deleteObject("never")).toMatchObject({ wrote: false, versionAfter: 0n });
        expect(await store.getMetadata("never")).toBeUndefined();
      });

      it("a deleted object can be re-created; its version continues (regression: sticky tombstone)", async () => {
        await store.setEntry("o", "a", val("1"));
        await store.deleteObject("o");
        await expectCode(
          store.setEntry("o", "b", val("2"), { expectedVersion: 0n }),
          "version_mismatch",
        );
        const r = await store.setEntry("o", "b", val("2"), { expectedVersion: 2n });
        expect(r).toMatchObject({
          versionBefore: 2n,
          versionAfter: 3n,
          existedBefore: false,
          exists: true,
        });
        expect(r.changed).toEqual([{ key: "b", numeric: false, action: "create" }]);
        const obj = await store.getObject("o");
        expect(obj?.version).toBe(3n);
        expect([...(obj?.entriesStr.keys() ?? [])]).toEqual(["b"]);
        expect((await store.getMetadata("o"))?.entryCount).toBe(1n);
        expect(store.stats().liveObjects).toBe(1n);
        expect((await store.listObjects()).objects.map((o) => o.id)).toEqual(["o"]);
      });
    });

    describe("event config", () => {
      it("is written, read, reported with mutations and removable", async () => {
        const r = await store.setEventConfig("o", eventWithTrigger("f"));
        expect(r).toMatchObject({ versionAfter: 1n, exists: true, changed: [] });
        const s = await store.setEntry("o", "name", val("x"));
        expect(s.eventConfig?.dataTriggerStr.name?.onUpdate[0]?.fnId).toBe("f");
        const removed = await store.setEventConfig("o", undefined);
        expect(removed).toMatchObject({ versionAfter: 3n, eventConfig: undefined });
        expect(await store.getEventConfig("o")).toBeUndefined();
        expect(await store.setEventConfig("o", undefined)).toMatchObject({ wrote: false });
      });
    });

    describe("whole-object reads", () => {
      it("reconstructs objects larger than one page and enforces the ceiling with a hint", async () => {
        const set: [string, ValData][] = [];
        for (let i = 0; i < 300; i++) set.push([String(i), val(`n${i}`)]);
        for (let i = 0; i < 300; i++) set.push([`k${i}`, val(`s${i}`)]);
        await store.batch("big", { set });
        const obj = await store.getObject("big", { prefetchLimit: 64 });
        expect(obj?.entries.size).toBe(300);
        expect(obj?.entriesStr.size).toBe(300);
        expect(txt(obj?.entries.get(299))).toBe("n299");
        expect(txt(obj?.entriesStr.get("k0"))).toBe("s0");
        const err = await expectCode(store.getObject("big", { maxEntries: 599 }), "too_large");
        expect(err.message).toContain("ListValues");
        await store.close();
        store = await open({ maxGetEntries: 10 });
        await expectCode(store.getObject("big"), "too_large");
        expect((await store.listEntries("big", { limit: 10 })).entries.length).toBe(10);
      });
    });

    describe("listing entries", () => {
      it("lists in storage order: numeric ascending, then strings by (length, bytes)", async () => {
        await store.batch("o", {
          set: ["b", "aa", "a", "10", "9", "zz", "ab", "0"].map(
            (k) => [k, val(k)] as [string, ValData],
          ),
        });
        const keys = (await store.listEntries("o")).entries.map((e) => e.key);
        expect(keys).toEqual(["0", "9", "10", "a", "b", "aa", "ab", "zz"]);
        expect((await listAll(store, "o", undefined, 3)).map((e) => e.key)).toEqual(keys);
      });

      it("returns every key with a prefix, of any length (regression: prefix listing misses longer keys)", async () => {
        const keys = [
          "a",
          "ab",
          "abc",
          "abd",
          "abcdefghijklmnop",
          "ab.long.key.with.more.bytes",
          "b",
          "ba",
          "aab",
          "4",
          "42",
          "400",
          "5",
        ];
        await store.batch("o", { set: keys.map((k) => [k, val(k)] as [string, ValData]) });
        const ab = (await store.listEntries("o", { prefix: "ab" })).entries.map((e) => e.key);
        expect(ab).toEqual(["ab", "abc", "abd", "abcdefghijklmnop", "ab.long.key.with.more.bytes"]);
        expect((await listAll(store, "o", "ab", 2)).map((e) => e.key)).toEqual(ab);
        expect((await store.listEntries("o", { prefix: "4" })).entries.map((e) => e.key)).toEqual([
          "4",
          "42",
          "400",
        ]);
        expect((await store.listEntries("o", { prefix: "zz" })).entries).toEqual([]);
      });

      it("applies the default limit (100) and the cap (1024)", async () => {
        const set: [string, ValData][] = [];
        for (let i = 0; i < 1100; i++) set.push([`k${String(i).padStart(4, "0")}`, val("v")]);
        await store.batch("o", { set });
        const def = await store.listEntries("o");
        expect(def.entries.length).toBe(100);
        expect(def.nextCursor).toBeDefined();
        const capped = await store.listEntries("o", { limit: 5000 });
        expect(capped.entries.length).toBe(1024);
        const rest = await store.listEntries("o", {
          limit: 5000,
          ...(capped.nextCursor ? { cursor: capped.nextCursor } : {}),
        });
        expect(rest.entries.length).toBe(76);
        expect(rest.nextCursor).toBeUndefined();
        const exact = await store.listEntries("o", {
          limit: 1100 - 1024,
          ...(capped.nextCursor ? { cursor: capped.nextCursor } : {}),
        });
        expect(exact.nextCursor).toBeUndefined();
      });

      it("continues after the cursor's key even when the object changed in between", async () => {
        await store.batch("o", {
          set: ["b", "d", "f", "h"].map((k) => [k, val(k)] as [string, ValData]),
        });
        const p1 = await store.listEntries("o", { limit: 2 });
        expect(p1.entries.map((e) => e.key)).toEqual(["b", "d"]);
        await store.batch("o", {
          set: [
            ["a", val("a")],
            ["e", val("e")],
          ],
          delete: ["f"],
        });
        const p2 = await store.listEntries("o", {
          limit: 2,
          ...(p1.nextCursor ? { cursor: p1.nextCursor } : {}),
        });
        expect(p2.entries.map((e) => e.key)).toEqual(["e", "h"]);
        expect(p2.nextCursor).toBeUndefined();
      });

      it("rejects cursors of other objects and damaged cursors", async () => {
        await store.batch("o", {
          set: ["a", "b", "c"].map((k) => [k, val(k)] as [string, ValData]),
        });
        await store.batch("p", {
          set: ["a", "b", "c"].map((k) => [k, val(k)] as [string, ValData]),
        });
        const page = await store.listEntries("o", { limit: 1 });
        const cursor = page.nextCursor as Uint8Array;
        await expectCode(store.listEntries("p", { cursor }), "invalid_cursor");
        const damaged = cursor.slice();
        damaged[damaged.length - 1] = (damaged[damaged.length - 1] as number) ^ 0xff;
        await expectCode(store.listEntries("o", { cursor: damaged }), "invalid_cursor");
        await expectCode(store.listEntries("o", { cursor: new Uint8Array(0) }), "invalid_cursor");
        const objCursor = (await store.listObjects({ limit: 1 })).nextCursor as Uint8Array;
        await expectCode(store.listEntries("o", { cursor: objCursor }), "invalid_cursor");
      });
    });

    describe("listing objects and stats", () => {
      it("lists live objects by id bytes with prefixes, cursors and entry counts", async () => {
        for (const id of ["b", "a", "ab", "abc", "a.b", "c", "10", "9"])
          await store.setEntry(id, "k", val(id));
        await store.setEntry("ab", "k2", val("x"));
        await store.deleteObject("c");
        const all = await store.listObjects();
        expect(all.objects.map((o) => o.id)).toEqual(["10", "9", "a", "a.b", "ab", "abc", "b"]);
        expect(all.objects.find((o) => o.id === "ab")).toMatchObject({
          entryCount: 2n,
          version: 2n,
        });
        expect(all.nextCursor).toBeUndefined();
        expect((await store.listObjects({ prefix: "ab" })).objects.map((o) => o.id)).toEqual([
          "ab",
          "abc",
        ]);
        const ids: string[] = [];
        let cursor: Uint8Array | undefined;
        do {
          const page = await store.listObjects({
            prefix: "a",
            limit: 2,
            ...(cursor ? { cursor } : {}),
          });
          ids.push(...page.objects.map((o) => o.id));
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        expect(ids).toEqual(["a", "a.b", "ab", "abc"]);
        const c1 = (await store.listObjects({ prefix: "a", limit: 1 })).nextCursor as Uint8Array;
        await expectCode(store.listObjects({ prefix: "b", cursor: c1 }), "invalid_cursor");
        expect(
          (await store.listObjects({ numericIdsOnly: true })).objects.map((o) => o.id),
        ).toEqual(["10", "9"]);
        expect(store.stats().liveObjects).toBe(7n);
      });
    });

    describe("legacy blobs", () => {
      it("writes numeric ids as blobs in legacy mode, reads them back with fallback, converts on first write", async () => {
        await store.close();
        const fallbacks: string[] = [];
        const legacy = await open({ granular: false });
        const w = await legacy.batch("123", {
          set: [
            ["1", val("one")],
            ["name", val("n")],
          ],
        });
        expect(w.changed.map((c) => c.action)).toEqual(["create", "create"]);
        await legacy.setEntry("456", "2", val("two"));
        await legacy.setEntry("str-id", "x", val("granular"));
        expect(await legacy.getLegacyBlob(123n)).toBeDefined();
        expect(await legacy.getLegacyBlob(456n)).toBeDefined();
        expect((await legacy.getMetadata("str-id"))?.legacy).toBe(false);
        expect(legacy.stats().liveObjects).toBe(3n);
        await legacy.close();

        store = await open({ onBlobFallbackRead: (id) => fallbacks.push(id) });
        const got = await store.getEntry("123", "1");
        expect(got.objectVersion).toBe(0n);
        expect(txt(got.entry?.value)).toBe("one");
        expect((await store.getObject("123"))?.legacy).toBe(true);
        expect((await store.listEntries("123")).entries.map((e) => e.key)).toEqual(["1", "name"]);
        expect(await store.getMetadata("123")).toMatchObject({
          legacy: true,
          version: 0n,
          entryCount: 2n,
        });
        expect(store.stats().blobFallbackReads).toBe(4);
        expect(fallbacks).toEqual(["123", "123", "123", "123"]);

        const r = await store.setEntry("123", "2", val("two"));
        expect(r).toMatchObject({ versionBefore: 0n, versionAfter: 1n, existedBefore: true });
        expect(r.changed).toEqual([{ key: "2", numeric: true, action: "create" }]);
        expect(await store.getLegacyBlob(123n)).toBeUndefined();
        const obj = await store.getObject("123");
        expect(obj?.legacy).toBe(false);
        expect([...(obj?.entries.keys() ?? [])]).toEqual([1, 2]);
        expect((await store.getEntry("123", "1")).entry?.version).toBe(0n);
        expect((await store.getEntry("123", "2")).entry?.version).toBe(1n);
        expect((await store.getMetadata("123"))?.entryCount).toBe(3n);
        expect(store.stats().liveObjects).toBe(3n);

        const ids: bigint[] = [];
        for await (const id of store.legacyBlobIds()) ids.push(id);
        expect(ids).toEqual([456n]);
        expect(await store.convertLegacyObject(456n)).toEqual({
          converted: true,
          entries: 1,
          blobRemoved: true,
        });
        expect(await store.convertLegacyObject(456n)).toEqual({
          converted: false,
          entries: 0,
          blobRemoved: false,
        });
        expect((await store.getMetadata("456"))?.version).toBe(0n);
        expect(txt((await store.getEntry("456", "2")).entry?.value)).toBe("two");
        const none: bigint[] = [];
        for await (const id of store.legacyBlobIds()) none.push(id);
        expect(none).toEqual([]);
        expect(store.stats().liveObjects).toBe(3n);
        expect((await store.listObjects()).objects.map((o) => o.id)).toEqual([
          "123",
          "456",
          "str-id",
        ]);
      });

      it("replaces and deletes legacy objects with the blob removed in the same write", async () => {
        await store.close();
        const legacy = await open({ granular: false });
        await legacy.setObject("7", {
          entries: [
            ["1", val("a")],
            ["2", val("b")],
          ],
          event: eventWithTrigger("f"),
        });
        await legacy.setObject("8", { entries: [["1", val("a")]] });
        await legacy.close();
        store = await open();
        const r = await store.setObject("7", {
          entries: [
            ["2", val("B")],
            ["3", val("c")],
          ],
        });
        expect(r.changed).toEqual([
          { key: "1", numeric: true, action: "delete" },
          { key: "2", numeric: true, action: "update" },
          { key: "3", numeric: true, action: "create" },
        ]);
        expect((await store.getEventConfig("7"))?.dataTriggerStr.name?.onUpdate[0]?.fnId).toBe("f");
        expect((await store.getMetadata("7"))?.entryCount).toBe(2n);
        const d = await store.deleteObject("8");
        expect(d).toMatchObject({ versionAfter: 1n, exists: false });
        expect(d.changed).toEqual([{ key: "1", numeric: true, action: "delete" }]);
        expect(await store.getLegacyBlob(8n)).toBeUndefined();
        expect(await store.getObject("8")).toBeUndefined();
        expect(store.stats().liveObjects).toBe(1n);
      });

      it("dual-write keeps each numeric object's blob equal to its entries, with versions, CAS and events", async () => {
        await store.close();
        const legacy = await open({ granular: false });
        await legacy.setObject("5", { entries: [["1", val("old")]] });
        await legacy.close();
        store = await open({ dualWrite: true });
        const blobOf = async (id: bigint) => {
          const b = await store.getLegacyBlob(id);
          if (b === undefined) return undefined;
          const out: Record<string, string | undefined> = {};
          for (const [k, x] of Object.entries(b.entries)) out[k] = txt(x);
          for (const [k, x] of Object.entries(b.entriesStr)) out[k] = txt(x);
          return out;
        };
        // A new numeric object: entries, metadata and the blob, in one write.
        const a = await store.batch("9", {
          set: [
            ["1", val("a")],
            ["name", val("n")],
          ],
        });
        expect(a).toMatchObject({ versionBefore: 0n, versionAfter: 1n });
        expect(await blobOf(9n)).toEqual({ "1": "a", name: "n" });
        await expectCode(
          store.setEntry("9", "1", val("x"), { expectedVersion: 0n }),
          "version_mismatch",
        );
        const b = await store.setEntry("9", "2", val("b"), { expectedVersion: 1n });
        expect(b.changed).toEqual([{ key: "2", numeric: true, action: "create" }]);
        expect(await blobOf(9n)).toEqual({ "1": "a", "2": "b", name: "n" });
        await store.setEventConfig("9", eventWithTrigger("f"));
        expect((await store.getLegacyBlob(9n))?.event?.dataTriggerStr.name?.onUpdate[0]?.fnId).toBe(
          "f",
        );
        // A legacy object converts on its first write and keeps its (updated) blob.
        await store.setEntry("5", "2", val("new"));
        expect(await blobOf(5n)).toEqual({ "1": "old", "2": "new" });
        expect((await store.getMetadata("5"))?.legacy).toBe(false);
        // String ids have no blob; deleting removes the blob with the object.
        await store.setEntry("s", "1", val("x"));
        await store.deleteObject("9");
        expect(await store.getLegacyBlob(9n)).toBeUndefined();
        expect(store.stats().liveObjects).toBe(2n);
        // Conversion keeps a dual-write blob; without dual-write it drops it as stale.
        expect(await store.convertLegacyObject(5n)).toEqual({
          converted: false,
          entries: 0,
          blobRemoved: false,
        });
        expect(await store.getLegacyBlob(5n)).toBeDefined();
        await store.close();
        store = await open();
        expect(await store.convertLegacyObject(5n)).toEqual({
          converted: false,
          entries: 0,
          blobRemoved: true,
        });
        expect(await store.getLegacyBlob(5n)).toBeUndefined();
        expect(txt((await store.getEntry("5", "2")).entry?.value)).toBe("new");
        expect(store.stats().liveObjects).toBe(2n);
      });
    });

    describe("serialization per object", () => {
      it("concurrent mutations of one object get contiguous versions and lose no update", async () => {
        const n = 60;
        const results = await Promise.all(
          Array.from({ length: n }, (_, i) =>
            store.setEntry("hot", `k${i}`, val(String(i)), { sync: false }),
          ),
        );
        expect(results.map((r) => r.versionAfter).sort((a, b) => Number(a - b))).toEqual(
          Array.from({ length: n }, (_, i) => BigInt(i + 1)),
        );
        for (const r of results) expect(r.versionAfter).toBe(r.versionBefore + 1n);
        expect(await store.getMetadata("hot")).toMatchObject({
          version: BigInt(n),
          entryCount: BigInt(n),
        });
        // Read-modify-write of one key never loses an increment.
        await Promise.all(
          Array.from({ length: 30 }, () =>
            store.mergeObject("counter", { entries: [["c", val("x")]] }),
          ),
        );
        expect((await store.getMetadata("counter"))?.version).toBe(30n);
      });

      it("concurrent CAS with the same expected version: exactly one wins", async () => {
        await store.setEntry("o", "a", val("0"));
        const attempts = await Promise.allSettled(
          Array.from({ length: 12 }, (_, i) =>
            store.setEntry("o", "a", val(String(i)), { expectedVersion: 1n }),
          ),
        );
        const ok = attempts.filter((a) => a.status === "fulfilled");
        const failed = attempts.filter((a) => a.status === "rejected");
        expect(ok.length).toBe(1);
        for (const f of failed)
          expect(isStoreError((f as PromiseRejectedResult).reason, "version_mismatch")).toBe(true);
        expect((await store.getMetadata("o"))?.version).toBe(2n);
      });

      it("different objects proceed independently and the live counter stays exact", async () => {
        await Promise.all(
          Array.from({ length: 40 }, (_, i) => store.setEntry(`obj-${i}`, "a", val("x"))),
        );
        await Promise.all(Array.from({ length: 15 }, (_, i) => store.deleteObject(`obj-${i}`)));
        expect(store.stats().liveObjects).toBe(25n);
        await store.close();
        store = await open();
        expect(store.stats().liveObjects).toBe(25n);
      });
    });

    describe("replication log", () => {
      const T = 1_700_000_000_000;
      it("applies committed operations in order as one write with the applied index; re-delivery is skipped", async () => {
        expect(store.appliedIndex()).toBe(0);
        const results = await store.applyCommitted([
          { index: 1, op: undefined },
          {
            index: 2,
            op: { kind: "set_entry", objectId: "o", timestampMs: T, key: "a", value: val("1") },
          },
          {
            index: 3,
            op: {
              kind: "set_entry",
              objectId: "o",
              timestampMs: T,
              key: "b",
              value: val("2"),
              expectedVersion: 1n,
            },
          },
          {
            index: 4,
            op: {
              kind: "set_entry",
              objectId: "o",
              timestampMs: T,
              key: "c",
              value: val("3"),
              expectedVersion: 1n,
            },
          },
        ]);
        expect(results[0]).toBeUndefined();
        expect((results[1] as MutationResult).versionAfter).toBe(1n);
        expect((results[2] as MutationResult).versionAfter).toBe(2n);
        // The same refusal on every replica: a result, not an error of the batch.
        expect(isStoreError(results[3], "version_mismatch")).toBe(true);
        expect(store.appliedIndex()).toBe(4);
        expect((await store.getMetadata("o"))?.version).toBe(2n);
        // A restart delivers entries again from the snapshot: those ≤ 4 are skipped.
        const again = await store.applyCommitted([
          {
            index: 3,
            op: { kind: "set_entry", objectId: "o", timestampMs: T, key: "x", value: val("x") },
          },
          { index: 5, op: { kind: "delete_entry", objectId: "o", timestampMs: T, key: "a" } },
        ]);
        expect(again[0]).toBeUndefined();
        expect((again[1] as MutationResult).versionAfter).toBe(3n);
        expect((await store.getEntry("o", "x")).entry).toBeUndefined();
        await expectCode(
          store.applyCommitted([
            { index: 7, op: undefined },
            { index: 6, op: undefined },
          ]),
          "invalid_argument",
        );
        await store.close();
        store = await open();
        expect(store.appliedIndex()).toBe(5);
      });

      it("syncApplied makes unsynced applies durable with one synced write of the applied index", async () => {
        // The store's shard, with every write and its sync option recorded.
        const writes: { sync: boolean | undefined; keyspaces: string[] }[] = [];
        const kv = await engine.openShard("cls/2");
        const watched: KvEngine = {
          kind: engine.kind,
          listShards: () => engine.listShards(),
          close: () => engine.close(),
          openShard: async () => ({
            name: kv.name,
            get: (ks, k) => kv.get(ks, k),
            getMany: (ks, k) => kv.getMany(ks, k),
            iterator: (ks, o) => kv.iterator(ks, o),
            clear: (ks, range) => kv.clear(ks, range),
            write: (ops, o) => {
              writes.push({ sync: o?.sync, keyspaces: ops.map((op) => op.keyspace) });
              return kv.write(ops, o);
            },
          }),
        };
        const s = await createEntryStore({ engine: watched, shard: "cls/2" });
        try {
          await s.applyCommitted(
            [
              {
                index: 4,
                op: { kind: "set_entry", objectId: "o", timestampMs: 1, key: "a", value: val("1") },
              },
            ],
            { sync: false },
          );
          expect(writes.at(-1)?.sync).toBe(false);
          const before = writes.length;
          await s.syncApplied();
          expect(writes.slice(before)).toEqual([{ sync: true, keyspaces: ["system"] }]);
          expect(s.appliedIndex()).toBe(4);
        } finally {
          await s.close();
        }
        const again = await createEntryStore({ engine, shard: "cls/2" });
        expect(again.appliedIndex()).toBe(4);
        expect(txt((await again.getEntry("o", "a")).entry?.value)).toBe("1");
        await again.close();
      });

      it("an opened export reads the shard as of its opening while later writes go on", async () => {
        await store.setEntry("o", "a", val("1"));
        await store.applyCommitted([{ index: 3, op: undefined }]);
        const view = await store.openStateExport();
        expect(view.appliedIndex).toBe(3);
        await store.setEntry("o", "a", val("2"));
        await store.setEntry("later", "k", val("x"));
        await store.deleteObject("o");
        const other = await createEntryStore({ engine, shard: "cls/1" });
        try {
          const pages: Uint8Array[] = [];
          for await (const page of view.read()) pages.push(page);
          await other.importState(Buffer.concat(pages));
          expect(txt((await other.getEntry("o", "a")).entry?.value)).toBe("1");
          expect(await other.getMetadata("later")).toBeUndefined();
          expect(other.appliedIndex()).toBe(3);
          expect(other.stats().liveObjects).toBe(1n);
        } finally {
          await other.close();
        }
      });

      it("exports a shard's state and installs it elsewhere; malformed state changes nothing", async () => {
        await store.setObject("o", {
          entries: [
            ["a", val("1")],
            ["7", val("2")],
          ],
          event: create(ObjectEventSchema, {}),
        });
        await store.setEntry("p", "k", val("v"));
        await store.deleteObject("p");
        await store.applyCommitted([{ index: 9, op: undefined }]);
        const state = await store.exportState();
        const other = await createEntryStore({ engine, shard: "cls/1" });
        try {
          await other.setEntry("stale", "k", val("old"));
          await expectCode(
            other.importState(state.subarray(0, state.length - 3)),
            "invalid_argument",
          );
          expect((await other.getMetadata("stale"))?.version).toBe(1n);
          await other.importState(state);
          expect(await other.getMetadata("stale")).toBeUndefined();
          expect(await other.getObject("o")).toEqual(await store.getObject("o"));
          expect(await other.getMetadata("p")).toEqual(await store.getMetadata("p"));
          expect(other.stats().liveObjects).toBe(1n);
          expect(other.appliedIndex()).toBe(9);
          // The write path continues from the installed state.
          expect((await other.setEntry("o", "b", val("3"))).versionAfter).toBe(2n);
          // Empty bytes are the empty shard (a Raft group's bootstrap snapshot).
          await other.importState(new Uint8Array(0), { appliedIndex: 1 });
          expect(await other.getMetadata("o")).toBeUndefined();
          expect(other.appliedIndex()).toBe(1);
          expect(other.stats().liveObjects).toBe(0n);
        } finally {
          await other.close();
        }
      });
      it("installs a state larger than a window in several writes; an install cut short is repaired by importing it again", async () => {
        const big = (i: number) =>
          create(ValDataSchema, { data: new Uint8Array(400 * 1024).fill(i), type: ValType.BYTE });
        for (let i = 0; i < 8; i++) await store.setEntry(`o${i}`, "v", big(i));
        await store.applyCommitted([{ index: 9, op: undefined }]);
        const state = await store.exportState();
        let writes = 0;
        let failAt = 0;
        /** `target` with `replace`d methods, the rest bound to it. */
        const wrap = <T extends object>(target: T, replace: Partial<T>): T =>
          new Proxy(target, {
            get(t, prop) {
              const v = Reflect.get(prop in replace ? replace : t, prop);
              return typeof v === "function" ? v.bind(prop in replace ? replace : t) : v;
            },
          });
        const cutting = wrap(engine, {
          async openShard(name: string) {
            const shard = await engine.openShard(name);
            return wrap(shard, {
              write(ops: readonly KvWriteOp[], o?: KvWriteOptions) {
                if (++writes === failAt) return Promise.reject(new Error("EIO (test)"));
                return shard.write(ops, o);
              },
            });
          },
        });
        const other = await createEntryStore({ engine: cutting, shard: "cls/1" });
        try {
          await other.setEntry("stale", "k", val("old"));
          writes = 0;
          failAt = 3;
          await expect(other.importState(state)).rejects.toThrow();
          writes = 0;
          failAt = 0;
          await other.importState(state);
          // Deletes, then a window of about 1 MiB of records per write, then the last.
          expect(writes).toBeGreaterThanOrEqual(5);
          expect(await other.getMetadata("stale")).toBeUndefined();
          for (let i = 0; i < 8; i++) {
            const got = (await other.getEntry(`o${i}`, "v")).entry?.value.data;
            expect(got !== undefined && Buffer.compare(got, big(i).data) === 0).toBe(true);
          }
          expect(other.stats().liveObjects).toBe(8n);
          expect(other.appliedIndex()).toBe(9);
          expect((await other.setEntry("o0", "w", val("1"))).versionAfter).toBe(2n);
        } finally {
          await other.close();
        }
      });
    });

    describe("lifecycle and corruption", () => {
      it("refuses a second store on one shard and every call after close", async () => {
        await expectCode(open(), "locked");
        await store.close();
        await expectCode(store.setEntry("o", "a", val("1")), "closed");
        await expectCode(store.getEntry("o", "a"), "closed");
        store = await open();
        expect(await store.getMetadata("o")).toBeUndefined();
      });

      it("reports a corrupt record with its key instead of crashing", async () => {
        await store.setEntry("o", "a", val("1"));
        const kv = await engine.openShard("cls/0");
        const metaKey = encodeMetadataKey("o");
        await kv.write([
          {
            type: "put",
            keyspace: "objects",
            key: metaKey,
            value: Uint8Array.of(0xff, 0xff, 0xff),
          },
        ]);
        const err = await expectCode(store.getMetadata("o"), "corrupt_record");
        expect(err.key).toEqual(metaKey);
        // The write path keeps the planned state of objects it wrote (it never re-reads "o"
        // here), so a mutation meets corruption only in records it reads: those of an object
        // it has not cached.
        await kv.write([
          {
            type: "put",
            keyspace: "objects",
            key: encodeMetadataKey("q"),
            value: Uint8Array.of(0xff, 0xff, 0xff),
          },
        ]);
        await expectCode(store.setEntry("q", "b", val("2")), "corrupt_record");
        await expectCode(store.getObject("o"), "corrupt_record");
        await kv.write([
          {
            type: "put",
            keyspace: "objects",
            key: Uint8Array.of(0x70, 0x00, 0x77),
            value: new Uint8Array(0),
          },
        ]);
        await expectCode(store.listObjects({ prefix: "p" }), "corrupt_record");
      });
    });
  });
}
