// The fault script's arguments and its results table: pure functions, tested beside.
import { parseArgs } from "node:util";

/** The cases, in the order they run. */
export const CASES = [
  "flood",
  "slowloris",
  "idle",
  "deadlines",
  "enospc",
  "readonly",
  "sigterm",
] as const;
/** One case's name. */
export type CaseName = (typeof CASES)[number];

/** What a run was asked for. */
export interface FaultOptions {
  /** Smaller counts (about a minute in all). */
  readonly quick: boolean;
  /** The cases to run (all by default). */
  readonly only: readonly CaseName[];
}

/**
 * Parses the script's arguments: `--quick`, and `--only <case>` (repeatable, or
 * comma-separated). Throws naming the unknown case.
 *
 * @example
 * parseFaultArgs(["--only", "flood,sigterm"]).only; // ["flood", "sigterm"]
 */
export function parseFaultArgs(argv: readonly string[]): FaultOptions {
  const { values } = parseArgs({
    args: argv.filter((a) => a !== "--"),
    options: {
      quick: { type: "boolean", default: false },
      only: { type: "string", multiple: true },
    },
    strict: true,
  });
  const asked = (values.only ?? []).flatMap((v) => v.split(",")).filter((v) => v !== "");
  for (const a of asked) {
    if (!(CASES as readonly string[]).includes(a))
      throw new Error(`unknown case ${JSON.stringify(a)}: one of ${CASES.join(", ")}`);
  }
  return {
    quick: values.quick === true,
    only: asked.length === 0 ? CASES : CASES.filter((c) => asked.includes(c)),
  };
}

/** The outcome of one case. */
export interface CaseResult {
  readonly name: CaseName;
  /** What was done to the node. */
  readonly action: string;
  /** What the node did. */
  readonly outcome: string;
  /** `pass`, `fail`, or `skipped` (with the reason in `outcome`). */
  readonly verdict: "pass" | "fail" | "skipped";
}

/** A markdown table of the results (cells escaped for `|` and newlines). */
export function renderResults(results: readonly CaseResult[]): string {
  const esc = (s: string): string => s.replaceAll("|", "\\|").replaceAll("\n", " ");
  const lines = ["| case | what was done | what the node did | verdict |", "|---|---|---|---|"];
  for (const r of results) {
    lines.push(`| ${r.name} | ${esc(r.action)} | ${esc(r.outcome)} | ${r.verdict} |`);
  }
  return `${lines.join("\n")}\n`;
}

/** The exit code of a run: 1 when any case failed, else 0 (skipped cases do not fail it). */
export function exitCodeOf(results: readonly CaseResult[]): number {
  return results.some((r) => r.verdict === "fail") ? 1 : 0;
}
