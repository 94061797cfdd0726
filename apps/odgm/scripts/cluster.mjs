#!/usr/bin/env node
// `pnpm cluster`: a three-node ODGM cluster on loopback, for trying it out. Node N listens
// on 127.0.0.1:700N with its data under ./data/node-N; every node is a member of the
// metadata group, and collections created with shard_type "raft" replicate across them.
// SIGTERM or SIGINT (Ctrl-C) stops all three gracefully; the data stays for the next run.
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { NODE_FLAGS } from "./node-flags.mjs";

const bin = join(dirname(fileURLToPath(import.meta.url)), "..", "dist", "bin", "odgm.js");
const ids = [1, 2, 3];
const members = ids.map((id) => `${id}=http://127.0.0.1:${7000 + id}`).join(",");
const children = ids.map((id) => {
  const dataDir = resolve("data", `node-${id}`);
  mkdirSync(dataDir, { recursive: true });
  // The real node binary (this process's), so a signal reaches the service itself; the
  // flags `pnpm odgm` runs it with.
  const child = spawn(process.execPath, [...NODE_FLAGS, bin], {
    env: {
      ...process.env,
      ODGM_NODE_ID: String(id),
      ODGM_MEMBERS: members,
      ODGM_HTTP_HOST: "127.0.0.1",
      ODGM_HTTP_PORT: String(7000 + id),
      ODGM_DATA_DIR: dataDir,
    },
    stdio: ["ignore", "inherit", "inherit"],
  });
  child.on("exit", (code, signal) => {
    process.stderr.write(`cluster: node ${id} exited (${code ?? signal})\n`);
  });
  return child;
});
process.stderr.write(
  `cluster: nodes on ${ids.map((id) => `http://127.0.0.1:${7000 + id}`).join(", ")}; data under ./data/node-N; Ctrl-C stops\n`,
);
let stopping = false;
const stop = (signal) => {
  if (stopping) {
    for (const c of children) c.kill("SIGKILL");
    return;
  }
  stopping = true;
  for (const c of children) c.kill(signal);
};
process.on("SIGTERM", () => stop("SIGTERM"));
process.on("SIGINT", () => stop("SIGTERM"));
await Promise.all(
  children.map((c) => new Promise((r) => (c.exitCode !== null ? r() : c.on("exit", r)))),
);
process.exit(0);
