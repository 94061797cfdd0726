import { describe, expect, it } from "vitest";
import { BackfillError, isBackfillError } from "./backfill-error.js";

describe("BackfillError", () => {
  it("prefixes the code, keeps the cause and is recognized by name and code", () => {
    const cause = new Error("disk");
    const e = new BackfillError("io", "cannot write", { cause });
    expect(e.message).toBe("[io] cannot write");
    expect(e.cause).toBe(cause);
    expect(isBackfillError(e)).toBe(true);
    expect(isBackfillError(e, "io")).toBe(true);
    expect(isBackfillError(e, "locked")).toBe(false);
    expect(isBackfillError({ name: "BackfillError", code: "io" })).toBe(true);
    expect(isBackfillError({ name: "BackfillError", code: "nope" })).toBe(false);
    expect(isBackfillError(new Error("x"))).toBe(false);
  });

  it("from() keeps a BackfillError and wraps anything else", () => {
    const e = new BackfillError("locked", "held");
    expect(BackfillError.from(e)).toBe(e);
    const w = BackfillError.from("boom", "unavailable");
    expect(w.code).toBe("unavailable");
    expect(w.message).toBe("[unavailable] boom");
    expect(w.cause).toBe("boom");
  });
});
