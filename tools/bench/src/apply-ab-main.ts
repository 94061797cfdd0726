// What one replica's apply costs, this checkout against others, in one process: each
// checkout's entry store (from its sources) applies the same log (batches of 12
// `set_entry` on 10,000 cached objects by default, change log on) to its own RocksDB, in
// alternating blocks, and the CPU of each block is compared with the first checkout's
// block beside it. Alternating blocks in one process keep the machine's drift out of the
// ratio, which is the figure. For a change in the apply path: check out the base in a
// throw-away worktree (`git worktree add /tmp/base <commit>` and install it), then
//   npx -y pnpm@10.34.9 bench:apply-ab -- /tmp/base   (from the repository root; absolute paths)
// Options: `--rounds N` (blocks per checkout, default 12), `--objects N` (how many objects
// the updates are spread over, default 10,000 as in `bench:cluster`; 1 is one hot object,
// every batch updating the same entry), `--no-change-log` adds this checkout without a
// change log as one more subject.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { meanInterval, pairedRatios, spread } from "./stats.js";

const { values: args, positionals } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  allowPositionals: true,
  options: {
    rounds: { type: "string" },
    objects: { type: "string" },
    "no-change-log": { type: "boolean" },
  },
});
const ROUNDS = Number(args.rounds ?? 12);
if (!Number.isInteger(ROUNDS) || ROUNDS < 2) throw new Error("--rounds must be an integer ≥ 2");
const BATCH = 12;
const OBJECTS = Number(args.objects ?? 10_000);
if (!Number.isInteger(OBJECTS) || OBJECTS < 1) throw new Error("--objects must be an integer ≥ 1");
const BLOCK = 400;
const WARMUP_BATCHES = 3000;
const HERE = path.resolve(fileURLToPath(new URL("../../..", import.meta.url)));

interface Subject {
  readonly name: string;
  readonly store: { applyCommitted(ops: unknown[]): Promise<unknown>; close(): Promise<void> };
  readonly engine: { close(): Promise<void> };
  index: number;
  readonly cpu: number[];
}

const dir = mkdtempSync(path.join(os.tmpdir(), "odgm-apply-ab-"));
const subjects: Subject[] = [];
const specs = [
  { root: HERE, changeLog: true, name: "this checkout" },
  ...positionals.map((p) => ({ root: path.resolve(p), changeLog: true, name: path.resolve(p) })),
  ...(args["no-change-log"]
    ? [{ root: HERE, changeLog: false, name: "this checkout, no change log" }]
    : []),
];
if (specs.length < 2) throw new Error("name at least one other checkout to compare with");
for (const [i, spec] of specs.entries()) {
  const entryStore = await import(path.join(spec.root, "packages/entry-store/src/entry-store.ts"));
  const rocks = await import(path.join(spec.root, "packages/entry-store/src/rocksdb-engine.ts"));
  const engine = await rocks.openRocksEngine({ location: path.join(dir, `db-${i}`) });
  const store = await entryStore.createEntryStore({
    engine,
    shard: "apply/0",
    sync: false,
    ...(spec.changeLog ? { changeLog: {} } : {}),
  });
  subjects.push({ name: spec.name, store, engine, index: 0, cpu: [] });
}

const value = { data: new Uint8Array(16).fill(7), type: 0 };
/** The next batch of the subject's log: updates spread over every object. */
function batch(s: Subject) {
  return Array.from({ length: BATCH }, () => {
    s.index++;
    const objectId = String(1 + ((s.index * 7919) % OBJECTS));
    const op = { kind: "set_entry", objectId, key: "f0", value, timestampMs: s.index };
    return { index: s.index, op };
  });
}

try {
  for (const s of subjects)
    for (let i = 0; i < WARMUP_BATCHES; i++) await s.store.applyCommitted(batch(s));
  for (let r = 0; r < ROUNDS; r++) {
    for (const s of r % 2 === 0 ? subjects : [...subjects].reverse()) {
      const before = process.cpuUsage();
      for (let i = 0; i < BLOCK; i++) await s.store.applyCommitted(batch(s));
      const used = process.cpuUsage(before);
      s.cpu.push((used.user + used.system) / (BLOCK * BATCH));
    }
  }
  const median = (xs: number[]) => spread(xs).median;
  const base = subjects[0] as Subject;
  console.log(
    `apply of ${BATCH} set_entry per batch on ${OBJECTS} object(s), ${ROUNDS} alternating blocks of ${BLOCK} batches each`,
  );
  console.log(
    "| checkout | CPU µs per operation (median) | ratio to this checkout (median of paired blocks) | mean, 95 % CI |",
  );
  console.log("|---|---:|---:|---:|");
  for (const s of subjects) {
    const ratios = pairedRatios(s.cpu, base.cpu);
    const m = meanInterval(ratios);
    console.log(
      `| ${s.name} | ${median(s.cpu).toFixed(2)} | ${median(ratios).toFixed(3)}× | ${m.mean.toFixed(3)}× (${m.low.toFixed(3)}–${m.high.toFixed(3)}×) |`,
    );
  }
} finally {
  for (const s of subjects) {
    await s.store.close();
    await s.engine.close();
  }
  rmSync(dir, { recursive: true, force: true });
}
