import { describe, expect, it } from "vitest";
import { EventV2Error, isEventV2Error } from "./event-v2-error.js";

describe("EventV2Error", () => {
  it("prefixes the message with the code and keeps the cause", () => {
    const cause = new Error("boom");
    const err = new EventV2Error("closed", "gone", { cause });
    expect(err.message).toBe("[closed] gone");
    expect(err.rawMessage).toBe("gone");
    expect(err.cause).toBe(cause);
    expect(err.name).toBe("EventV2Error");
  });

  it("from() passes EventV2Errors through and wraps anything else", () => {
    const e = new EventV2Error("invalid_config", "x", { variable: "V" });
    expect(EventV2Error.from(e)).toBe(e);
    const wrapped = EventV2Error.from(new TypeError("bad"));
    expect(wrapped.code).toBe("invalid_argument");
    expect(wrapped.message).toBe("[invalid_argument] bad");
    expect(EventV2Error.from("str", "closed").message).toBe("[closed] str");
  });

  it("isEventV2Error checks name and a known code", () => {
    expect(isEventV2Error(new EventV2Error("closed", "x"))).toBe(true);
    expect(isEventV2Error({ name: "EventV2Error", code: "closed" })).toBe(true);
    expect(isEventV2Error({ name: "EventV2Error", code: "nope" })).toBe(false);
    expect(isEventV2Error(new Error("x"))).toBe(false);
    expect(isEventV2Error(null)).toBe(false);
  });
});
