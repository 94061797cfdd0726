import { describe, expect, it } from "vitest";
import { isRaftError, RaftError } from "./raft-error.js";

describe("RaftError", () => {
  it("has a code-prefixed message, a leader hint, from() and a guard", () => {
    const e = new RaftError("not_leader", "go away", { leaderHint: 3 });
    expect(e.message).toBe("[not_leader] go away");
    expect(e.leaderHint).toBe(3);
    expect(isRaftError(e, "not_leader")).toBe(true);
    expect(isRaftError(e, "no_leader")).toBe(false);
    expect(RaftError.from(e)).toBe(e);
    const w = RaftError.from(new Error("boom"), "unavailable");
    expect(w.code).toBe("unavailable");
    expect(w.cause).toBeInstanceOf(Error);
    expect(isRaftError({ name: "RaftError", code: "nope" })).toBe(false);
  });
});
