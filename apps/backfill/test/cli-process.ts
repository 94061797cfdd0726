// Runs the built `odgm-backfill` binary as a real process.
import { type ChildProcess, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const BIN: string = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "dist",
  "bin",
  "odgm-backfill.js",
);

export interface ProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Spawns the binary; `killAfterMs` sends SIGKILL after that many ms, counted from the spawn,
 * or from the first stderr output containing `killAfterStderr` when that is given.
 */
export function runBin(
  args: readonly string[],
  options: { killAfterMs?: number; killAfterStderr?: string } = {},
): Promise<ProcessResult> & { child: ChildProcess } {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    if (options.killAfterMs !== undefined && timer === undefined)
      timer = setTimeout(() => child.kill("SIGKILL"), options.killAfterMs);
  };
  child.stderr?.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
    if (options.killAfterStderr !== undefined && stderr.includes(options.killAfterStderr)) arm();
  });
  if (options.killAfterStderr === undefined) arm();
  const done = new Promise<ProcessResult>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (timer !== undefined) clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  }) as Promise<ProcessResult> & { child: ChildProcess };
  done.child = child;
  return done;
}
