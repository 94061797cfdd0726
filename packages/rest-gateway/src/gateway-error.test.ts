import { Code, ConnectError } from "@connectrpc/connect";
import { IdError } from "@oprc/oprc-id";
import { describe, expect, it } from "vitest";
import { GATEWAY_ERROR_STATUS, GatewayError, isGatewayError } from "./gateway-error.js";

describe("GatewayError", () => {
  it("prefixes messages with the code and exposes the status", () => {
    const err = new GatewayError("conflict", "version 3 != 4");
    expect(err.message).toBe("[conflict] version 3 != 4");
    expect(err.rawMessage).toBe("version 3 != 4");
    expect(err.status).toBe(409);
    expect(isGatewayError(err)).toBe(true);
    expect(isGatewayError(new Error("x"))).toBe(false);
    expect(isGatewayError({ name: "GatewayError", code: "nope" })).toBe(false);
  });

  it.each([
    [Code.InvalidArgument, 400, "bad_request"],
    [Code.NotFound, 404, "not_found"],
    [Code.Aborted, 409, "conflict"],
    [Code.ResourceExhausted, 413, "payload_too_large"],
    [Code.Unimplemented, 501, "not_implemented"],
    [Code.Unavailable, 503, "unavailable"],
    [Code.DeadlineExceeded, 504, "gateway_timeout"],
    [Code.Internal, 500, "internal"],
    [Code.Unknown, 500, "internal"],
    [Code.DataLoss, 500, "internal"],
  ])("maps ConnectError %s to %s", (code, status, name) => {
    const err = GatewayError.from(new ConnectError("upstream detail at 10.1.2.3", code));
    expect(err.status).toBe(status);
    expect(err.code).toBe(name);
    if (status >= 500 && status !== 501) expect(err.rawMessage).not.toContain("10.1.2.3");
    else expect(err.rawMessage).toBe("upstream detail at 10.1.2.3");
    expect(err.cause).toBeInstanceOf(ConnectError);
  });

  it("maps IdError to 400 with its message, anything else to an opaque 500", () => {
    const id = GatewayError.from(new IdError("empty", "object id is empty"));
    expect(id.status).toBe(400);
    expect(id.rawMessage).toContain("empty");
    const other = GatewayError.from(new TypeError("secret"));
    expect(other.status).toBe(500);
    expect(other.rawMessage).toBe("internal error");
    const same = new GatewayError("bad_request", "x");
    expect(GatewayError.from(same)).toBe(same);
  });

  it("every code has a status", () => {
    for (const status of Object.values(GATEWAY_ERROR_STATUS))
      expect(status).toBeGreaterThanOrEqual(400);
  });
});
