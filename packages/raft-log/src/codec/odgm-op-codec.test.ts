import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isRaftError } from "../core/raft-error.js";
import type { OdgmOp, ValData } from "./odgm-op.js";
import { decodeOdgmOp, encodeOdgmOp } from "./odgm-op-codec.js";

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const unhex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s.replace(/\s+/g, ""), "hex"));
const val = (bytes: number[], type = 0): ValData => ({ data: new Uint8Array(bytes), type });

/** Golden vectors: the format is frozen; a change here is a format version bump. */
const GOLDEN: [string, OdgmOp, string][] = [
  ["noop", { kind: "noop" }, "01 00"],
  [
    "delete_entry, numeric id, string key",
    { kind: "delete_entry", cls: "c", partition: 7, objectId: "42", timestampMs: 1000, key: "k" },
    "01 02  01 63  07  00 02 3432  e8 07  00  01 01 6b",
  ],
  [
    "set_entry, string id, numeric key",
    {
      kind: "set_entry",
      cls: "c",
      partition: 0,
      objectId: "ord_1",
      timestampMs: 0,
      key: "5",
      value: val([0xaa], 1),
    },
    "01 01  01 63  00  01 05 6f72645f31  00  00  00 00000005  01 01 aa",
  ],
  [
    "batch with CAS, keys sorted numeric first",
    {
      kind: "batch",
      cls: "c",
      partition: 1,
      objectId: "x",
      timestampMs: 10,
      sets: new Map([
        ["b", val([1])],
        ["1", val([])],
      ]),
      deletes: ["a"],
      expectedVersion: 3n,
    },
    "01 03  01 63  01  01 01 78  0a  01 03  02  00 00000001 00 00  01 01 62 00 01 01  01  01 01 61",
  ],
  [
    "set_object with an (empty) event config",
    {
      kind: "set_object",
      cls: "c",
      partition: 0,
      objectId: "x",
      timestampMs: 0,
      entries: new Map(),
      event: new Uint8Array(0),
    },
    "01 04  01 63  00  01 01 78  00  02 00  00",
  ],
  [
    "merge_object, 300-byte timestamp varint",
    {
      kind: "merge_object",
      cls: "",
      partition: 4294967295,
      objectId: "18446744073709551615",
      timestampMs: 300,
      entries: new Map([["4294967295", val([7], 2)]]),
    },
    "01 05  00  ffffffff0f  00 14 3138343436373434303733373039353531363135  ac 02  00  01 00 ffffffff 02 01 07",
  ],
  [
    "delete_object",
    { kind: "delete_object", cls: "c", partition: 2, objectId: "é", timestampMs: 1 },
    "01 06  01 63  02  01 02 c3a9  01  00",
  ],
  [
    "set_entry with CAS (u64 expected version, 10-byte varint)",
    {
      kind: "set_entry",
      cls: "c",
      partition: 0,
      objectId: "x",
      timestampMs: 0,
      key: "k",
      value: val([]),
      expectedVersion: 18_446_744_073_709_551_615n,
    },
    "01 01  01 63  00  01 01 78  00  01 ffffffffffffffffff01  01 01 6b  00 00",
  ],
  [
    "merge_object with an event config and CAS",
    {
      kind: "merge_object",
      cls: "c",
      partition: 0,
      objectId: "x",
      timestampMs: 0,
      entries: new Map(),
      event: new Uint8Array([0xee]),
      expectedVersion: 0n,
    },
    "01 05  01 63  00  01 01 78  00  03 00 01 ee  00",
  ],
  [
    "set_event_config without an event (removes it)",
    { kind: "set_event_config", cls: "c", partition: 0, objectId: "x", timestampMs: 0 },
    "01 08  01 63  00  01 01 78  00  00",
  ],
  [
    "set_event_config with an event",
    {
      kind: "set_event_config",
      cls: "c",
      partition: 0,
      objectId: "x",
      timestampMs: 0,
      event: new Uint8Array([1, 2]),
    },
    "01 08  01 63  00  01 01 78  00  02 02 0102",
  ],
  [
    "convert_legacy",
    { kind: "convert_legacy", cls: "c", partition: 0, objectId: "0", timestampMs: 5 },
    "01 07  01 63  00  00 01 30  05  00",
  ],
];

