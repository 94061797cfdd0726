import { describe, expect, it } from "vitest";
import { isOdgmError, OdgmError } from "./odgm-error.js";

describe("OdgmError", () => {
  it("prefixes the code and names the variable of configuration errors", () => {
    const err = new OdgmError("invalid_config", "expected a port", { variable: "ODGM_HTTP_PORT" });
    expect(err.message).toBe("[invalid_config] ODGM_HTTP_PORT: expected a port");
    expect(err.variable).toBe("ODGM_HTTP_PORT");
    expect(new OdgmError("unsupported", "raft").message).toBe("[unsupported] raft");
  });

  it("from() keeps OdgmErrors and wraps anything else with its cause", () => {
    const same = new OdgmError("collection_exists", "x");
    expect(OdgmError.from(same)).toBe(same);
    const cause = new TypeError("boom");
    const wrapped = OdgmError.from(cause, "data_dir_locked");
    expect(wrapped.code).toBe("data_dir_locked");
    expect(wrapped.cause).toBe(cause);
    expect(wrapped.message).toBe("[data_dir_locked] boom");
  });

  it("isOdgmError checks name and code, not instanceof alone", () => {
    expect(isOdgmError(new OdgmError("invalid_collection", "x"))).toBe(true);
    expect(
      isOdgmError(Object.assign(new Error("x"), { name: "OdgmError", code: "invalid_config" })),
    ).toBe(true);
    expect(isOdgmError(Object.assign(new Error("x"), { name: "OdgmError", code: "nope" }))).toBe(
      false,
    );
    expect(isOdgmError(Object.assign(new Error("x"), { code: "invalid_config" }))).toBe(false);
    expect(isOdgmError(undefined)).toBe(false);
  });
});
