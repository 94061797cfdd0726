import { describe, expect, it } from "vitest";
import { isGatewayError } from "./gateway-error.js";
import { bodyKind, mediaType, negotiate } from "./media.js";

describe("mediaType / bodyKind", () => {
  it("strips parameters and case", () => {
    expect(mediaType("Application/JSON; charset=utf-8")).toBe("application/json");
    expect(mediaType(undefined)).toBe("");
  });
  it("classifies", () => {
    expect(bodyKind("application/json")).toBe("json");
    expect(bodyKind("application/merge-patch+json")).toBe("json");
    expect(bodyKind("application/x-protobuf")).toBe("protobuf");
    expect(bodyKind("application/protobuf")).toBe("protobuf");
    expect(bodyKind("application/octet-stream")).toBe("binary");
    expect(bodyKind("text/plain")).toBe("other");
    expect(bodyKind(null)).toBe("none");
  });
});

describe("negotiate", () => {
  const offers = [
    "application/json",
    "application/octet-stream",
    "application/x-protobuf",
  ] as const;
  it("defaults to the first offer", () => {
    expect(negotiate(undefined, offers)).toBe("application/json");
    expect(negotiate("", offers)).toBe("application/json");
    expect(negotiate("*/*", offers)).toBe("application/json");
  });
  it("honours exact types, wildcards and q-values", () => {
    expect(negotiate("application/octet-stream", offers)).toBe("application/octet-stream");
    expect(negotiate("application/x-protobuf, application/json;q=0.5", offers)).toBe(
      "application/x-protobuf",
    );
    expect(negotiate("application/*;q=0.2, application/json;q=0.1", offers)).toBe(
      "application/octet-stream",
    );
    expect(negotiate("text/html, */*;q=0.1", offers)).toBe("application/json");
  });
  it("a more specific range overrides a wildcard", () => {
    expect(negotiate("*/*, application/json;q=0", offers)).toBe("application/octet-stream");
  });
  it("throws not_acceptable when nothing fits", () => {
    try {
      negotiate("text/html", offers);
      expect.unreachable();
    } catch (err) {
      expect(isGatewayError(err) && err.code).toBe("not_acceptable");
    }
  });
});