describe("ODGM op codec: golden vectors", () => {
  for (const [name, op, bytes] of GOLDEN) {
    it(`${name} encodes to the frozen bytes and back`, () => {
      expect(hex(encodeOdgmOp(op))).toBe(hex(unhex(bytes)));
      expect(decodeOdgmOp(unhex(bytes))).toEqual(op);
    });
  }

  it("does not depend on map insertion or delete order", () => {
    const a = encodeOdgmOp({
      kind: "batch",
      cls: "c",
      partition: 0,
      objectId: "x",
      timestampMs: 0,
      sets: new Map([
        ["z", val([1])],
        ["10", val([2])],
        ["9", val([3])],
      ]),
      deletes: ["q", "2", "aa"],
    });
    const b = encodeOdgmOp({
      kind: "batch",
      cls: "c",
      partition: 0,
      objectId: "x",
      timestampMs: 0,
      sets: new Map([
        ["9", val([3])],
        ["z", val([1])],
        ["10", val([2])],
      ]),
      deletes: ["aa", "q", "2"],
    });
    expect(hex(a)).toBe(hex(b));
    const op = decodeOdgmOp(a);
    expect(op.kind === "batch" && [...op.sets.keys()]).toEqual(["9", "10", "z"]);
    // String keys sort by (length, bytes) because of the length prefix.
    expect(op.kind === "batch" && op.deletes).toEqual(["2", "q", "aa"]);
  });
});

const base = { cls: "c", partition: 0, objectId: "x", timestampMs: 0 } as const;

describe("ODGM op codec: encoder rejects values without a canonical form", () => {
  it.each<[string, OdgmOp, string]>([
    ["empty object id", { kind: "delete_object", ...base, objectId: "" }, "invalid_value"],
    ["NUL in id", { kind: "delete_object", ...base, objectId: "a\u0000b" }, "invalid_value"],
    ["empty key", { kind: "delete_entry", ...base, key: "" }, "invalid_value"],
    ["lone surrogate", { kind: "delete_entry", ...base, key: "a\uD800" }, "invalid_utf8"],
    ["negative partition", { kind: "delete_object", ...base, partition: -1 }, "invalid_value"],
    ["partition > u32", { kind: "delete_object", ...base, partition: 2 ** 32 }, "invalid_value"],
    ["fractional timestamp", { kind: "delete_object", ...base, timestampMs: 1.5 }, "invalid_value"],
    [
      "unsafe expected version",
      { kind: "batch", ...base, sets: new Map(), deletes: [], expectedVersion: 2n ** 64n },
      "invalid_value",
    ],
    [
      "duplicate delete",
      { kind: "batch", ...base, sets: new Map(), deletes: ["a", "a"] },
      "duplicate_key",
    ],
    [
      "key both set and deleted",
      { kind: "batch", ...base, sets: new Map([["7", val([])]]), deletes: ["7"] },
      "duplicate_key",
    ],
    [
      "value type > u32",
      { kind: "set_entry", ...base, key: "k", value: val([], 2 ** 32) },
      "invalid_value",
    ],
    [
      "convert of a string id",
      { kind: "convert_legacy", ...base, objectId: "abc" },
      "invalid_value",
    ],
  ])("%s", (_name, op, code) => {
    expect(() => encodeOdgmOp(op)).toThrow(`[${code}]`);
  });
});

