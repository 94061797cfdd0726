// Encode/decode cost of storage keys, as ratios to a plain Buffer-based implementation of
// the same bytes measured in the same run. Run: `pnpm bench` (builds dist, then
// `vitest bench --run`) in packages/granular-key.
//
// Each benchmark function loops INNER times over 64 distinct ids of one size, so the
// harness's per-call timer overhead is spread out; figures are per key, from the fastest
// sample (the shared 2-core VM is often loaded by other jobs; the minimum is the estimator
// least disturbed by them, and baseline and codec get the same treatment).
//
// Two copies of the codec are measured: the TypeScript source as vitest loads it, and the
// built `dist/` loaded by Node's own loader (require of ESM). Vitest's module transform
// turns every cross-module call into a getter lookup (~20 ns each on this VM), which the
// shipped code does not pay; the `dist` rows are what users get.
import { createRequire } from "node:module";
import { afterAll, test } from "vitest";
import { decodeKey as srcDecodeKey } from "./decode-key.js";
import {
  encodeEntryKey as srcEncodeEntryKey,
  encodeMetadataKey as srcEncodeMetadataKey,
} from "./object-key.js";

type Codec = {
  decodeKey: typeof srcDecodeKey;
  encodeEntryKey: typeof srcEncodeEntryKey;
  encodeMetadataKey: typeof srcEncodeMetadataKey;
};
const src: Codec = {
  decodeKey: srcDecodeKey,
  encodeEntryKey: srcEncodeEntryKey,
  encodeMetadataKey: srcEncodeMetadataKey,
};
let dist: Codec | undefined;
try {
  dist = createRequire(import.meta.url)("../dist/index.js") as Codec;
} catch {
  console.warn("dist/ not built: run `pnpm build` first to measure the shipped code");
}

const INNER = 1024;
const SIZES = [8, 32, 160] as const;
const CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-._:";

function makeIds(bytes: number): string[] {
  const ids: string[] = [];
  let seed = bytes * 7919;
  for (let k = 0; k < 64; k++) {
    let s = "user-".slice(0, Math.min(5, bytes));
    while (s.length < bytes) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      s += CHARS.charAt(seed % CHARS.length);
    }
    ids.push(s);
  }
  return ids;
}

// Baseline: the obvious Buffer implementation of the same layout, without validation.
const META_TAIL = Buffer.of(0x00, 0x00);
const NUM_TAIL = Buffer.of(0x00, 0x10, 0x00, 0x00, 0x00, 0x2a);
const STR_TAIL = Buffer.of(0x00, 0x11, 0x04);
const bufMeta = (id: string): Uint8Array => Buffer.concat([Buffer.from(id), META_TAIL]);
const bufNum = (id: string): Uint8Array => Buffer.concat([Buffer.from(id), NUM_TAIL]);
const bufStr = (id: string): Uint8Array =>
  Buffer.concat([Buffer.from(id), STR_TAIL, Buffer.from("name")]);
function bufDecode(key: Uint8Array): number {
  const b = Buffer.from(key.buffer, key.byteOffset, key.byteLength);
  const nul = b.indexOf(0);
  const id = b.toString("utf8", 0, nul);
  const type = b[nul + 1];
  if (type === 0x11) {
    const len = b[nul + 2] ?? 0;
    return id.length + b.toString("utf8", nul + 3, nul + 3 + len).length;
  }
  return id.length + (type ?? 0);
}

const NAME = { str: "name" } as const;
const N42 = { numeric: 42 } as const;

let sink = 0;
function encodes(ids: string[], f: (id: string) => Uint8Array): () => void {
  return () => {
    let acc = 0;
    for (let i = 0; i < INNER; i++) acc += f(ids[i & 63] ?? "").length;
    sink += acc;
  };
}
function decodes(keys: Uint8Array[], f: (key: Uint8Array) => number): () => void {
  return () => {
    let acc = 0;
    for (let i = 0; i < INNER; i++) acc += f(keys[i & 63] ?? new Uint8Array());
    sink += acc;
  };
}
const decodeWith =
  (codec: Codec) =>
  (key: Uint8Array): number => {
    const d = codec.decodeKey(key);
    return d.id.length + (d.record === "string_entry" ? d.key.str.length : 0);
  };

const rows: string[] = [];

type Variant = { label: string; codec: Codec };
const variants: Variant[] = [{ label: "src", codec: src }];
if (dist) variants.push({ label: "dist", codec: dist });

for (const { label, codec } of variants) {
  for (const size of SIZES) {
    test(`${label}: ${size}-byte ids`, async ({ bench }) => {
      const ids = makeIds(size);
      const metaKeys = ids.map((id) => codec.encodeMetadataKey(id).slice());
      const strKeys = ids.map((id) => codec.encodeEntryKey(id, NAME).slice());
      const options = { time: 800, warmupTime: 300 };
      const r = await bench.compare(
        bench("Buffer.concat metadata", encodes(ids, bufMeta)),
        bench("encodeMetadataKey", encodes(ids, codec.encodeMetadataKey)),
        bench("Buffer.concat numeric entry", encodes(ids, bufNum)),
        bench(
          "encodeEntryKey numeric",
          encodes(ids, (id) => codec.encodeEntryKey(id, N42)),
        ),
        bench("Buffer.concat string entry", encodes(ids, bufStr)),
        bench(
          "encodeEntryKey string",
          encodes(ids, (id) => codec.encodeEntryKey(id, NAME)),
        ),
        bench("Buffer toString metadata", decodes(metaKeys, bufDecode)),
        bench("decodeKey metadata", decodes(metaKeys, decodeWith(codec))),
        bench("Buffer toString string entry", decodes(strKeys, bufDecode)),
        bench("decodeKey string entry", decodes(strKeys, decodeWith(codec))),
        options,
      );
      const ns = (name: Parameters<typeof r.get>[0]): number =>
        (r.get(name).latency.min * 1e6) / INNER;
      const pair = (
        baseline: Parameters<typeof r.get>[0],
        name: Parameters<typeof r.get>[0],
      ): void => {
        const b = ns(baseline);
        const o = ns(name);
        rows.push(
          `| ${label} | ${size} | ${name} | ${o.toFixed(1)} | ${baseline} | ${b.toFixed(1)} | ${(o / b).toFixed(2)}× |`,
        );
      };
      pair("Buffer.concat metadata", "encodeMetadataKey");
      pair("Buffer.concat numeric entry", "encodeEntryKey numeric");
      pair("Buffer.concat string entry", "encodeEntryKey string");
      pair("Buffer toString metadata", "decodeKey metadata");
      pair("Buffer toString string entry", "decodeKey string entry");
    });
  }
}

afterAll(() => {
  console.log(
    [
      "| code | id bytes | operation | ns/op | baseline (same run) | baseline ns/op | ratio |",
      "|---|---|---|---|---|---|---|",
      ...rows,
    ].join("\n"),
    `\n(sink ${sink})`,
  );
});
