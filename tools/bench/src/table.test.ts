import { describe, expect, it } from "vitest";
import { fmt, fmtMiB, fmtRatio, fmtRatioSpread, fmtSpread, renderTable } from "./table.js";

describe("renderTable", () => {
  it("renders header, alignment row and escaped cells", () => {
    const out = renderTable(["op", "req/s"], [["a|b", "1 234"], ["c"]], [1]);
    expect(out).toBe("| op | req/s |\n|---|---:|\n| a\\|b | 1 234 |\n| c |  |\n");
  });
});

describe("number formats", () => {
  it("keeps about three significant digits", () => {
    expect(fmt(12345.6)).toBe("12 346");
    expect(fmt(123.4)).toBe("123");
    expect(fmt(12.34)).toBe("12.3");
    expect(fmt(1.234)).toBe("1.23");
    expect(fmt(0.01234)).toBe("0.012");
    expect(fmt(0)).toBe("0");
    expect(fmt(Number.NaN)).toBe("—");
  });
  it("formats ratios and spreads", () => {
    expect(fmtRatio(0.4567)).toBe("0.46×");
    expect(fmtRatio(12.34)).toBe("12.3×");
    expect(fmtRatio(0.003456)).toBe("0.0035×");
    expect(fmtRatioSpread({ min: 0.4, median: 0.5, max: 0.61 })).toBe("0.50× (0.40–0.61×)");
    expect(fmtRatioSpread({ min: 2, median: 2, max: 2 })).toBe("2.00×");
    expect(fmtSpread({ min: 900, median: 1000, max: 1100 })).toBe("1 000 (900–1 100)");
    expect(fmtMiB(3 * 1024 * 1024)).toBe("3.0 MiB");
  });
});
