import { describe, expect, it } from "vitest";
import { isKeyError, KeyError } from "./key-error.js";

describe("KeyError", () => {
  it("prefixes the message with the code and keeps the cause", () => {
    const cause = new Error("inner");
    const err = new KeyError("truncated", "short", { cause });
    expect(err.message).toBe("[truncated] short");
    expect(err.rawMessage).toBe("short");
    expect(err.code).toBe("truncated");
    expect(err.name).toBe("KeyError");
    expect(err.cause).toBe(cause);
    expect(err).toBeInstanceOf(Error);
  });

  it("from() passes KeyErrors through and wraps anything else", () => {
    const err = new KeyError("bad_cursor", "x");
    expect(KeyError.from(err)).toBe(err);
    const wrapped = KeyError.from(new TypeError("boom"));
    expect(wrapped.code).toBe("unknown");
    expect(wrapped.message).toBe("[unknown] boom");
    expect(wrapped.cause).toBeInstanceOf(TypeError);
    expect(KeyError.from("text", "invalid_argument").code).toBe("invalid_argument");
  });

  it("isKeyError checks name and code, not only instanceof", () => {
    expect(isKeyError(new KeyError("empty_id", "x"))).toBe(true);
    expect(isKeyError({ name: "KeyError", code: "nul_in_id" })).toBe(true);
    expect(isKeyError({ name: "KeyError", code: "no_such_code" })).toBe(false);
    expect(isKeyError({ name: "Error", code: "truncated" })).toBe(false);
    expect(isKeyError(new Error("[truncated] x"))).toBe(false);
    expect(isKeyError(null)).toBe(false);
    expect(isKeyError("truncated")).toBe(false);
  });
});
