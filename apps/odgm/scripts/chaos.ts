// pnpm chaos [--minutes N] [--nodes 3] [--seed S] [--env KEY=VALUE ...]
// The linearizability chaos run, for as long as you like: a real cluster on loopback behind
// a fault proxy, a register workload, kill -9 and partition faults; every history is
// checked with raft-log's WGL checker, one per round of 30 s. A failing (or undecided)
// history is written to a JSON file whose path is printed, for replay with
// `checkRegisterHistory(readRegisterHistory(path))` (test/fixtures/register-workload.ts).
// The CI test (test/cluster-chaos.test.ts) runs two short rounds of the same
// (test/fixtures/chaos-round.ts). `--env` sets a variable of every node, e.g.
// `--env ODGM_RAFT_COMPACT_ENTRIES=200` to compact and install snapshots under the faults.
// Exits 1 on any failure.
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CollectionService } from "@oprc/grpc-api";
import { runChaosRound } from "../test/fixtures/chaos-round.js";
import { startCluster } from "../test/fixtures/cluster.js";
import { createRaftCollection } from "../test/fixtures/cluster-probe.js";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    minutes: { type: "string" },
    nodes: { type: "string" },
    seed: { type: "string" },
    env: { type: "string", multiple: true },
  },
});
const env: Record<string, string> = {};
for (const kv of values.env ?? []) {
  const at = kv.indexOf("=");
  if (!/^ODGM_[A-Z0-9_]+$/.test(kv.slice(0, at))) {
    process.stderr.write(`chaos: --env wants ODGM_NAME=value, got ${JSON.stringify(kv)}\n`);
    process.exit(2);
  }
  env[kv.slice(0, at)] = kv.slice(at + 1);
}
const minutes = Number(values.minutes ?? 5);
const n = Number(values.nodes ?? 3);
let seed = Number(values.seed ?? Date.now() % 100_000);
const cluster = await startCluster({
  ids: Array.from({ length: n }, (_, i) => i + 1),
  faultProxy: true,
  env,
});
let failed = 0;
try {
  await cluster.waitReady();
  const admin = createClient(CollectionService, createGrpcTransport({ baseUrl: cluster.url(1) }));
  await createRaftCollection(cluster, admin, { name: "kv", replicaCount: Math.min(3, n) });
  const end = Date.now() + minutes * 60_000;
  for (let round = 1; Date.now() < end; round++, seed++) {
    const r = await runChaosRound(cluster, { collection: "kv", round, seconds: 30, seed });
    process.stdout.write(`${r.summary}\n`);
    if (r.check.verdict !== "ok") failed++;
  }
} finally {
  await cluster.close();
}
process.stdout.write(
  failed === 0 ? "chaos: every history linearizable\n" : `chaos: ${failed} round(s) failed\n`,
);
process.exit(failed === 0 ? 0 : 1);
