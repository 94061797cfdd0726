import { describe, expect, it } from "vitest";
import { atEndOfTurn } from "./turn.js";

/** Resolves once the I/O phase of a later turn has run (a timer fires in it). */
const nextTurns = () => new Promise((r) => setTimeout(r, 5));

describe("atEndOfTurn", () => {
  it("runs what the turn deferred after the turn's own work, in order", async () => {
    const log: string[] = [];
    atEndOfTurn(() => log.push("a"));
    atEndOfTurn(() => log.push("b"));
    log.push("sync");
    await nextTurns();
    expect(log).toEqual(["sync", "a", "b"]);
  });

  it("runs work deferred from a deferred callback in the same check phase, not a turn later", async () => {
    const log: string[] = [];
    atEndOfTurn(() => {
      // Queued now, a plain immediate runs only in the next turn.
      setImmediate(() => log.push("next turn"));
      atEndOfTurn(() => log.push("nested"));
      log.push("outer");
    });
    atEndOfTurn(() => log.push("second"));
    await nextTurns();
    expect(log).toEqual(["outer", "second", "nested", "next turn"]);
  });

  it("goes on in the next turn after a callback that throws", async () => {
    const log: string[] = [];
    const thrown: unknown[] = [];
    const onUncaught = (err: unknown) => thrown.push(err);
    const listeners = process.listeners("uncaughtException");
    process.removeAllListeners("uncaughtException");
    process.on("uncaughtException", onUncaught);
    try {
      atEndOfTurn(() => log.push("before"));
      atEndOfTurn(() => {
        throw new Error("boom");
      });
      atEndOfTurn(() => log.push("after"));
      await nextTurns();
    } finally {
      process.off("uncaughtException", onUncaught);
      for (const l of listeners) process.on("uncaughtException", l);
    }
    expect(thrown).toHaveLength(1);
    expect(log).toEqual(["before", "after"]);
    // The scheduler still runs later work.
    atEndOfTurn(() => log.push("later"));
    await nextTurns();
    expect(log).toEqual(["before", "after", "later"]);
  });
});
