import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { odgmBin } from "./odgm-bin.js";

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

/** Writes `file` under `root` with its modification time `at` seconds after the epoch. */
function put(root: string, file: string, at: number): void {
  const p = path.join(root, file);
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, "");
  utimesSync(p, at, at);
}

/** A checkout's layout as odgmBin reads it: the odgm app and one package, sources and builds. */
function checkout(): string {
  const root = mkdtempSync(path.join(os.tmpdir(), "odgm-bin-"));
  roots.push(root);
  put(root, "apps/odgm/src/odgm.ts", 1000);
  put(root, "apps/odgm/dist/bin/odgm.js", 2000);
  put(root, "packages/raft-log/src/raft.ts", 1000);
  put(root, "packages/raft-log/dist/raft.js", 2000);
  return root;
}

describe("odgmBin of another checkout (bench:cluster --other)", () => {
  it("returns the built bin of a checkout whose builds are newer than its sources", () => {
    const root = checkout();
    expect(odgmBin(root)).toBe(path.join(root, "apps/odgm/dist/bin/odgm.js"));
  });

  it("refuses a checkout with no build, saying how to build it", () => {
    const root = checkout();
    rmSync(path.join(root, "apps/odgm/dist"), { recursive: true });
    expect(() => odgmBin(root)).toThrow(`is missing; build it first: cd ${root} &&`);
  });

  it("refuses a build older than a source, naming the package; tests do not count", () => {
    const root = checkout();
    put(root, "packages/raft-log/src/raft.test.ts", 3000);
    expect(odgmBin(root)).toContain(root);
    put(root, "packages/raft-log/src/core.ts", 3000);
    expect(() => odgmBin(root)).toThrow("dist is older than src in packages/raft-log");
  });
});
