import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { openRocksEngine } from "@oprc/entry-store/rocksdb";
import { CreateCollectionRequestSchema } from "@oprc/grpc-api";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../config.js";
import { createOdgmMetrics } from "../observability/metrics.js";
import { createShardManager, type ShardReplica } from "./shard-manager.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

describe("the shard manager", () => {
  it("serves each raft partition as soon as it is open, before the rest of its collection", async () => {
    const dir = await mkdtemp(join(tmpdir(), "odgm-shards-"));
    dirs.push(dir);
    const engine = await openRocksEngine({ location: dir });
    // Partition 2's replica does not start until released: partitions 0 and 1 are open by then.
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const replica: ShardReplica = {
      isLeader: true,
      mutate: () => Promise.reject(new Error("not used")),
      read: (_, run) => run(),
    };
    const manager = createShardManager({
      engine,
      sync: false,
      dualWrite: false,
      legacyFallback: false,
      prefetchLimit: 64,
      maxGetEntries: 1024,
      maxKeyLength: 256,
      events: loadConfig({}).events,
      sink: { dispatch: () => undefined },
      metrics: createOdgmMetrics(),
      replication: {
        hosts: async () => true,
        replicate: async (_spec, partition) => {
          if (partition === 2) await held;
          return replica;
        },
      },
    });
    const spec = create(CreateCollectionRequestSchema, {
      name: "r",
      partitionCount: 4,
      shardType: "raft",
      replicaCount: 1,
    });
    const adding = manager.addCollection(spec);
    const served = () => [0, 1, 2, 3].map((p) => manager.get("r", p) !== undefined);
    for (let i = 0; i < 500 && !served()[1]; i++) await new Promise((r) => setTimeout(r, 10));
    expect(served()).toEqual([true, true, false, false]);
    // Listed (so compacted, counted and closed on shutdown) as soon as served.
    expect(manager.all().map((s) => s.partition)).toEqual([0, 1]);
    release();
    await adding;
    expect(served()).toEqual([true, true, true, true]);
    expect(manager.all().map((s) => s.partition)).toEqual([0, 1, 2, 3]);
    await manager.close();
    await engine.close();
  });
});
