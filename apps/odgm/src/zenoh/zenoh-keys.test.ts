import { KeyExpr } from "@eclipse-zenoh/zenoh-ts";
import { describe, expect, it } from "vitest";
import {
  encodeKeyChunk,
  invokeKey,
  KeyError,
  objectKey,
  parseOdgmKey,
  valueKey,
} from "./zenoh-keys.js";

const HARD = [
  "*",
  "**",
  "a$b",
  "$*",
  "q?x",
  "h#1",
  "a/b",
  "@at",
  "100%",
  "sp ace",
  "ünï",
  "..",
  ".",
];

describe("encodeKeyChunk", () => {
  it.each(HARD)("makes %j one valid, non-wildcard chunk that decodes back", (s) => {
    const chunk = encodeKeyChunk(s);
    expect(chunk).not.toMatch(/[/*$#?]/);
    expect(chunk.startsWith("@")).toBe(false);
    const key = `oprc/c/0/sobjects/${chunk}`;
    expect(() => new KeyExpr(key)).not.toThrow();
    // Not a wildcard: it matches itself only, not a sibling id.
    expect(new KeyExpr(key).intersects(new KeyExpr("oprc/c/0/sobjects/other"))).toBe(false);
    expect(decodeURIComponent(chunk)).toBe(s);
  });
});

describe("parseOdgmKey", () => {
  it("round-trips the keys the node builds", () => {
    const numeric = { cls: "c/x", partition: 3, id: { numeric: 18446744073709551615n } };
    const str = { cls: "c", partition: 0, id: { str: "**" } };
    expect(parseOdgmKey(objectKey(numeric))).toEqual({
      kind: "object",
      object: numeric,
      op: "none",
    });
    expect(parseOdgmKey(`${objectKey(str)}/set`)).toEqual({
      kind: "object",
      object: str,
      op: "set",
    });
    expect(parseOdgmKey(`${valueKey(str, "k*")}/change`)).toEqual({
      kind: "value",
      object: str,
      key: "k*",
      op: "change",
    });
    expect(parseOdgmKey(`${objectKey(str)}/values-batch/${encodeKeyChunk("i/1")}`)).toEqual({
      kind: "batch",
      object: str,
      invocationId: "i/1",
    });
    expect(parseOdgmKey(`${invokeKey("c", 1, "f$")}/async/x`)).toEqual({
      kind: "invoke",
      cls: "c",
      partition: 1,
      object: undefined,
      fn: "f$",
      asyncId: "x",
    });
    expect(parseOdgmKey(invokeKey("c", 0, "g", str))).toMatchObject({
      kind: "invoke",
      object: str,
      fn: "g",
      asyncId: undefined,
    });
  });

  it.each([
    ["other/c/0/objects/1", /not an ODGM object key/],
    ["oprc/c/0/objects", /not an ODGM object key/],
    ["oprc/*/0/objects/1", /class must not be a wildcard/],
    ["oprc/c/*/objects/1", /partition/],
    ["oprc/c/4294967296/objects/1", /partition/],
    ["oprc/c/01/objects/1", /partition/],
    ["oprc/c/0/objects/*", /wildcard/],
    ["oprc/c/0/objects/**", /wildcard/],
    ["oprc/c/0/objects/x", /u64/],
    ["oprc/c/0/objects/18446744073709551616", /u64/],
    ["oprc/c/0/sobjects/*", /wildcard/],
    ["oprc/c/0/sobjects/a$*", /wildcard/],
    ["oprc/c/0/sobjects/%E0%A4%A", /percent-encoding/],
    ["oprc/c/0/things/1", /objects\/ or sobjects\//],
    ["oprc/c/0/objects/1/frob", /unknown operation/],
    ["oprc/c/0/objects/1/values/*", /entry key must not be a wildcard/],
    ["oprc/c/0/objects/1/values/k/frob", /unknown operation/],
    ["oprc/c/0/objects/1/values/k/set/x", /too many chunks/],
    ["oprc/c/0/objects/1/values-batch/a/b", /not an ODGM key/],
    ["oprc/c/0/invokes/f/sync/x", /invocation key/],
    ["oprc/c/0/objects/1/invokes/**", /function id must not be a wildcard/],
  ])("refuses %j", (key, message) => {
    expect(() => parseOdgmKey(key)).toThrow(KeyError);
    expect(() => parseOdgmKey(key)).toThrow(message);
  });
});
