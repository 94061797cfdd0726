import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jointCommitted, jointVote, majorityCommitted, majorityVote } from "./quorum.js";

describe("quorum", () => {
  it("majorityCommitted is the largest index a majority acked", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(100), { minLength: 1, maxLength: 9 }), (acks) => {
        const voters = new Set(acks.map((_, i) => i + 1));
        const c = majorityCommitted(voters, (id) => acks[id - 1]);
        const q = Math.floor(acks.length / 2) + 1;
        expect(acks.filter((a) => a >= c).length).toBeGreaterThanOrEqual(q);
        expect(acks.filter((a) => a >= c + 1).length).toBeLessThan(q);
      }),
    );
    expect(majorityCommitted(new Set(), () => 0)).toBe(Number.POSITIVE_INFINITY);
  });

  it("majorityVote tallies won, lost and pending", () => {
    const v = new Set([1, 2, 3]);
    expect(majorityVote(v, (id) => (id < 3 ? true : undefined))).toBe("won");
    expect(majorityVote(v, (id) => (id < 3 ? false : undefined))).toBe("lost");
    expect(majorityVote(v, (id) => (id === 1 ? true : undefined))).toBe("pending");
    expect(majorityVote(new Set(), () => undefined)).toBe("won");
  });

  it("joint configurations need both majorities", () => {
    const cfg = { incoming: new Set([1, 2, 3]), outgoing: new Set([3, 4, 5]) };
    expect(jointCommitted(cfg, (id) => ({ 1: 9, 2: 9, 3: 5, 4: 2, 5: 1 })[id])).toBe(2);
    expect(jointCommitted({ incoming: new Set([1]), outgoing: new Set() }, () => 7)).toBe(7);
    expect(jointVote(cfg, (id) => id <= 2)).toBe("lost");
    expect(jointVote(cfg, (id) => id !== 5)).toBe("won");
    expect(jointVote(cfg, (id) => (id <= 3 ? true : undefined))).toBe("pending");
  });
});
