import { describe, expect, it } from "vitest";
import { DataPlaneError, isDataPlaneError } from "./data-plane-error.js";

describe("DataPlaneError", () => {
  it("prefixes the message with the code and keeps facts", () => {
    const e = new DataPlaneError("not_leader", "try elsewhere", { leaderHint: "n2", cause: "c" });
    expect(e.message).toBe("[not_leader] try elsewhere");
    expect(e.name).toBe("DataPlaneError");
    expect(e.leaderHint).toBe("n2");
    expect(e.cause).toBe("c");
    expect(isDataPlaneError(e)).toBe(true);
  });

  it("from() keeps known codes without doubling the prefix, wraps the rest as internal", () => {
    const e = DataPlaneError.from({ code: "invalid_cursor", message: "[invalid_cursor] stale" });
    expect(e.code).toBe("invalid_cursor");
    expect(e.message).toBe("[invalid_cursor] stale");
    const n = DataPlaneError.from({
      code: "version_mismatch",
      message: "m",
      expected: 1,
      actual: 2n,
    });
    expect([n.expected, n.actual]).toEqual([1n, 2n]);
    const i = DataPlaneError.from(new Error("x"));
    expect(i.code).toBe("internal");
    expect(i.cause).toBeInstanceOf(Error);
    const same = new DataPlaneError("too_large", "big");
    expect(DataPlaneError.from(same)).toBe(same);
  });

  it("wrapping an error keeps one prefix: the wrapped error's own codes are dropped", () => {
    // A cursor error of the key codec, wrapped by the store, wrapped again by a data plane.
    const wrapped = new DataPlaneError(
      "invalid_cursor",
      "[invalid_cursor] [bad_cursor] cursor too short (3 bytes)",
    );
    expect(wrapped.message).toBe("[invalid_cursor] cursor too short (3 bytes)");
    expect(DataPlaneError.from({ code: "invalid_cursor", message: wrapped.message }).message).toBe(
      "[invalid_cursor] cursor too short (3 bytes)",
    );
    // A bracket that is not a leading code stays.
    expect(new DataPlaneError("invalid_argument", "key [a] is bad").message).toBe(
      "[invalid_argument] key [a] is bad",
    );
  });

  it("the guard checks name and code, not instanceof alone", () => {
    expect(isDataPlaneError({ name: "DataPlaneError", code: "not_found" })).toBe(true);
    expect(isDataPlaneError({ name: "DataPlaneError", code: "bogus" })).toBe(false);
    expect(isDataPlaneError(new Error("x"))).toBe(false);
    expect(isDataPlaneError(null)).toBe(false);
  });
});
