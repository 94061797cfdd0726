// A shard as bytes (a Raft snapshot): every record read back, at any size.
import { describe, expect, it } from "vitest";
import { concatBytes } from "./bytes.js";
import { createMemoryEngine } from "./memory-engine.js";
import {
  EMPTY_SHARD_STATE,
  forEachShardRecords,
  openShardState,
  type ShardRecord,
} from "./shard-state.js";

describe("shard state", () => {
  it("reads a shard of 100,000 records a page at a time and parses it back", async () => {
    const kv = await createMemoryEngine().openShard("c/0");
    const n = 100_000;
    const key = (i: number) => new TextEncoder().encode(`k${String(i).padStart(6, "0")}`);
    await kv.write(
      Array.from({ length: n }, (_, i) => ({
        type: "put" as const,
        keyspace: "objects" as const,
        key: key(i),
        value: Uint8Array.of(i & 0xff),
      })),
    );
    const pages: Uint8Array[] = [];
    for await (const page of openShardState(kv)()) pages.push(page);
    // A page at a time: none holds more than one page of 1,024 records.
    expect(Math.max(...pages.map((p) => p.byteLength))).toBeLessThanOrEqual(1024 * 17);
    const records: ShardRecord[] = [];
    let windows = 0;
    await forEachShardRecords(concatBytes(pages), (w) => {
      windows++;
      records.push(...w);
    });
    // About 1 MiB at a time (17 bytes a record).
    expect(windows).toBe(Math.ceil((n * 17) / (1 << 20)));
    expect(records).toHaveLength(n);
    expect(records[n - 1]).toEqual({
      keyspace: "objects",
      key: key(n - 1),
      value: Uint8Array.of((n - 1) & 0xff),
    });
  });

  it("reads a state a range at a time, with records larger than the window, and refuses malformed ones", async () => {
    const kv = await createMemoryEngine().openShard("c/0");
    const big = new Uint8Array(3 << 20).fill(7);
    await kv.write([
      { type: "put", keyspace: "objects", key: Uint8Array.of(1), value: Uint8Array.of(1) },
      { type: "put", keyspace: "objects", key: Uint8Array.of(2), value: big },
      { type: "put", keyspace: "system", key: Uint8Array.of(3), value: Uint8Array.of(3) },
    ]);
    const pages: Uint8Array[] = [];
    for await (const page of openShardState(kv)()) pages.push(page);
    const state = concatBytes(pages);
    const ranges: number[] = [];
    const source = {
      byteLength: state.byteLength,
      subarray(start: number, end: number) {
        ranges.push(end - start);
        return state.slice(start, end);
      },
    };
    const seen: string[] = [];
    await forEachShardRecords(source, (w) => {
      for (const r of w) seen.push(`${r.keyspace}:${r.key[0]}:${r.value.byteLength}`);
    });
    expect(seen).toEqual(["objects:1:1", `objects:2:${big.byteLength}`, "system:3:1"]);
    // Never more than the window, except the one record that is larger than it.
    expect(ranges.filter((n) => n > 1 << 20)).toEqual([big.byteLength + 10]);

    const fails = async (bytes: Uint8Array, message: RegExp) =>
      expect(forEachShardRecords(bytes, () => undefined)).rejects.toThrow(message);
    await fails(state.subarray(0, state.byteLength - 3), /truncated|count/);
    await fails(state.subarray(0, 8), /no header/);
    const wrongCount = state.slice();
    wrongCount[wrongCount.byteLength - 4] = 9;
    await fails(wrongCount, /record count does not match/);
    const badKeyspace = state.slice();
    badKeyspace[10] = 9;
    await fails(badKeyspace, /unknown keyspace 9 at byte 10/);
    let empty = 0;
    await forEachShardRecords(EMPTY_SHARD_STATE, (w) => {
      empty += w.length;
    });
    expect(empty).toBe(0);
  });
});