describe("ODGM op codec: decoder rejects every non-canonical or unknown form", () => {
  it.each<[string, string, string]>([
    ["empty input", "", "truncated"],
    ["unknown version", "02 00", "unknown_version"],
    ["version 0", "00 00", "unknown_version"],
    ["unknown tag", "01 09", "unknown_tag"],
    ["trailing byte after noop", "01 00 00", "trailing_bytes"],
    ["trailing byte after op", "01 06 01 63 02 01 02 c3a9 01 00 ff", "trailing_bytes"],
    ["truncated id", "01 06 01 63 02 01 05 61", "truncated"],
    ["length past the end", "01 06 09 63", "truncated"],
    ["non-minimal partition varint", "01 06 01 63 82 00 01 01 78 00 00", "non_minimal_varint"],
    ["partition > u32", "01 06 01 63 8080808010 01 01 78 00 00", "bad_varint"],
    ["varint longer than 8 bytes", "01 06 01 63 00 01 01 78 ffffffffffffffff01 00", "bad_varint"],
    ["timestamp beyond 2^53", "01 06 01 63 00 01 01 78 8080808080808010 00", "bad_varint"],
    ["unknown identity variant", "01 06 01 63 00 02 01 78 00 00", "unknown_tag"],
    ["numeric id under the string variant", "01 06 01 63 00 01 02 3432 00 00", "non_canonical"],
    ["leading zero under the numeric variant", "01 06 01 63 00 00 02 3034 00 00", "non_canonical"],
    ["non-digit under the numeric variant", "01 06 01 63 00 00 01 78 00 00", "non_canonical"],
    [
      "u64 overflow under the numeric variant",
      "01 06 01 63 00 00 14 3138343436373434303733373039353531363136 00 00",
      "non_canonical",
    ],
    ["empty id", "01 06 01 63 00 01 00 00 00", "non_canonical"],
    ["NUL in id", "01 06 01 63 00 01 01 00 00 00", "non_canonical"],
    ["invalid UTF-8 in id", "01 06 01 63 00 01 01 ff 00 00", "invalid_utf8"],
    ["overlong UTF-8", "01 06 01 63 00 01 02 c0af 00 00", "invalid_utf8"],
    ["invalid UTF-8 in cls", "01 06 01 80 00 01 01 78 00 00", "invalid_utf8"],
    ["unknown flag bit", "01 06 01 63 00 01 01 78 00 04", "unknown_flags"],
    ["event flag on delete_entry", "01 02 01 63 00 01 01 78 00 02 01 01 6b", "unknown_flags"],
    ["version flag on convert_legacy", "01 07 01 63 00 00 01 30 00 01 00", "unknown_flags"],
    ["non-minimal expected version", "01 06 01 63 00 01 01 78 00 01 80 00", "non_minimal_varint"],
    [
      "expected version past 2^64-1",
      "01 06 01 63 00 01 01 78 00 01 ffffffffffffffffff02",
      "bad_varint",
    ],
    ["flags on set_entry", "01 01 01 63 00 01 01 78 00 80 01 01 6b 00 00", "unknown_flags"],
    ["version field with its flag absent", "01 03 01 63 00 01 01 78 00 00 03 00 00", "truncated"],
    ["unknown key variant", "01 02 01 63 00 01 01 78 00 00 02 01 6b", "unknown_tag"],
    [
      "numeric key under the string variant",
      "01 02 01 63 00 01 01 78 00 00 01 01 35",
      "non_canonical",
    ],
    ["empty string key", "01 02 01 63 00 01 01 78 00 00 01 00", "non_canonical"],
    ["truncated numeric key", "01 02 01 63 00 01 01 78 00 00 00 0000", "truncated"],
    [
      "unsorted keys",
      "01 05 01 63 00 01 01 78 00 00 02 01 01 62 00 00 01 01 61 00 00",
      "unsorted_keys",
    ],
    [
      "numeric key after string key",
      "01 05 01 63 00 01 01 78 00 00 02 01 01 62 00 00 00 00000001 00 00",
      "unsorted_keys",
    ],
    [
      "duplicate keys",
      "01 05 01 63 00 01 01 78 00 00 02 01 01 61 00 00 01 01 61 00 00",
      "duplicate_key",
    ],
    [
      "key set and deleted",
      "01 03 01 63 00 01 01 78 00 00 01 01 01 61 00 00 01 01 01 61",
      "duplicate_key",
    ],
    ["count past the end", "01 05 01 63 00 01 01 78 00 00 05 01 01 61 00 00", "truncated"],
    ["value type > u32", "01 01 01 63 00 01 01 78 00 00 01 01 6b 8080808010 00", "bad_varint"],
    ["convert_legacy on a string id", "01 07 01 63 00 01 01 78 00 00", "non_canonical"],
  ])("%s", (_name, bytes, code) => {
    let thrown: unknown;
    try {
      decodeOdgmOp(unhex(bytes));
    } catch (e) {
      thrown = e;
    }
    expect(isRaftError(thrown)).toBe(true);
    expect((thrown as { code: string }).code).toBe(code);
  });
});

