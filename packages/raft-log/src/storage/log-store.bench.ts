// Synced save throughput of the RocksDB log store, against a raw synced WriteBatch of the
// same bytes on the same binding, measured in the same run.
//
//   cd packages/raft-log && vitest bench --run src/storage/log-store.bench.ts
//
// Each save persists one 128-byte entry plus the hard state (what a follower's Ready holds
// under steady load). Rates are saves/s from the mean iteration latency (fsync latency on the VM is bimodal, so
// the median swings between runs; the mean is total work over total time).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
const committer = createGroupCommitter(database);

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
let rawIndex = 0;
let singleIndex = 0;
let raw64Index = 0;
let directIndex = 0;
let groupIndex = 0;

const rows: string[] = [];

afterAll(async () => {
  const st = committer.stats();
  console.log(
    [
      "| case | saves/s (mean) | ratio to baseline |",
      "|---|---|---|",
      ...rows,
      "",
      `group committer: ${st.writes} saves in ${st.batches} synced batches, ` +
        `average ${st.averageBatchSize.toFixed(1)} per batch, max ${st.maxBatchSize}`,
    ].join("\n"),
  );
  await committer.close();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

const options = { time: 4000, warmupTime: 300 };

test("one group, one synced save at a time", async ({ bench }) => {
  const r = await bench.compare(
    bench("raw synced WriteBatch, same bytes (baseline)", async () => {
      rawIndex++;
      await database.write(rawWrites("raw", rawIndex), true);
    }),
    bench("RocksLogStore.save", async () => {
      singleIndex++;
      await single.save({ entries: [entry(singleIndex)], hardState: hs(singleIndex - 1) });
    }),
    options,
  );
  const rate = (n: Parameters<typeof r.get>[0]) => 1000 / r.get(n).latency.mean;
  const base = rate("raw synced WriteBatch, same bytes (baseline)");
  rows.push(
    `| 1 group: raw synced WriteBatch, same bytes (baseline) | ${base.toFixed(0)} | 1.00× |`,
  );
  const s = rate("RocksLogStore.save");
  rows.push(`| 1 group: RocksLogStore.save | ${s.toFixed(0)} | ${(s / base).toFixed(2)}× |`);
});

test(`${GROUPS} groups, one save each per iteration`, async ({ bench }) => {
  const RAW = `raw: one synced WriteBatch with ${GROUPS} saves' bytes (baseline)`;
  const GC = `group commit: ${GROUPS} concurrent saves`;
  const NO = `no group commit: ${GROUPS} concurrent saves`;
  const r = await bench.compare(
    bench(RAW, async () => {
      raw64Index++;
      const ops: RocksWrite[] = [];
      for (let g = 0; g < GROUPS; g++) ops.push(...rawWrites(`r${g}`, raw64Index));
      await database.write(ops, true);
    }),
    bench(GC, async () => {
      groupIndex++;
      const i = groupIndex;
      await Promise.all(grouped.map((s) => s.save({ entries: [entry(i)], hardState: hs(i - 1) })));
    }),
    bench(NO, async () => {
      directIndex++;
      const i = directIndex;
      await Promise.all(direct.map((s) => s.save({ entries: [entry(i)], hardState: hs(i - 1) })));
    }),
    options,
  );
  const rate = (n: Parameters<typeof r.get>[0]) => (GROUPS * 1000) / r.get(n).latency.mean;
  const base = rate(RAW);
  for (const n of [RAW, GC, NO] as const) {
    rows.push(
      `| ${GROUPS} groups: ${n} | ${rate(n).toFixed(0)} | ${(rate(n) / base).toFixed(2)}× |`,
    );
  }
});
