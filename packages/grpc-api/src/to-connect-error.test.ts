import { Code, ConnectError } from "@connectrpc/connect";
import { IdError } from "@oprc/oprc-id";
import { describe, expect, it } from "vitest";
import { DataPlaneError } from "./data-plane-error.js";
import { toConnectError } from "./to-connect-error.js";

describe("toConnectError", () => {
  it.each([
    ["invalid_argument", Code.InvalidArgument],
    ["invalid_cursor", Code.InvalidArgument],
    ["not_found", Code.NotFound],
    ["version_mismatch", Code.Aborted],
    ["too_large", Code.ResourceExhausted],
    ["unimplemented", Code.Unimplemented],
    ["unavailable", Code.Unavailable],
    ["not_leader", Code.Unavailable],
  ] as const)("maps %s to its status and keeps the message", (code, status) => {
    const ce = toConnectError(new DataPlaneError(code, "detail"));
    expect(ce.code).toBe(status);
    expect(ce.rawMessage).toBe(`[${code}] detail`);
  });

  it("CAS mismatch carries both versions in the message and metadata", () => {
    const ce = toConnectError(
      new DataPlaneError("version_mismatch", "x", { expected: 3n, actual: 5n }),
    );
    expect(ce.code).toBe(Code.Aborted);
    expect(ce.rawMessage).toBe("[version_mismatch] expected object version 3, actual 5");
    expect(ce.metadata.get("odgm-expected-version")).toBe("3");
    expect(ce.metadata.get("odgm-actual-version")).toBe("5");
  });

  it("normalization errors are INVALID_ARGUMENT with their message", () => {
    const ce = toConnectError(new IdError("too_long", "object id is 200 bytes; max 160"));
    expect(ce.code).toBe(Code.InvalidArgument);
    expect(ce.rawMessage).toBe("[too_long] object id is 200 bytes; max 160");
  });

  it("store-like errors with a known code keep it (duck-typed), others are INTERNAL", () => {
    const storeErr = Object.assign(new Error("[version_mismatch] nope"), {
      name: "StoreError",
      code: "version_mismatch",
      expected: 1n,
      actual: 2n,
    });
    expect(toConnectError(storeErr).code).toBe(Code.Aborted);
    const corrupt = Object.assign(new Error("[corrupt_record] bad bytes at /data/x"), {
      code: "corrupt_record",
    });
    const causes: unknown[] = [];
    const ce = toConnectError(corrupt, { onInternalError: (c) => causes.push(c) });
    expect(ce.code).toBe(Code.Internal);
    expect(ce.rawMessage).toBe("internal error");
    expect(causes).toEqual([corrupt]);
  });

  it("never leaks internals of unexpected errors, and reports the cause", () => {
    const causes: unknown[] = [];
    for (const thrown of [
      new TypeError("secret"),
      "a string",
      undefined,
      null,
      42,
      { weird: true },
    ]) {
      const ce = toConnectError(thrown, { onInternalError: (c) => causes.push(c) });
      expect(ce.code).toBe(Code.Internal);
      expect(ce.rawMessage).toBe("internal error");
    }
    expect(causes).toHaveLength(6);
  });

  it("passes ConnectError through and maps aborts", () => {
    const orig = new ConnectError("x", Code.PermissionDenied);
    expect(toConnectError(orig)).toBe(orig);
    expect(toConnectError(new DOMException("aborted", "AbortError")).code).toBe(Code.Canceled);
    expect(toConnectError(new DOMException("timeout", "TimeoutError")).code).toBe(
      Code.DeadlineExceeded,
    );
  });
});
