// Runs the README's library example as written (@oprc/test-config/readme) in a folder whose
// ./data holds a legacy database of three objects.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { createEntryStore } from "@oprc/entry-store";
import { openRocksEngine } from "@oprc/entry-store/rocksdb";
import { ValDataSchema } from "@oprc/grpc-api/messages";
import { runReadmeExample } from "@oprc/test-config/readme";
import { expect, it } from "vitest";

it("the README example converts a legacy database", { timeout: 30_000 }, async () => {
  const cwd = process.cwd();
  const dir = await mkdtemp(join(tmpdir(), "odgm-backfill-readme-"));
  try {
    // A node with ODGM_ENABLE_GRANULAR_STORAGE=false wrote three legacy blobs.
    const engine = await openRocksEngine({ location: join(dir, "data") });
    const legacy = await createEntryStore({ engine, shard: "orders/0", granular: false });
    for (const id of ["1", "2", "3"]) {
      await legacy.setEntry(id, "7", create(ValDataSchema, { data: new TextEncoder().encode(id) }));
    }
    await legacy.close();
    await engine.close();

    process.chdir(dir);
    const { expected, printed } = await runReadmeExample({
      readme: new URL("../README.md", import.meta.url),
      packageName: "@oprc/backfill",
      entry: new URL("./index.ts", import.meta.url),
      heading: "## As a library",
    });
    expect(expected).toEqual(["3 converted, 0 remaining, ok: true"]);
    expect(printed).toEqual(expected);
  } finally {
    process.chdir(cwd);
    await rm(dir, { recursive: true, force: true });
  }
});
