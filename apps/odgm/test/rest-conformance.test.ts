import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REST_SUITE_BODY_LIMIT, runRestSuite } from "@oprc/conformance";
import { loadConfig, startOdgm } from "../src/index.js";

// The REST conformance suite against a real node: RocksDB in a temp dir, REST over real
// HTTP/1.1 on loopback, calling the node's handlers directly (its in-process client).
runRestSuite("odgm node (RocksDB, HTTP on loopback)", {
  propertyRuns: 40,
  start: async () => {
    const dir = mkdtempSync(join(tmpdir(), "odgm-rest-"));
    const node = await startOdgm(
      loadConfig({
        ODGM_DATA_DIR: dir,
        ODGM_HTTP_HOST: "127.0.0.1",
        ODGM_HTTP_PORT: "0",
        ODGM_LOG_LEVEL: "silent",
        ODGM_MAX_MESSAGE_BYTES: String(REST_SUITE_BODY_LIMIT),
        ODGM_COLLECTION: JSON.stringify([{ name: "suite" }, { name: "order" }]),
      }),
    ).catch((err: unknown) => {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    });
    return {
      send: (method, path, init) =>
        fetch(`${node.url}${path}`, { method, ...(init ?? {}) } as RequestInit),
      close: async () => {
        await node.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
});
