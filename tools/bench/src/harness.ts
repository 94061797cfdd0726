// What every stand-alone benchmark script sets up the same way: the command line to print
// beside its results, where they go, a scratch directory removed at exit, and a watchdog.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { killAllChildren } from "./processes.js";

/** A benchmark script's run: its command line, results file and scratch directory. */
export interface HarnessRun {
  /** The command that reproduces this run (with the arguments it was given). */
  readonly command: string;
  /** `RESULTS-<name>.md`, or `RESULTS-<name>.quick.md` (git-ignored) for `--quick`. */
  readonly outFile: string;
  /** A fresh directory under the system's temporary directory, removed at exit. */
  readonly tmp: string;
}

/**
 * Sets up `bench:<name>`: kills every child and exits with status 3 after `giveUpMinutes`.
 *
 * @example
 * const { command, outFile, tmp } = startHarness("feed", { quick: false, giveUpMinutes: 30 });
 */
export function startHarness(
  name: string,
  o: { readonly quick: boolean; readonly giveUpMinutes: number },
): HarnessRun {
  const given = process.argv.slice(2).filter((a) => a !== "--");
  const pkg = fileURLToPath(new URL("..", import.meta.url));
  const tmp = mkdtempSync(path.join(os.tmpdir(), `odgm-bench-${name}-`));
  process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
  setTimeout(() => {
    process.stderr.write(`bench:${name}: gave up after ${o.giveUpMinutes} min\n`);
    killAllChildren();
    process.exit(3);
  }, o.giveUpMinutes * 60_000).unref();
  return {
    command: `npx -y pnpm@10.34.9 bench:${name}${given.length > 0 ? ` -- ${given.join(" ")}` : ""}`,
    outFile: path.join(pkg, o.quick ? `RESULTS-${name}.quick.md` : `RESULTS-${name}.md`),
    tmp,
  };
}