// ---- property tests ---------------------------------------------------------------

const idString = fc
  .oneof(
    fc.string({ unit: "binary", minLength: 1, maxLength: 12 }),
    fc.string({
      unit: fc.constantFrom("a", "b", "0", "1", ".", ":", "-"),
      minLength: 1,
      maxLength: 6,
    }),
    fc.bigInt({ min: 0n, max: 18_446_744_073_709_551_615n }).map(String),
    fc.constantFrom("18446744073709551616", "007", "0", "4294967296", "\uFEFFbom"),
  )
  .filter((s) => s.length > 0 && !s.includes("\u0000"));
const entryKey = fc.oneof(idString, fc.nat({ max: 4294967295 }).map(String));
const valData: fc.Arbitrary<ValData> = fc.record({
  data: fc.uint8Array({ maxLength: 16 }),
  type: fc.oneof(fc.constantFrom(0, 1), fc.nat({ max: 4294967295 })),
});
const entryMap = fc
  .uniqueArray(fc.tuple(entryKey, valData), { selector: ([k]) => k, maxLength: 6 })
  .map((pairs) => new Map(pairs));
const plainBase = fc.record({
  cls: fc.string({ unit: "binary", maxLength: 8 }),
  partition: fc.nat({ max: 4294967295 }),
  objectId: idString,
  timestampMs: fc.oneof(fc.nat(), fc.maxSafeNat()),
});
/** A mutation's common fields, with a compare-and-swap version half of the time. */
const mutationBase = fc
  .tuple(plainBase, fc.option(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), { nil: undefined }))
  .map(([b, expectedVersion]) => (expectedVersion === undefined ? b : { ...b, expectedVersion }));
const eventBytes = fc.option(fc.uint8Array({ maxLength: 8 }), { nil: undefined });
const numericId = fc.bigInt({ min: 0n, max: 18_446_744_073_709_551_615n }).map(String);

const odgmOp: fc.Arbitrary<OdgmOp> = fc.oneof(
  fc.constant<OdgmOp>({ kind: "noop" }),
  fc
    .tuple(mutationBase, entryKey, valData)
    .map(([b, key, value]): OdgmOp => ({ kind: "set_entry", ...b, key, value })),
  fc.tuple(mutationBase, entryKey).map(([b, key]): OdgmOp => ({ kind: "delete_entry", ...b, key })),
  fc
    .tuple(
      mutationBase,
      fc.uniqueArray(fc.tuple(entryKey, fc.boolean(), valData), {
        selector: ([k]) => k,
        maxLength: 8,
      }),
    )
    .map(([b, items]): OdgmOp => {
      const sets = new Map(items.filter(([, del]) => !del).map(([k, , v]) => [k, v] as const));
      const deletes = items.filter(([, del]) => del).map(([k]) => k);
      return { kind: "batch", ...b, sets, deletes };
    }),
  fc
    .tuple(
      mutationBase,
      entryMap,
      eventBytes,
      fc.constantFrom("set_object" as const, "merge_object" as const),
    )
    .map(
      ([b, entries, event, kind]): OdgmOp =>
        event === undefined ? { kind, ...b, entries } : { kind, ...b, entries, event },
    ),
  fc
    .tuple(mutationBase, eventBytes)
    .map(
      ([b, event]): OdgmOp =>
        event === undefined
          ? { kind: "set_event_config", ...b }
          : { kind: "set_event_config", ...b, event },
    ),
  mutationBase.map((b): OdgmOp => ({ kind: "delete_object", ...b })),
  fc
    .tuple(plainBase, numericId)
    .map(([b, objectId]): OdgmOp => ({ kind: "convert_legacy", ...b, objectId })),
);

