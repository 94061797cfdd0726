import { isCanonicalU32 } from "@oprc/oprc-id";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { objectEvent } from "../test/fixtures.js";
import { isEventV2Error } from "./event-v2-error.js";
import {
  changedKey,
  classifyChange,
  mutationContextFromResult,
  objectDeleteChanges,
} from "./mutation-context.js";

const target = { objectId: "user-1", clsId: "users", partitionId: 3 };

describe("classifyChange", () => {
  it("classifies create / update / delete and skips idempotent deletes", () => {
    expect(classifyChange(false, false)).toBe("create");
    expect(classifyChange(true, false)).toBe("update");
    expect(classifyChange(true, true)).toBe("delete");
    expect(classifyChange(false, true)).toBeUndefined();
  });
});

describe("changedKey / objectDeleteChanges", () => {
  it("marks canonical u32 keys numeric, everything else string", () => {
    expect(changedKey("42", "create")).toEqual({ key: "42", numeric: true, action: "create" });
    expect(changedKey("042", "create").numeric).toBe(false);
    expect(changedKey("email", "update").numeric).toBe(false);
    expect(changedKey("4294967296", "update").numeric).toBe(false);
  });

  it("numeric agrees with isCanonicalU32 on every key (property)", () => {
    const digits = fc.string({ unit: fc.constantFrom(..."0123456789"), maxLength: 12 });
    const near = fc.constantFrom("", "0", "00", "1", "999999999", "1000000000", "4294967295");
    const key = fc.oneof(digits, near, fc.string({ maxLength: 12 }), fc.integer().map(String));
    fc.assert(
      fc.property(key, (k) => {
        expect(changedKey(k, "update").numeric).toBe(isCanonicalU32(k));
        expect(objectDeleteChanges([k])[0]?.numeric).toBe(isCanonicalU32(k));
      }),
      { numRuns: 2000 },
    );
  });

  it("reports a delete for every key the object had", () => {
    expect(objectDeleteChanges(["1", "name", "007"])).toEqual([
      { key: "1", numeric: true, action: "delete" },
      { key: "name", numeric: false, action: "delete" },
      { key: "007", numeric: false, action: "delete" },
    ]);
    expect(objectDeleteChanges([])).toEqual([]);
  });
});

describe("mutationContextFromResult", () => {
  it("builds the spec §5 context from an entry-store result", () => {
    const changed = [
      { key: "42", numeric: true, action: "create" as const },
      { key: "email", numeric: false, action: "update" as const },
    ];
    const ctx = mutationContextFromResult({ versionBefore: 4n, versionAfter: 5n, changed }, target);
    expect(ctx).toEqual({
      objectId: "user-1",
      clsId: "users",
      partitionId: 3,
      versionBefore: 4n,
      versionAfter: 5n,
      changed,
      eventConfig: undefined,
    });
  });

  it("takes the event config from the result unless the target gives one", () => {
    const fromStore = objectEvent({ dataStr: { a: {} } });
    const fromTarget = objectEvent({});
    const result = {
      versionBefore: 0n,
      versionAfter: 1n,
      changed: [changedKey("a", "create")],
      eventConfig: fromStore,
    };
    expect(mutationContextFromResult(result, target)?.eventConfig).toBe(fromStore);
    expect(
      mutationContextFromResult(result, { ...target, eventConfig: fromTarget })?.eventConfig,
    ).toBe(fromTarget);
  });

  it("returns undefined when nothing changed (idempotent delete, empty batch)", () => {
    expect(
      mutationContextFromResult({ versionBefore: 2n, versionAfter: 2n, changed: [] }, target),
    ).toBeUndefined();
  });

  it("rejects results whose version does not advance or whose numeric flag is wrong", () => {
    const bad1 = () =>
      mutationContextFromResult(
        { versionBefore: 2n, versionAfter: 2n, changed: [changedKey("a", "create")] },
        target,
      );
    expect(bad1).toThrow(/^\[invalid_argument\]/);
    const bad2 = () =>
      mutationContextFromResult(
        {
          versionBefore: 0n,
          versionAfter: 1n,
          changed: [{ key: "042", numeric: true, action: "create" }],
        },
        target,
      );
    try {
      bad2();
      expect.unreachable();
    } catch (err) {
      expect(isEventV2Error(err) && err.code).toBe("invalid_argument");
    }
  });

  it("classification over a key history matches a model (property)", () => {
    // Apply random set/delete operations to a model map and check each emitted action.
    const op = fc.record({ key: fc.constantFrom("1", "2", "a", "042"), del: fc.boolean() });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const present = new Set<string>();
        for (const { key, del } of ops) {
          const action = classifyChange(present.has(key), del);
          if (del) {
            expect(action).toBe(present.has(key) ? "delete" : undefined);
            present.delete(key);
          } else {
            expect(action).toBe(present.has(key) ? "update" : "create");
            present.add(key);
          }
        }
      }),
    );
  });
});
