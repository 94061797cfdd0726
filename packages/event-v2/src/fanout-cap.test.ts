import { describe, expect, it } from "vitest";
import { mutation } from "../test/fixtures.js";
import { truncationOf } from "./fanout-cap.js";

function keys(n: number): Array<[string, "create"]> {
  return Array.from({ length: n }, (_, i) => [`k${i}`, "create"]);
}

describe("truncationOf", () => {
  it("does not truncate at or below the cap", () => {
    expect(truncationOf(mutation(keys(1)), 1, 32)).toBeUndefined();
    expect(truncationOf(mutation(keys(256)), 256, 32)).toBeUndefined();
  });

  it("truncates with cap 1", () => {
    const s = truncationOf(mutation(keys(3)), 1, 32);
    expect(s).toEqual({
      objectId: "user-1",
      clsId: "users",
      partitionId: 7,
      versionAfter: 5n,
      totalChanged: 3,
      emitted: 1,
      skipped: 2,
      sampleSkippedKeys: ["k1", "k2"],
    });
  });

  it("truncates with the default cap and samples at most 32 skipped keys", () => {
    const s = truncationOf(mutation(keys(300)), 256, 32);
    expect(s?.totalChanged).toBe(300);
    expect(s?.emitted).toBe(256);
    expect(s?.skipped).toBe(44);
    expect(s?.sampleSkippedKeys).toHaveLength(32);
    expect(s?.sampleSkippedKeys[0]).toBe("k256");
    expect(s?.sampleSkippedKeys[31]).toBe("k287");
  });

  it("cap 0 skips every key; sample 0 lists none", () => {
    const s = truncationOf(mutation(keys(2)), 0, 0);
    expect(s?.emitted).toBe(0);
    expect(s?.skipped).toBe(2);
    expect(s?.sampleSkippedKeys).toEqual([]);
  });
});