/** The canonical form of an op: what decode(encode(op)) must return. */
function canonical(op: OdgmOp): OdgmOp {
  return decodeOdgmOp(encodeOdgmOp(op));
}

/** Order-insensitive comparison for maps/deletes, exact for everything else. */
function sameOp(a: OdgmOp, b: OdgmOp): void {
  const norm = (op: OdgmOp): unknown => {
    const o = { ...op } as Record<string, unknown>;
    for (const f of ["sets", "entries"]) {
      const m = o[f] as Map<string, ValData> | undefined;
      if (m) o[f] = [...m.entries()].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
    }
    if (Array.isArray(o.deletes)) o.deletes = [...(o.deletes as string[])].sort();
    return o;
  };
  expect(norm(b)).toEqual(norm(a));
}

/** Decode must either throw a RaftError or return an op that re-encodes to the same bytes. */
function decodeIsCanonicalOrRejects(bytes: Uint8Array): void {
  let op: OdgmOp;
  try {
    op = decodeOdgmOp(bytes);
  } catch (e) {
    if (!isRaftError(e)) throw e;
    return;
  }
  expect(hex(encodeOdgmOp(op))).toBe(hex(bytes));
}

describe("ODGM op codec: properties", () => {
  it("decode(encode(op)) = op", () => {
    fc.assert(
      fc.property(odgmOp, (op) => {
        sameOp(op, decodeOdgmOp(encodeOdgmOp(op)));
      }),
      { numRuns: 2000 },
    );
  });

  it("encode(decode(bytes)) = bytes for every encoding", () => {
    fc.assert(
      fc.property(odgmOp, (op) => {
        const bytes = encodeOdgmOp(op);
        expect(hex(encodeOdgmOp(decodeOdgmOp(bytes)))).toBe(hex(bytes));
        expect(canonical(op)).toEqual(decodeOdgmOp(bytes));
      }),
      { numRuns: 1000 },
    );
  });

  it("random bytes decode canonically or throw RaftError", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 40 }),
          // Bias towards a valid header so the fuzz reaches the operation bodies.
          fc
            .tuple(fc.nat({ max: 9 }), fc.uint8Array({ maxLength: 40 }))
            .map(([tag, rest]) => Uint8Array.from([1, tag, ...rest])),
        ),
        decodeIsCanonicalOrRejects,
      ),
      { numRuns: 20_000 },
    );
  });

  it("mutated valid encodings decode canonically or throw RaftError", () => {
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), bit: fc.nat({ max: 7 }) }),
      fc.record({ kind: fc.constant("set" as const), at: fc.nat(), byte: fc.nat({ max: 255 }) }),
      fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), byte: fc.nat({ max: 255 }) }),
      fc.record({ kind: fc.constant("delete" as const), at: fc.nat() }),
      fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
    );
    fc.assert(
      fc.property(odgmOp, fc.array(mutation, { minLength: 1, maxLength: 3 }), (op, muts) => {
        const b = [...encodeOdgmOp(op)];
        for (const m of muts) {
          const at = m.at % (b.length + 1);
          if (m.kind === "flip" && at < b.length) b[at] = (b[at] as number) ^ (1 << m.bit);
          else if (m.kind === "set" && at < b.length) b[at] = m.byte;
          else if (m.kind === "insert") b.splice(at, 0, m.byte);
          else if (m.kind === "delete") b.splice(at, 1);
          else if (m.kind === "truncate") b.length = at;
        }
        decodeIsCanonicalOrRejects(Uint8Array.from(b));
      }),
      { numRuns: 20_000 },
    );
  });
});

describe("ODGM op codec: decoded values own their bytes", () => {
  it("copies value and event bytes out of a Buffer input", () => {
    const op: OdgmOp = {
      kind: "set_object",
      cls: "c",
      partition: 0,
      objectId: "x",
      timestampMs: 0,
      entries: new Map([["k", val([1, 2])]]),
      event: new Uint8Array([3]),
    };
    const input = Buffer.from(encodeOdgmOp(op));
    const decoded = decodeOdgmOp(input);
    input.fill(0);
    expect(decoded).toEqual(op);
  });
});
