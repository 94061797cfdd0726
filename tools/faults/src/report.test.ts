import { describe, expect, it } from "vitest";
import { CASES, exitCodeOf, parseFaultArgs, renderResults } from "./report.js";

describe("parseFaultArgs", () => {
  it("runs every case by default, in order", () => {
    expect(parseFaultArgs([])).toEqual({ quick: false, only: CASES });
  });
  it("takes --quick and --only, repeated or comma-separated, keeping the case order", () => {
    expect(parseFaultArgs(["--", "--quick", "--only", "sigterm,flood", "--only", "idle"])).toEqual({
      quick: true,
      only: ["flood", "idle", "sigterm"],
    });
  });
  it("names an unknown case", () => {
    expect(() => parseFaultArgs(["--only", "nope"])).toThrow(/unknown case "nope": one of flood/);
    expect(() => parseFaultArgs(["--what"])).toThrow();
  });
});

describe("renderResults", () => {
  it("escapes cells and fails the run only on a failed case", () => {
    const ok = { name: "flood", action: "a|b", outcome: "x\ny", verdict: "pass" } as const;
    expect(renderResults([ok])).toBe(
      "| case | what was done | what the node did | verdict |\n|---|---|---|---|\n| flood | a\\|b | x y | pass |\n",
    );
    expect(exitCodeOf([ok, { ...ok, verdict: "skipped" }])).toBe(0);
    expect(exitCodeOf([ok, { ...ok, verdict: "fail" }])).toBe(1);
  });
});
