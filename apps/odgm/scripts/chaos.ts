// pnpm chaos [--minutes N] [--nodes 3] [--seed S]
// The linearizability chaos run, for as long as you like: a real cluster on loopback behind
// a fault proxy, a register workload, kill -9 and partition faults; every history is
// checked with raft-log's WGL checker, one per round of 30 s. A failing (or undecided)
// history is written to a JSON file whose path is printed, for replay with
// `checkRegisterHistory(readRegisterHistory(path))` (test/fixtures/register-workload.ts).
// Exits 1 on any failure.
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CollectionService } from "@oprc/grpc-api";
import { startCluster } from "../test/fixtures/cluster.js";
import { createRaftCollection } from "../test/fixtures/cluster-probe.js";
import { runNemesis } from "../test/fixtures/nemesis.js";
import { checkRegisterHistory, runRegisterWorkload } from "../test/fixtures/register-workload.js";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: { minutes: { type: "string" }, nodes: { type: "string" }, seed: { type: "string" } },
});
const minutes = Number(values.minutes ?? 5);
const n = Number(values.nodes ?? 3);
let seed = Number(values.seed ?? Date.now() % 100_000);
const cluster = await startCluster({
  ids: Array.from({ length: n }, (_, i) => i + 1),
  faultProxy: true,
});
let failed = 0;
try {
  await cluster.waitReady();
  const admin = createClient(CollectionService, createGrpcTransport({ baseUrl: cluster.url(1) }));
  await createRaftCollection(cluster, admin, { name: "kv", replicaCount: Math.min(3, n) });
  const end = Date.now() + minutes * 60_000;
  for (let round = 1; Date.now() < end; round++, seed++) {
    let done!: () => void;
    const until = new Promise<void>((r) => {
      done = r;
    });
    const workload = runRegisterWorkload({
      urls: () => cluster.ids.map((id) => cluster.url(id)),
      collection: "kv",
      keys: 3,
      keyPrefix: `round-${round}`,
      clients: 6,
      until,
      seed,
    });
    const faults = await runNemesis(cluster, 30, seed);
    done();
    const result = await workload;
    cluster.proxy?.heal();
    const dump = join(tmpdir(), `odgm-chaos-round-${round}-seed-${seed}.json`);
    const check = checkRegisterHistory(result.history, dump);
    process.stdout.write(
      `round ${round} seed ${seed}: ${result.history.length} operations, ${result.unknown} indeterminate, faults ${faults.length}: ${check.verdict} in ${check.steps} steps${check.verdict === "ok" ? "" : ` — history in ${dump}`}\n`,
    );
    if (check.verdict !== "ok") failed++;
  }
} finally {
  await cluster.close();
}
process.stdout.write(
  failed === 0 ? "chaos: every history linearizable\n" : `chaos: ${failed} round(s) failed\n`,
);
process.exit(failed === 0 ? 0 : 1);
