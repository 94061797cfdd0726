import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isDataPlaneError } from "./data-plane-error.js";
import type { ObjData } from "./gen/oprc-data_pb.js";
import { resolveGrpcApiOptions } from "./grpc-api-options.js";
import { createRequestResolver } from "./request-resolver.js";

const r = createRequestResolver(resolveGrpcApiOptions());
const off = createRequestResolver(resolveGrpcApiOptions({ stringIds: false, stringKeys: false }));

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (e) {
    return (e as { code?: string }).code;
  }
};

describe("request resolver", () => {
  it('numeric id N and string id "N" resolve to the same storage id', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: (1n << 64n) - 1n }), (n) => {
        expect(r.object("c", 0, n, undefined).id.id).toBe(r.object("c", 0, 0n, n.toString()).id.id);
      }),
    );
  });

  it('numeric key k and string key "k" resolve to the same entry', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffff_ffff }), (k) => {
        expect(r.key(k, undefined)).toEqual(r.key(0, String(k)));
        expect(r.keyString(String(k))).toEqual(r.key(k, undefined));
      }),
    );
  });

  it("rejects bad partitions and classes with invalid_argument", () => {
    expect(codeOf(() => r.partition("c", -1))).toBe("invalid_argument");
    expect(codeOf(() => r.partition("", 0))).toBe("invalid_argument");
    expect(r.partition("c", 4294967295)).toEqual({ cls: "c", partition: 4294967295 });
  });

  it("feature flags: string forms are unimplemented, canonical numerics are not", () => {
    expect(codeOf(() => off.object("c", 0, 0n, "abc"))).toBe("unimplemented");
    expect(off.object("c", 0, 0n, "42").id.id).toBe("42");
    expect(codeOf(() => off.key(0, "abc"))).toBe("unimplemented");
    expect(off.key(0, "42")).toEqual({ kind: "numeric", key: "42", numeric: 42 });
    expect(codeOf(() => off.keyPrefix("a"))).toBe("unimplemented");
    expect(off.keyPrefix("")).toBeUndefined();
  });

  it("limits: 0 → default, capped at the maximum", () => {
    expect(r.limit(0)).toBe(100);
    expect(r.limit(5)).toBe(5);
    expect(r.limit(1_000_000)).toBe(1024);
    const custom = createRequestResolver(
      resolveGrpcApiOptions({ listDefaultLimit: 7, listMaxLimit: 9 }),
    );
    expect([custom.limit(0), custom.limit(10)]).toEqual([7, 9]);
    expect(() => resolveGrpcApiOptions({ listDefaultLimit: 10, listMaxLimit: 9 })).toThrow(
      RangeError,
    );
  });

  it("entries(): both maps, normalized, duplicates rejected", () => {
    const obj = {
      entries: { 1: { data: new Uint8Array(), type: 0 } },
      entriesStr: { Name: { data: new Uint8Array(), type: 1 } },
    } as unknown as ObjData;
    expect(r.entries(obj).map((e) => e.key)).toEqual([
      { kind: "numeric", key: "1", numeric: 1 },
      { kind: "string", key: "name" },
    ]);
    const dup = {
      entries: { 1: { data: new Uint8Array(), type: 0 } },
      entriesStr: { "1": { data: new Uint8Array(), type: 0 } },
    } as unknown as ObjData;
    let err: unknown;
    try {
      r.entries(dup);
    } catch (e) {
      err = e;
    }
    expect(isDataPlaneError(err) && err.code).toBe("invalid_argument");
  });
});
