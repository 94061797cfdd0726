// A shard as bytes (a Raft snapshot): every record read back, at any size.
import { describe, expect, it } from "vitest";
import { concatBytes } from "./bytes.js";
import { createMemoryEngine } from "./memory-engine.js";
import { openShardState, parseShardState } from "./shard-state.js";

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
    const records = parseShardState(concatBytes(pages));
    expect(records).toHaveLength(n);
    expect(records[n - 1]).toEqual({
      keyspace: "objects",
      key: key(n - 1),
      value: Uint8Array.of((n - 1) & 0xff),
    });
  });
});
