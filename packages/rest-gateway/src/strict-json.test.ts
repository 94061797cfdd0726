import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isExactNumber, MAX_JSON_DEPTH, parseStrictJson } from "./strict-json.js";

const refused = (text: string): string => {
  try {
    parseStrictJson(text);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error(`accepted: ${text.slice(0, 60)}`);
};

describe("parseStrictJson", () => {
  it("refuses numbers a double cannot hold exactly, naming them", () => {
    expect(refused('{"value": 1e400}')).toMatch(
      /\[bad_request\] JSON number 1e400 cannot be stored exactly/,
    );
    expect(refused("[9007199254740993]")).toMatch(/9007199254740993/);
    expect(refused("0.12345678901234567890")).toMatch(/cannot be stored exactly/);
    expect(refused("-1e-400")).toMatch(/-1e-400/);
  });

  it("accepts what a double holds exactly, in any spelling", () => {
    for (const t of [
      "0",
      "-0",
      "1.0",
      "1e2",
      "100E-2",
      "9007199254740991",
      "-9007199254740991",
      "0.1",
      "1e21",
      "5e-324",
      "1.7976931348623157e308",
      '"1e400"',
    ]) {
      expect(() => parseStrictJson(t), t).not.toThrow();
    }
    expect(parseStrictJson('{"a": [1.50, "x", null, true]}')).toEqual({
      a: [1.5, "x", null, true],
    });
  });

  it(`refuses nesting beyond ${MAX_JSON_DEPTH} levels without overflowing the stack`, () => {
    const nested = (n: number): string => `${"[".repeat(n)}${"]".repeat(n)}`;
    expect(() => parseStrictJson(nested(MAX_JSON_DEPTH))).not.toThrow();
    expect(refused(nested(MAX_JSON_DEPTH + 1))).toMatch(/nested deeper than 100/);
    expect(refused(nested(1_000_000))).toMatch(/nested deeper/);
    // Brackets inside strings do not count.
    expect(() =>
      parseStrictJson(JSON.stringify(["[".repeat(500), '\\"['.repeat(500)])),
    ).not.toThrow();
  });

  it("malformed JSON is a bad request", () => {
    expect(refused("{")).toMatch(/\[bad_request\] malformed JSON body/);
  });

  it("agrees with JSON.parse on every JSON text whose numbers round-trip (property)", () => {
    fc.assert(
      fc.property(fc.json({ maxDepth: 6 }), (text) => {
        expect(parseStrictJson(text)).toEqual(JSON.parse(text));
      }),
    );
  });

  it("a number is exact iff re-serializing it gives the same decimal value (property)", () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (d) => {
        // What JSON.stringify writes is always exact; so is any spelling of the same decimal.
        const s = JSON.stringify(d);
        expect(isExactNumber(s, JSON.parse(s) as number)).toBe(true);
        const [m, e] = d.toExponential().split("e") as [string, string];
        expect(isExactNumber(`${m}${m.includes(".") ? "" : "."}0e${e}`, d)).toBe(true);
      }),
    );
    fc.assert(
      fc.property(fc.bigInt({ min: 2n ** 53n + 1n, max: 2n ** 70n }), (n) => {
        // Exact = the double re-serializes to the digits sent (4443293902386762000 does,
        // although the double's own binary value is ...761728: the client gets back what it
        // sent); 9007199254740993 does not.
        const exact = String(Number(n)) === n.toString();
        expect(isExactNumber(n.toString(), Number(n))).toBe(exact);
      }),
    );
    // A value fast-check found: its double is not the integer, but prints as it.
    expect(isExactNumber("4443293902386762000", 4443293902386762000)).toBe(true);
    expect(isExactNumber("9007199254740993", Number("9007199254740993"))).toBe(false);
  });
});
