import { describe, expect, it } from "vitest";
import { IdError, isIdError } from "./id-error.js";

describe("IdError", () => {
  it("prefixes the message with the code", () => {
    const err = new IdError("empty", "object id is empty");
    expect(err.message).toBe("[empty] object id is empty");
    expect(err.rawMessage).toBe("object id is empty");
    expect(err.code).toBe("empty");
    expect(err.name).toBe("IdError");
    expect(err).toBeInstanceOf(Error);
    expect(err.cause).toBeUndefined();
  });

  it("keeps a cause", () => {
    const cause = new Error("boom");
    expect(new IdError("out_of_range", "x", { cause }).cause).toBe(cause);
  });

  it("wraps foreign errors with from()", () => {
    const own = new IdError("too_long", "x");
    expect(IdError.from(own)).toBe(own);
    const wrapped = IdError.from(new TypeError("bad"));
    expect(wrapped.code).toBe("invalid_char");
    expect(wrapped.message).toBe("[invalid_char] bad");
    expect(wrapped.cause).toBeInstanceOf(TypeError);
    expect(IdError.from("text", "out_of_range").message).toBe("[out_of_range] text");
  });

  it("is recognized by name and code, not instanceof alone", () => {
    expect(isIdError(new IdError("invalid_tid", "x"))).toBe(true);
    // e.g. an error from another copy of this package
    expect(isIdError(Object.assign(new Error("x"), { name: "IdError", code: "empty" }))).toBe(true);
    expect(isIdError(Object.assign(new Error("x"), { name: "IdError", code: "nope" }))).toBe(false);
    expect(isIdError(Object.assign(new Error("x"), { code: "empty" }))).toBe(false);
    expect(isIdError(null)).toBe(false);
    expect(isIdError("IdError")).toBe(false);
  });
});
