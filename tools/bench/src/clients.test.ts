import { describe, expect, it } from "vitest";
import { pick } from "./clients.js";

describe("pick", () => {
  it("stays in 1..n, is deterministic and spreads over the range", () => {
    const seen = new Set<number>();
    for (let w = 0; w < 64; w++) {
      for (let s = 0; s < 200; s++) {
        const v = pick(w, s, 1000);
        expect(v).toBeGreaterThanOrEqual(1);
        expect(v).toBeLessThanOrEqual(1000);
        expect(Number.isInteger(v)).toBe(true);
        seen.add(v);
      }
    }
    expect(pick(3, 7, 1000)).toBe(pick(3, 7, 1000));
    expect(seen.size).toBeGreaterThan(990);
  });
});
