// Runs the README's library example, verbatim, against a real legacy database in ./data.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { createEntryStore } from "@oprc/entry-store";
import { openRocksEngine } from "@oprc/entry-store/rocksdb";
import { ValDataSchema } from "@oprc/grpc-api/messages";
import { expect, it, vi } from "vitest";
import { runBackfill } from "./index.js";

const EXAMPLE = `const summary = await runBackfill({
  collection: "orders",
  partition: 0,
  dataDir: "./data",
  verify: true,
});
console.log(\`\${summary.converted} converted, \${summary.remaining} remaining, ok: \${summary.ok}\`);`;

it("the README example converts a legacy database", async () => {
  const readme = await readFile(new URL("../README.md", import.meta.url), "utf8");
  expect(readme).toContain(`import { runBackfill } from "@oprc/backfill";\n\n${EXAMPLE}`);

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
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    // The example, as written in the README.
    const summary = await runBackfill({
      collection: "orders",
      partition: 0,
      dataDir: "./data",
      verify: true,
    });
    console.log(
      `${summary.converted} converted, ${summary.remaining} remaining, ok: ${summary.ok}`,
    );
    expect(log).toHaveBeenCalledWith("3 converted, 0 remaining, ok: true");
    log.mockRestore();
  } finally {
    process.chdir(cwd);
    await rm(dir, { recursive: true, force: true });
  }
});
