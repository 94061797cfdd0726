// Mutation validation of the simulator (spec/raft.md, "Beyond scenarios" 3): for each
// reintroduced bug, copy src/ to a temporary directory, patch the core, and run the simulator
// of the copy until a seed fails. Usage (from the package directory):
//   pnpm --filter @oprc/raft-log mutations [--seeds 1000] [--only name,...] [--jobs 2]
//     [--no-commit-rule]   (end-to-end checks only: invariants, durability, liveness, WGL)
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { MUTATIONS, type Mutation, mutatedCopy } from "./mutations.js";
import { runSimulation } from "./simulator.js";

const { values } = parseArgs({
  options: {
    seeds: { type: "string", default: "1000" },
    start: { type: "string", default: "1" },
    only: { type: "string" },
    jobs: { type: "string", default: "2" },
    "no-commit-rule": { type: "boolean", default: false },
  },
});
const here = dirname(fileURLToPath(import.meta.url));
const srcDir = join(here, "..");
// Absolute: the mutants run from a temporary copy of src/ with no node_modules beside it.
const hooks = createRequire(import.meta.url).resolve("@oprc/test-config/ts-hooks");
const only = values.only?.split(",");
const todo = MUTATIONS.filter((m) => only === undefined || only.includes(m.name));

interface Outcome {
  name: string;
  caught: boolean;
  seed?: number;
  check?: string;
  message?: string;
  seedsRun: number;
  secs: number;
}

interface ChildResult {
  secs: number;
  first: { seed: number; check: string; message: string }[];
}

function runChild(src: string, start: number, seeds: number): Promise<ChildResult> {
  const args = [
    "--experimental-transform-types",
    "--disable-warning=ExperimentalWarning",
    "--import",
    hooks,
    join(src, "sim", "cli.ts"),
    "--seeds",
    String(seeds),
    "--start",
    String(start),
    "--stop-on-failure",
    "--skip-known",
    "--json",
    ...(values["no-commit-rule"] ? ["--no-commit-rule"] : []),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.on("error", reject);
    child.on("close", () => {
      try {
        resolve(JSON.parse(out.trim().split("\n").pop() ?? "") as ChildResult);
      } catch {
        reject(new Error(`unreadable simulator output: ${out.slice(-500)}`));
      }
    });
  });
}

/**
 * Runs the mutant from seed `start` until a seed fails on the mutant but passes on the real
 * core (a seed failing on both shows nothing about the mutant and is skipped).
 */
async function runOne(m: Mutation): Promise<Outcome> {
  const { src, cleanup } = mutatedCopy(srcDir, m);
  const first = Number(values.start ?? 1);
  const last = first + Number(values.seeds ?? 1000) - 1;
  let secs = 0;
  try {
    for (let start = first; start <= last; ) {
      const r = await runChild(src, start, last - start + 1);
      secs += r.secs;
      const f = r.first[0];
      if (f === undefined) break;
      const base = runSimulation({
        seed: f.seed,
        ...(values["no-commit-rule"] ? { commitRuleCheck: false } : {}),
      });
      if (base.failure === undefined) {
        return {
          name: m.name,
          caught: true,
          seed: f.seed,
          check: f.check,
          message: f.message,
          seedsRun: f.seed - first + 1,
          secs,
        };
      }
      console.log(`  ${m.name}: seed ${f.seed} fails on the real core too; skipped`);
      start = f.seed + 1;
    }
    return { name: m.name, caught: false, seedsRun: last - first + 1, secs };
  } finally {
    cleanup();
  }
}

const results: Outcome[] = [];
const queue = [...todo];
const workers = Array.from({ length: Math.max(1, Number(values.jobs)) }, async () => {
  for (let m = queue.shift(); m !== undefined; m = queue.shift()) {
    const r = await runOne(m);
    results.push(r);
    console.log(
      r.caught
        ? `CAUGHT ${r.name}: seed ${r.seed} (${r.seedsRun} seeds, ${r.secs.toFixed(1)}s) by ${r.check}: ${r.message?.split("\n")[0]}`
        : `MISSED ${r.name}: no failure in ${r.seedsRun} seeds (${r.secs.toFixed(1)}s)`,
    );
  }
});
await Promise.all(workers);
console.log("\n| mutation | caught | first seed | check |\n| --- | --- | --- | --- |");
for (const m of todo) {
  const r = results.find((x) => x.name === m.name);
  if (r === undefined) continue;
  console.log(`| ${r.name} | ${r.caught ? "yes" : "NO"} | ${r.seed ?? "-"} | ${r.check ?? "-"} |`);
}
process.exitCode = results.every((r) => r.caught) ? 0 : 1;
