// Long mode of the deterministic simulator:
//   pnpm --filter @oprc/raft-log sim --seeds N [--start S] [--nodes a-b] [--ticks T]
//     [--trace] [--trace-messages] [--silent-drops | --reporting] [--no-commit-rule] [--skip-known]
//     [--stop-on-failure] [--json] [--quiet]
// Transport: by default each seed decides whether lost messages are reported to the sender
// (about 70 %) or lost silently; --silent-drops makes every seed silent, --reporting none.
// Prints progress every 500 seeds, each failure with its replay command, and a summary;
// exits 1 when a seed failed. `--json` prints one summary line (used by the CI test and the
// mutation runner).
import { parseArgs } from "node:util";
import { KNOWN_CORE_BUG_SEEDS } from "./known-core-bugs.js";
import { nodesForSeed, replayCommand, runSimulation } from "./simulator.js";

const { values } = parseArgs({
  options: {
    seeds: { type: "string", default: "1000" },
    start: { type: "string", default: "1" },
    nodes: { type: "string", default: "3-7" },
    ticks: { type: "string" },
    trace: { type: "boolean", default: false },
    "silent-drops": { type: "boolean", default: false },
    reporting: { type: "boolean", default: false },
    "trace-messages": { type: "boolean", default: false },
    "no-commit-rule": { type: "boolean", default: false },
    "stop-on-failure": { type: "boolean", default: false },
    json: { type: "boolean", default: false },
    quiet: { type: "boolean", default: false },
    "skip-known": { type: "boolean", default: false },
  },
});
const seeds = Number(values.seeds);
const start = Number(values.start);
const [lo, hi] = (values.nodes ?? "3-7").split("-").map(Number) as [number, number?];
const minNodes = lo;
const maxNodes = hi ?? lo;
if (values["silent-drops"] && values.reporting) {
  console.error("--silent-drops and --reporting exclude each other");
  process.exit(2);
}
const silentDrops: boolean | undefined = values["silent-drops"]
  ? true
  : values.reporting
    ? false
    : undefined;
const t0 = performance.now();
let failures = 0;
let unknown = 0;
const unknownSeeds: number[] = [];
let ops = 0;
const first: { seed: number; check: string; message: string }[] = [];
for (let i = 0; i < seeds; i++) {
  const seed = start + i;
  if (values["skip-known"] && KNOWN_CORE_BUG_SEEDS.has(seed)) continue;
  const r = runSimulation({
    seed,
    minNodes,
    maxNodes,
    ...(values.ticks !== undefined ? { ticks: Number(values.ticks) } : {}),
    ...(silentDrops !== undefined ? { silentDrops } : {}),
    ...(values["trace-messages"] ? { traceMessages: true } : {}),
    ...(values["no-commit-rule"] ? { commitRuleCheck: false } : {}),
    ...(values.trace ? { trace: (l: string) => console.log(l) } : {}),
  });
  ops += r.stats.opsOk;
  if (r.verdict === "unknown") {
    unknown++;
    unknownSeeds.push(seed);
  }
  if (values.trace)
    console.log(JSON.stringify({ seed, nodes: r.nodes, verdict: r.verdict, stats: r.stats }));
  if (r.failure !== undefined) {
    failures++;
    first.push({ seed, check: r.failure.check, message: r.failure.message });
    if (!values.json) {
      console.log(
        `FAIL seed ${seed} (${nodesForSeed(seed, minNodes, maxNodes)} nodes) [${r.failure.check}] at tick ${r.failure.tick}: ${r.failure.message}`,
      );
      console.log(
        `  replay: ${replayCommand(seed, minNodes, maxNodes, {
          ...(values.ticks !== undefined ? { ticks: Number(values.ticks) } : {}),
          ...(silentDrops !== undefined ? { silentDrops } : {}),
        })}`,
      );
    }
    if (values["stop-on-failure"]) break;
  }
  if (!values.quiet && !values.json && (i + 1) % 500 === 0) {
    const s = ((performance.now() - t0) / 1000).toFixed(1);
    console.log(`${i + 1}/${seeds} seeds, ${failures} failures, ${s}s`);
  }
}
const secs = (performance.now() - t0) / 1000;
if (values.json) {
  console.log(JSON.stringify({ seeds, start, failures, unknown, unknownSeeds, ops, secs, first }));
} else {
  console.log(
    `done: ${seeds} seeds from ${start} (${minNodes}-${maxNodes} nodes) in ${secs.toFixed(1)}s: ${failures} failures, ${unknown} unknown linearizability verdicts${unknown > 0 ? ` (seeds ${unknownSeeds.join(", ")})` : ""}, ${ops} client ops acknowledged`,
  );
}
process.exitCode = failures > 0 ? 1 : 0;
