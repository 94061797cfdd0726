import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Entry, SnapshotMetadata } from "../types.js";
import {
  decodeEntryValue,
  decodeFloor,
  decodeHardState,
  decodeSnapshotMeta,
  encodeEntryValue,
  encodeFloor,
  encodeHardState,
  encodeSnapshotMeta,
  entryKey,
  entryKeyIndex,
  groupPrefix,
  RecordType,
  recordKey,
} from "./log-record-codec.js";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

describe("log record codec", () => {
  it("lays out keys as group prefix, record type, big-endian index (frozen)", () => {
    const p = groupPrefix("g1");
    expect(hex(p)).toBe("026731");
    expect(hex(recordKey(p, RecordType.hardState))).toBe("02673101");
    expect(hex(entryKey(p, 258))).toBe("026731100000000000000102");
    expect(entryKeyIndex(entryKey(p, 2 ** 40 + 7))).toBe(2 ** 40 + 7);
  });

  it("keys every safe index as its big-endian u64, read back exactly", () => {
    const p = groupPrefix("g");
    const index = fc.oneof(
      fc.maxSafeNat(),
      fc.nat(),
      fc.constantFrom(0, 255, 256, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1),
    );
    fc.assert(
      fc.property(index, (i) => {
        const key = entryKey(p, i);
        expect(key.subarray(0, p.length + 1)).toEqual(recordKey(p, RecordType.entry));
        const be = new DataView(key.buffer, key.byteOffset + p.length + 1, 8);
        expect(be.getBigUint64(0)).toBe(BigInt(i));
        expect(entryKeyIndex(key)).toBe(i);
      }),
      { numRuns: 2000 },
    );
  });

  it("sorts entry keys by index", () => {
    const p = groupPrefix("x");
    const keys = [1, 255, 256, 70000, 2 ** 33].map((i) => hex(entryKey(p, i)));
    expect([...keys].sort()).toEqual(keys);
  });

  it("encodes values with a version byte (frozen)", () => {
    const e: Entry = { index: 5, term: 300, type: "conf_change", data: new Uint8Array([7]) };
    expect(hex(encodeEntryValue(e))).toBe("01ac020107");
    expect(hex(encodeHardState({ term: 2, vote: 3, commit: 4 }))).toBe("01020304");
    expect(hex(encodeFloor(9, 1))).toBe("010901");
  });

  it("round-trips entries, hard states, floors and snapshot metadata", () => {
    const ids = fc.array(fc.nat({ max: 1000 }), { maxLength: 5 });
    fc.assert(
      fc.property(
        fc.maxSafeNat(),
        fc.maxSafeNat(),
        fc.constantFrom<Entry["type"]>("normal", "conf_change"),
        fc.uint8Array({ maxLength: 32 }),
        fc.record({
          voters: ids,
          learners: ids,
          votersOutgoing: ids,
          learnersNext: ids,
          autoLeave: fc.boolean(),
        }),
        (index, term, type, data, confState) => {
          const e: Entry = { index, term, type, data };
          expect(decodeEntryValue(index, encodeEntryValue(e))).toEqual(e);
          const hs = { term, vote: index % 7, commit: index };
          expect(decodeHardState(encodeHardState(hs))).toEqual(hs);
          expect(decodeFloor(encodeFloor(index, term))).toEqual({ index, term });
          const m: SnapshotMetadata = { index, term, confState };
          expect(decodeSnapshotMeta(encodeSnapshotMeta(m))).toEqual(m);
        },
      ),
    );
  });

  it("refuses unknown record versions, entry types and trailing bytes", () => {
    expect(() => decodeHardState(new Uint8Array([2, 0, 0, 0]))).toThrow("[unknown_version]");
    expect(() => decodeEntryValue(1, new Uint8Array([1, 1, 9]))).toThrow("[unknown_tag]");
    expect(() => decodeHardState(new Uint8Array([1, 0, 0, 0, 0]))).toThrow("[trailing_bytes]");
    expect(() => decodeFloor(new Uint8Array([1, 0x80]))).toThrow("[truncated]");
  });
});
