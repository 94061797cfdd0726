import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type IdErrorCode, isIdError } from "./id-error.js";
import { normalizeObjectId } from "./normalize-id.js";
import {
  compareTids,
  createTidClock,
  formatTid,
  isValidTid,
  parseTid,
  TID_ALPHABET,
  TID_LENGTH,
} from "./tid.js";

function codeOf(fn: () => unknown): IdErrorCode | "ok" {
  try {
    fn();
    return "ok";
  } catch (err) {
    if (isIdError(err)) return err.code;
    throw err;
  }
}

const TS_MAX = 2n ** 53n - 1n;
const tidParts = fc.record({
  timestampUs: fc.bigInt({ min: 0n, max: TS_MAX }),
  clockId: fc.integer({ min: 0, max: 1023 }),
});
const value = (p: { timestampUs: bigint; clockId: number }): bigint =>
  (p.timestampUs << 10n) | BigInt(p.clockId);

// Independent encoder: the 64-bit value in base32-sortable, 13 digits, most significant first.
function referenceEncode(v: bigint): string {
  let out = "";
  for (let i = 12; i >= 0; i--) out += TID_ALPHABET[Number((v >> BigInt(5 * i)) & 31n)];
  return out;
}

describe("TID format", () => {
  it("uses an alphabet in ascending code-point order", () => {
    expect(TID_ALPHABET).toBe("234567abcdefghijklmnopqrstuvwxyz");
    expect([...TID_ALPHABET].sort().join("")).toBe(TID_ALPHABET);
  });

  it("reads the seed's example TID", () => {
    expect(isValidTid("3jzfcijpj2z2a")).toBe(true);
    const parts = parseTid("3jzfcijpj2z2a");
    expect(parts).toEqual({ timestampUs: 1688137381887007n, clockId: 6 });
    expect(formatTid(parts)).toBe("3jzfcijpj2z2a");
  });

  it("encodes the extremes", () => {
    expect(formatTid({ timestampUs: 0n, clockId: 0 })).toBe("2222222222222");
    expect(formatTid({ timestampUs: TS_MAX, clockId: 1023 })).toBe("bzzzzzzzzzzzz");
    expect(parseTid("bzzzzzzzzzzzz")).toEqual({ timestampUs: TS_MAX, clockId: 1023 });
  });

  it("rejects malformed TIDs", () => {
    for (const s of [
      "",
      "3jzfcijpj2z2",
      "3jzfcijpj2z2aa",
      "3JZFCIJPJ2Z2A",
      "3jzfcijpj2z21",
      "3jzfcijpj2z20",
      "cjzfcijpj2z2a", // top bit set
      "zzzzzzzzzzzzz",
      "3jzf-cij-pj2z-2a",
      "3jzfcijpj2z2\u00e9",
    ]) {
      expect(isValidTid(s), s).toBe(false);
      expect(
        codeOf(() => parseTid(s)),
        s,
      ).toBe("invalid_tid");
    }
    expect(isValidTid(42 as unknown as string)).toBe(false);
  });

  it("matches an independent BigInt encoder and round-trips", () => {
    fc.assert(
      fc.property(tidParts, (p) => {
        const tid = formatTid(p);
        expect(tid).toBe(referenceEncode(value(p)));
        expect(tid).toHaveLength(TID_LENGTH);
        expect(isValidTid(tid)).toBe(true);
        expect(parseTid(tid)).toEqual(p);
      }),
    );
  });

  it("orders strings as it orders values", () => {
    fc.assert(
      fc.property(tidParts, tidParts, (a, b) => {
        const ta = formatTid(a);
        const tb = formatTid(b);
        const va = value(a);
        const vb = value(b);
        expect(Math.sign(compareTids(ta, tb))).toBe(va < vb ? -1 : va > vb ? 1 : 0);
        expect(ta < tb).toBe(va < vb);
      }),
    );
  });

  it("is a valid normalized object id", () => {
    fc.assert(
      fc.property(tidParts, (p) => {
        const tid = formatTid(p);
        expect(normalizeObjectId(tid)).toBe(tid);
      }),
    );
  });

  it("rejects out-of-range fields", () => {
    expect(codeOf(() => formatTid({ timestampUs: -1n, clockId: 0 }))).toBe("out_of_range");
    expect(codeOf(() => formatTid({ timestampUs: 2n ** 53n, clockId: 0 }))).toBe("out_of_range");
    expect(codeOf(() => formatTid({ timestampUs: 0n, clockId: 1024 }))).toBe("out_of_range");
    expect(codeOf(() => formatTid({ timestampUs: 0n, clockId: 1.5 }))).toBe("out_of_range");
    expect(codeOf(() => compareTids("x", "2222222222222"))).toBe("invalid_tid");
    expect(codeOf(() => compareTids("2222222222222", "x"))).toBe("invalid_tid");
  });
});

