// The odgm binary the C-load-generator benchmarks start, a check that a pid is the server
// itself rather than a wrapper script, and the listing that verifies a run's write count.

import { existsSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Client } from "@connectrpc/connect";
import type { DataService } from "@oprc/grpc-api";
// @ts-expect-error: a plain .mjs script of the odgm app, without type declarations
import { NODE_FLAGS } from "../../../apps/odgm/scripts/node-flags.mjs";
import { readProcStat } from "./proc-stat.js";

const REPO = path.resolve(fileURLToPath(new URL("..", import.meta.url)), "..", "..");

/** Newest modification time (ms) of files under `dir` accepted by `keep`; 0 when none. */
function newest(dir: string, keep: (f: string) => boolean): number {
  if (!existsSync(dir)) return 0;
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newest(p, keep));
    else if (keep(e.name)) t = Math.max(t, statSync(p).mtimeMs);
  }
  return t;
}

/**
 * The built `odgm` bin (what users run) of the checkout at `root` (default: this one).
 * Refuses a missing or stale build: the root `bench:writes` and `bench:cluster` scripts build
 * this checkout first; running the package script alone does not, and another checkout
 * (`bench:cluster --other`) is never built by the bench.
 */
export function odgmBin(root: string = REPO): string {
  const bin = path.join(root, "apps", "odgm", "dist", "bin", "odgm.js");
  const hint =
    root === REPO
      ? "build first: npx -y pnpm@10.34.9 build (the root `bench:writes` and `bench:cluster` scripts do)"
      : `build it first: cd ${root} && npx -y pnpm@10.34.9 install --frozen-lockfile && npx -y pnpm@10.34.9 build`;
  if (!existsSync(bin)) throw new Error(`${bin} is missing; ${hint}`);
  const dirs = [path.join(root, "apps", "odgm")];
  for (const p of readdirSync(path.join(root, "packages")))
    dirs.push(path.join(root, "packages", p));
  const stale: string[] = [];
  for (const d of dirs) {
    const src = newest(
      path.join(d, "src"),
      (f) => f.endsWith(".ts") && !/\.(test|bench|test-d)\.ts$/.test(f),
    );
    const dist = newest(path.join(d, "dist"), (f) => f.endsWith(".js"));
    if (src > 0 && src > dist) stale.push(path.relative(root, d));
  }
  if (stale.length > 0) throw new Error(`dist is older than src in ${stale.join(", ")}; ${hint}`);
  return bin;
}

/**
 * The Node flags odgm's launchers start the service with (`pnpm odgm`, `pnpm cluster`; the
 * odgm app's tests check they agree), so the benchmarks run odgm as its users do.
 */
export function odgmNodeFlags(): string[] {
  return [...(NODE_FLAGS as string[])];
}

/**
 * The settings that make an odgm process node `id` of a loopback cluster (`members` as
 * `ODGM_MEMBERS` lists them), serving on `port` with its data in `dataDir`.
 */
export function clusterMemberEnv(
  id: number,
  members: string,
  dataDir: string,
  port: number,
): Record<string, string> {
  return {
    ODGM_NODE_ID: String(id),
    ODGM_MEMBERS: members,
    ODGM_DATA_DIR: dataDir,
    ODGM_HTTP_HOST: "127.0.0.1",
    ODGM_HTTP_PORT: String(port),
  };
}

/** The process is the server itself (not a wrapper script): its name is `want`. */
export function checkComm(pid: number, want: string): void {
  const comm = readProcStat(pid)?.comm;
  if (comm === undefined || !comm.startsWith(want))
    throw new Error(`pid ${pid} is "${comm}", expected the ${want} server itself`);
}

/** Live objects of one partition of `cls` and the sum of their versions (ListObjects, all pages). */
export async function odgmListing(
  c: Client<typeof DataService>,
  cls: string,
  partition = 0,
): Promise<{ count: number; versionSum: number }> {
  let count = 0;
  let versionSum = 0;
  let cursor: Uint8Array | undefined;
  for (;;) {
    let next: Uint8Array | undefined;
    for await (const e of c.listObjects({
      clsId: cls,
      partitionId: partition,
      limit: 1024,
      ...(cursor === undefined ? {} : { cursor }),
    })) {
      count++;
      versionSum += Number(e.version);
      if (e.nextCursor !== undefined && e.nextCursor.length > 0) next = e.nextCursor;
    }
    if (next === undefined) return { count, versionSum };
    cursor = next;
  }
}
