// Hot-path cost of normalization and hashing, as ratios to String.prototype.toLowerCase on the
// same inputs in the same run. Run: `vitest bench --run` in packages/oprc-id.
//
// Each benchmark function runs an inner loop over 64 distinct ids of the same size, so the
// per-call timer overhead of the harness is spread over INNER calls; figures are per id.
import { afterAll, test } from "vitest";
import { hashId, partitionOf } from "./hash-id.js";
import { normalizeObjectId } from "./normalize-id.js";

const INNER = 1024;
const SIZES = [8, 32, 160] as const;
const CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-._:";

// Deterministic ids of exactly `bytes` bytes: a prefix like "user-" then varied characters.
function makeIds(bytes: number, mixedCase: boolean): string[] {
  const ids: string[] = [];
  let seed = bytes * 7919;
  for (let k = 0; k < 64; k++) {
    let s = "user-".slice(0, Math.min(5, bytes));
    while (s.length < bytes) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      s += CHARS.charAt(seed % CHARS.length);
    }
    if (mixedCase) s = s.charAt(0).toUpperCase() + s.slice(1, -1) + s.slice(-1).toUpperCase();
    // Flat (sequential) strings, as a protobuf or URL decoder produces; not concatenation ropes.
    ids.push(Buffer.from(s, "latin1").toString("latin1"));
  }
  return ids;
}

let sink = 0;
// One function literal per operation, so each inner call site stays monomorphic (closures made
// by a shared factory would share type feedback and understate what callers see).
function loopLower(ids: string[]): void {
  let acc = 0;
  for (let i = 0; i < INNER; i++) acc += (ids[i & 63] ?? "").toLowerCase().length;
  sink += acc;
}
// The floor for any JavaScript per-character check: read every code unit, do nothing else.
function loopScan(ids: string[]): void {
  let acc = 0;
  for (let i = 0; i < INNER; i++) {
    const s = ids[i & 63] ?? "";
    for (let j = 0; j < s.length; j++) acc += s.charCodeAt(j);
  }
  sink += acc;
}
function loopNormalize(ids: string[]): void {
  let acc = 0;
  for (let i = 0; i < INNER; i++) acc += normalizeObjectId(ids[i & 63] ?? "").length;
  sink += acc;
}
const unicodeOptions = { unicode: true } as const;
function loopNormalizeUnicode(ids: string[]): void {
  let acc = 0;
  for (let i = 0; i < INNER; i++)
    acc += normalizeObjectId(ids[i & 63] ?? "", unicodeOptions).length;
  sink += acc;
}
function loopHash(ids: string[]): void {
  let zeros = 0;
  for (let i = 0; i < INNER; i++) if (hashId(ids[i & 63] ?? "") === 0n) zeros++;
  sink += zeros;
}
function loopNormalizeHash(ids: string[]): void {
  let zeros = 0;
  for (let i = 0; i < INNER; i++) if (hashId(normalizeObjectId(ids[i & 63] ?? "")) === 0n) zeros++;
  sink += zeros;
}
function loopPartition(ids: string[]): void {
  let acc = 0;
  for (let i = 0; i < INNER; i++) acc += partitionOf(ids[i & 63] ?? "", 64);
  sink += acc;
}

const ROUNDS = 5;
const NAMES = [
  "toLowerCase",
  "charCodeAt scan (floor)",
  "normalizeObjectId",
  "normalizeObjectId unicode",
  "hashId",
  "normalize + hashId",
  "partitionOf(id, 64)",
  "toLowerCase mixed-case",
  "normalizeObjectId mixed-case",
  "normalize + hashId mixed-case",
] as const;
const rows: string[] = [];

for (const size of SIZES) {
  test(`${size}-byte ids`, async ({ bench }) => {
    const ids = makeIds(size, false);
    const mixed = makeIds(size, true);
    const options = { time: 300, warmupTime: 100 };
    // The VM is shared, so every figure is the fastest sample (one sample = INNER calls) over
    // ROUNDS runs of the whole group: a sample is ~0.1 ms, short enough to fall between the
    // preemptions that inflate the mean under load. The median is printed beside it.
    const best = new Map<string, number>();
    const median = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      const r = await bench.compare(
        bench("toLowerCase", () => loopLower(ids)),
        bench("charCodeAt scan (floor)", () => loopScan(ids)),
        bench("normalizeObjectId", () => loopNormalize(ids)),
        bench("normalizeObjectId unicode", () => loopNormalizeUnicode(ids)),
        bench("hashId", () => loopHash(ids)),
        bench("normalize + hashId", () => loopNormalizeHash(ids)),
        bench("partitionOf(id, 64)", () => loopPartition(ids)),
        bench("toLowerCase mixed-case", () => loopLower(mixed)),
        bench("normalizeObjectId mixed-case", () => loopNormalize(mixed)),
        bench("normalize + hashId mixed-case", () => loopNormalizeHash(mixed)),
        options,
      );
      for (const name of NAMES) {
        const { min, p50 } = r.get(name).latency;
        best.set(name, Math.min(best.get(name) ?? Number.POSITIVE_INFINITY, (min * 1e6) / INNER));
        median.set(
          name,
          Math.min(median.get(name) ?? Number.POSITIVE_INFINITY, (p50 * 1e6) / INNER),
        );
      }
    }
    const ns = (name: string): number => best.get(name) ?? Number.NaN;
    const base = ns("toLowerCase");
    const baseMixed = ns("toLowerCase mixed-case");
    const line = (name: string, against: number): string =>
      `| ${size} | ${name} | ${ns(name).toFixed(1)} | ${(ns(name) / against).toFixed(2)}× | ${(median.get(name) ?? Number.NaN).toFixed(1)} |`;
    for (const name of NAMES) rows.push(line(name, name.endsWith("mixed-case") ? baseMixed : base));
  });
}

afterAll(() => {
  const header = [
    "| bytes | operation | ns/op (fastest sample) | ratio to toLowerCase (same input) | ns/op (median sample) |",
    "|---|---|---|---|---|",
  ];
  console.log([...header, ...rows].join("\n"), `\n(sink ${sink})`);
});
