// Synced save throughput of the RocksDB log store, against a raw synced WriteBatch of the
// same bytes on the same binding, measured in the same run.
//
//   cd packages/raft-log && vitest bench --run src/storage/log-store.bench.ts
//
// Each save persists one 128-byte entry plus the hard state (what a follower's Ready holds
// under steady load). The cases run interleaved, round after round (the VM is shared and
// its fsync latency swings by 10x over seconds; interleaving gives every case the same
// disk weather), and each rate is total saves over total time. Each case also records
// the event loop's p99 delay while it ran: how long the JS thread of the Raft groups was
// blocked.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterAll, test } from "vitest";
import type { Entry } from "../types.js";
import { createGroupCommitter } from "./group-committer.js";
import {
  encodeEntryValue,
  encodeHardState,
  entryKey,
  groupPrefix,
  RecordType,
  recordKey,
} from "./log-record-codec.js";
import { openRocksLogDatabase, type RocksWrite } from "./rocks-log-database.js";
import { createRocksLogStore, type RocksLogStore } from "./rocks-log-store.js";

const GROUPS = 64;
const payload = new Uint8Array(128).fill(7);
const dir = mkdtempSync(join(tmpdir(), "raft-log-bench-"));
const database = await openRocksLogDatabase({ path: dir });
const committer = createGroupCommitter(database, { thread: "worker" });
const mainCommitter = createGroupCommitter(database, { thread: "main" });

const entry = (index: number): Entry => ({ index, term: 1, type: "normal", data: payload });
const hs = (commit: number) => ({ term: 1, vote: 1, commit });

/** The exact records RocksLogStore.save writes for one entry + hard state. */
function rawWrites(groupId: string, index: number): RocksWrite[] {
  const prefix = groupPrefix(groupId);
  return [
    { type: "put", key: entryKey(prefix, index), value: encodeEntryValue(entry(index)) },
    {
      type: "put",
      key: recordKey(prefix, RecordType.hardState),
      value: encodeHardState(hs(index - 1)),
    },
  ];
}

const single = await createRocksLogStore({ database, groupId: "single" });
const direct = await Promise.all(
  Array.from({ length: GROUPS }, (_, g) => createRocksLogStore({ database, groupId: `d${g}` })),
);
const grouped: RocksLogStore[] = await Promise.all(
  Array.from({ length: GROUPS }, (_, g) =>
    createRocksLogStore({ database, groupId: `c${g}`, committer }),
  ),
);
const groupedMain: RocksLogStore[] = await Promise.all(
  Array.from({ length: GROUPS }, (_, g) =>
    createRocksLogStore({ database, groupId: `m${g}`, committer: mainCommitter }),
  ),
);
let mainIndex = 0;
let rawIndex = 0;
let singleIndex = 0;
let raw64Index = 0;
let directIndex = 0;
let groupIndex = 0;

const ROUNDS = 8;
const ROUND_MS = 400;

interface Case {
  readonly name: string;
  readonly baseline: string;
  readonly saves: number;
  readonly run: () => Promise<void>;
  ms: number;
  n: number;
  p99: number[];
}

const cases: Case[] = [
  {
    name: "1 group: raw synced WriteBatch, same bytes (baseline)",
    baseline: "",
    saves: 1,
    run: async () => {
      rawIndex++;
      await database.write(rawWrites("raw", rawIndex), true);
    },
  },
  {
    name: "1 group: RocksLogStore.save, no committer",
    baseline: "1 group: raw synced WriteBatch, same bytes (baseline)",
    saves: 1,
    run: async () => {
      singleIndex++;
      await single.save({ entries: [entry(singleIndex)], hardState: hs(singleIndex - 1) });
    },
  },
  {
    name: `${GROUPS} groups: raw, one synced WriteBatch with all ${GROUPS} saves' bytes (baseline)`,
    baseline: "",
    saves: GROUPS,
    run: async () => {
      raw64Index++;
      const ops: RocksWrite[] = [];
      for (let g = 0; g < GROUPS; g++) ops.push(...rawWrites(`r${g}`, raw64Index));
      await database.write(ops, true);
    },
  },
  {
    name: `${GROUPS} groups: group commit on a worker thread, ${GROUPS} concurrent saves`,
    baseline: `${GROUPS} groups: raw, one synced WriteBatch with all ${GROUPS} saves' bytes (baseline)`,
    saves: GROUPS,
    run: async () => {
      groupIndex++;
      const i = groupIndex;
      await Promise.all(grouped.map((s) => s.save({ entries: [entry(i)], hardState: hs(i - 1) })));
    },
  },
  {
    name: `${GROUPS} groups: group commit on the main thread, ${GROUPS} concurrent saves`,
    baseline: `${GROUPS} groups: raw, one synced WriteBatch with all ${GROUPS} saves' bytes (baseline)`,
    saves: GROUPS,
    run: async () => {
      mainIndex++;
      const i = mainIndex;
      await Promise.all(
        groupedMain.map((s) => s.save({ entries: [entry(i)], hardState: hs(i - 1) })),
      );
    },
  },
  {
    name: `${GROUPS} groups: no group commit, ${GROUPS} concurrent saves (${GROUPS} synced batches)`,
    baseline: `${GROUPS} groups: raw, one synced WriteBatch with all ${GROUPS} saves' bytes (baseline)`,
    saves: GROUPS,
    run: async () => {
      directIndex++;
      const i = directIndex;
      await Promise.all(direct.map((s) => s.save({ entries: [entry(i)], hardState: hs(i - 1) })));
    },
  },
].map((c) => ({ ...c, ms: 0, n: 0, p99: [] }));

afterAll(async () => {
  await database.close(); // closes both committers first
  rmSync(dir, { recursive: true, force: true });
});

test("synced saves per second, interleaved rounds", { timeout: 600_000 }, async () => {
  for (const c of cases) for (let i = 0; i < 5; i++) await c.run(); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cases) {
      const h = monitorEventLoopDelay({ resolution: 1 });
      h.enable();
      const t0 = performance.now();
      let n = 0;
      while (performance.now() - t0 < ROUND_MS) {
        await c.run();
        n++;
      }
      c.ms += performance.now() - t0;
      c.n += n;
      h.disable();
      c.p99.push(h.percentile(99) / 1e6);
    }
  }
  const rate = (c: Case) => (c.n * c.saves * 1000) / c.ms;
  const byName = new Map(cases.map((c) => [c.name, c]));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? 0;
  const rows = cases.map((c) => {
    const base = c.baseline === "" ? c : (byName.get(c.baseline) as Case);
    // The loop-delay monitor only samples when the loop turns; cases that never leave the
    // microtask queue (raw, no committer) have no samples, so their column is empty.
    const p99 = c.name.includes("group commit on") ? median(c.p99).toFixed(1) : "–";
    return `| ${c.name} | ${rate(c).toFixed(0)} | ${(rate(c) / rate(base)).toFixed(2)}× | ${p99} |`;
  });
  console.log(
    [
      "| case | saves/s | ratio to baseline | event-loop delay p99 (ms, median of rounds) |",
      "|---|---|---|---|",
      ...rows,
      "",
      ...[committer.stats(), mainCommitter.stats()].map(
        (c) =>
          `group committer (${c.thread}): ${c.writes} saves in ${c.batches} synced batches, ` +
          `average ${c.averageBatchSize.toFixed(1)} per batch, max ${c.maxBatchSize}`,
      ),
    ].join("\n"),
  );
});