describe("createTidClock", () => {
  it("uses the injected time and clock id when time moves forward", () => {
    let t = 1_700_000_000_000_000n;
    const clock = createTidClock({ now: () => t, clockId: 513 });
    expect(clock.clockId).toBe(513);
    for (let i = 0; i < 5; i++) {
      t += 7n;
      expect(parseTid(clock.next())).toEqual({ timestampUs: t, clockId: 513 });
    }
  });

  it("stays strictly increasing when the clock stalls", () => {
    const clock = createTidClock({ now: () => 1_000n, clockId: 1 });
    const tids = Array.from({ length: 100 }, () => clock.next());
    expect([...tids].sort()).toEqual(tids);
    expect(new Set(tids).size).toBe(100);
    expect(parseTid(tids[99] ?? "").timestampUs).toBe(1_099n);
  });

  it("stays strictly increasing when the clock goes back", () => {
    let t = 5_000n;
    const clock = createTidClock({ now: () => t, clockId: 0 });
    const a = clock.next();
    t = 10n;
    const b = clock.next();
    expect(b > a).toBe(true);
    expect(parseTid(b).timestampUs).toBe(5_001n);
  });

  it("sorts TIDs in creation order for any sequence of clock readings", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 2n ** 52n }),
        fc.array(fc.bigInt({ min: -1_000n, max: 1_000n }), { minLength: 1, maxLength: 200 }),
        fc.integer({ min: 0, max: 1023 }),
        (start, steps, clockId) => {
          let t = start;
          let i = 0;
          const clock = createTidClock({
            now: () => {
              const s = steps[i++ % steps.length] ?? 0n;
              t = t + s < 0n ? 0n : t + s;
              return t;
            },
            clockId,
          });
          let prev = "";
          let prevTs = -1n;
          for (let k = 0; k < steps.length; k++) {
            const reading = i;
            const tid = clock.next();
            const parts = parseTid(tid);
            expect(tid > prev).toBe(true);
            expect(parts.clockId).toBe(clockId);
            // The timestamp is the reading, or 1 µs past the previous one if that is later.
            const read = t;
            expect(parts.timestampUs).toBe(read > prevTs ? read : prevTs + 1n);
            expect(i).toBe(reading + 1);
            prev = tid;
            prevTs = parts.timestampUs;
          }
        },
      ),
    );
  });

  it("defaults to the wall clock and a random clock id", () => {
    const before = BigInt(Date.now()) * 1000n;
    const clock = createTidClock();
    const parts = parseTid(clock.next());
    const after = BigInt(Date.now()) * 1000n;
    expect(parts.timestampUs >= before && parts.timestampUs <= after + 1000n).toBe(true);
    expect(parts.clockId).toBe(clock.clockId);
    expect(Number.isInteger(clock.clockId) && clock.clockId >= 0 && clock.clockId < 1024).toBe(
      true,
    );
  });

  it("rejects bad options and clock readings", () => {
    expect(codeOf(() => createTidClock({ clockId: 1024 }))).toBe("out_of_range");
    expect(codeOf(() => createTidClock({ clockId: -1 }))).toBe("out_of_range");
    expect(codeOf(() => createTidClock({ now: () => -1n }).next())).toBe("out_of_range");
    expect(codeOf(() => createTidClock({ now: () => 2n ** 53n }).next())).toBe("out_of_range");
    const last = createTidClock({ now: () => 2n ** 53n - 1n });
    expect(codeOf(() => last.next())).toBe("ok");
    expect(codeOf(() => last.next())).toBe("out_of_range");
  });
});
