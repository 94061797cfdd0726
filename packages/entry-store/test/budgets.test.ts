// The deterministic part of seed 003 §10: GetEntry reads ≤ 0.6× the bytes of a
// whole-object Get of a 256-entry object. (Timed budgets live in src/entry-store.bench.ts.)
import { create } from "@bufbuild/protobuf";
import { ValDataSchema } from "@oprc/grpc-api";
import { describe, expect, it } from "vitest";
import { createEntryStore, createMemoryEngine } from "../src/index.js";
import { countingEngine } from "./counting-engine.js";

describe("seed 003 §10 bytes-read budget", () => {
  it("GetEntry reads at most 0.6× the bytes of Get(full object) of a 256-entry object", async () => {
    const engine = countingEngine(createMemoryEngine());
    const store = await createEntryStore({ engine, shard: "b/0" });
    const set: [string, ReturnType<typeof create<typeof ValDataSchema>>][] = [];
    for (let i = 0; i < 256; i++)
      set.push([`field-${i}`, create(ValDataSchema, { data: new Uint8Array(64).fill(i) })]);
    await store.batch("user-123", { set });
    engine.bytesRead = 0;
    await store.getEntry("user-123", "field-17");
    const entryBytes = engine.bytesRead;
    engine.bytesRead = 0;
    await store.getObject("user-123");
    const objectBytes = engine.bytesRead;
    expect(entryBytes / objectBytes).toBeLessThanOrEqual(0.6);
    // Far below, in fact: one metadata record and one entry versus all 256.
    expect(entryBytes / objectBytes).toBeLessThan(0.02);
  });
});
