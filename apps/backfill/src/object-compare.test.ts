import { create } from "@bufbuild/protobuf";
import {
  ObjDataSchema,
  ObjectEventSchema,
  type ValData,
  ValDataSchema,
  ValType,
} from "@oprc/grpc-api/messages";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  blobEntryCount,
  blobToComparable,
  compareObjects,
  objectToComparable,
} from "./object-compare.js";

const val = fc
  .record({ data: fc.uint8Array({ maxLength: 16 }), crdt: fc.boolean() })
  .map(({ data, crdt }) =>
    create(ValDataSchema, { data, type: crdt ? ValType.CRDT_MAP : ValType.BYTE }),
  );
const numericKey = fc.integer({ min: 0, max: 0xffff_ffff });
const stringKey = fc.oneof(
  fc.stringMatching(/^[a-z][a-z0-9._:-]{0,8}$/),
  numericKey.map(String),
  fc.constant("007"),
);

const blob = fc
  .record({
    entries: fc.dictionary(numericKey.map(String), val, { maxKeys: 6 }),
    entriesStr: fc.dictionary(stringKey, val, { maxKeys: 6 }),
    event: fc.boolean(),
  })
  .map(({ entries, entriesStr, event }) =>
    create(ObjDataSchema, {
      entries: Object.fromEntries(Object.entries(entries).map(([k, v]) => [Number(k), v])),
      entriesStr,
      ...(event
        ? { event: create(ObjectEventSchema, { funcTrigger: { f: { onComplete: [] } } }) }
        : {}),
    }),
  );

describe("object comparison", () => {
  it("a blob equals its own faithful conversion, and the count matches (property)", () => {
    fc.assert(
      fc.property(blob, (b) => {
        const original = blobToComparable(b);
        // A faithful conversion: canonical u32 keys become numeric entries.
        const entries = new Map<number, ValData>();
        const entriesStr = new Map<string, ValData>();
        for (const [k, v] of original.entries) {
          if (/^(0|[1-9][0-9]*)$/.test(k) && Number(k) <= 0xffff_ffff) entries.set(Number(k), v);
          else entriesStr.set(k, v);
        }
        const converted = objectToComparable({ entries, entriesStr, event: b.event });
        expect(compareObjects(original, converted)).toBeUndefined();
        expect(blobEntryCount(b)).toBe(original.entries.size);
      }),
    );
  });

  it("any changed, missing or extra entry is reported (property)", () => {
    fc.assert(
      fc.property(blob, fc.nat(), fc.integer({ min: 0, max: 2 }), (b, pick, kind) => {
        const original = blobToComparable(b);
        const mutated = new Map(original.entries);
        const keys = [...mutated.keys()];
        if (kind === 2 || keys.length === 0) {
          mutated.set("extra-key", create(ValDataSchema, { data: Uint8Array.of(1) }));
        } else {
          const key = keys[pick % keys.length] as string;
          if (kind === 0) mutated.delete(key);
          else {
            const v = mutated.get(key) as ValData;
            mutated.set(
              key,
              create(ValDataSchema, { data: Uint8Array.of(...v.data, 0xff), type: v.type }),
            );
          }
        }
        expect(compareObjects(original, { entries: mutated, event: b.event })).toBeDefined();
      }),
    );
  });

  it("a numeric key wins over the same key given as a string, and the value type counts", () => {
    const a = create(ValDataSchema, { data: Uint8Array.of(1) });
    const b = create(ValDataSchema, { data: Uint8Array.of(2) });
    const o = create(ObjDataSchema, { entries: { 42: a }, entriesStr: { "42": b, "042": b } });
    expect(blobEntryCount(o)).toBe(2);
    expect(blobToComparable(o).entries.get("42")).toBe(a);
    const typed = create(ValDataSchema, { data: Uint8Array.of(1), type: ValType.CRDT_MAP });
    expect(
      compareObjects(blobToComparable(o), {
        entries: new Map([
          ["42", typed],
          ["042", b],
        ]),
        event: undefined,
      }),
    ).toBe('entry "42" differs');
    expect(
      compareObjects(blobToComparable(o), {
        entries: new Map([
          ["42", a],
          ["042", b],
        ]),
        event: create(ObjectEventSchema),
      }),
    ).toBe("event config differs");
  });
});
