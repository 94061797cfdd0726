// Every way a user starts odgm runs it with the same Node flags: `pnpm odgm` (root), the
// package's `start` script, and `pnpm cluster` (scripts/cluster.mjs imports NODE_FLAGS).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without type declarations
import { NODE_FLAGS } from "../scripts/node-flags.mjs";

const scripts = (path: string): Record<string, string> =>
  (
    JSON.parse(readFileSync(new URL(path, import.meta.url), "utf8")) as {
      scripts: Record<string, string>;
    }
  ).scripts;

describe("odgm's Node flags", () => {
  const flags = (NODE_FLAGS as string[]).join(" ");

  it("are flags", () => {
    expect((NODE_FLAGS as string[]).length).toBeGreaterThan(0);
    for (const f of NODE_FLAGS as string[]) expect(f).toMatch(/^--[a-z-]+(=\S+)?$/);
  });

  it("are the ones `pnpm odgm` and the package's `start` script run odgm with", () => {
    expect(scripts("../../../package.json").odgm).toContain(
      `node_modules/node/bin/node ${flags} apps/odgm/dist/bin/odgm.js`,
    );
    expect(scripts("../package.json").start).toBe(`node ${flags} dist/bin/odgm.js`);
  });

  it("`pnpm odgm` and `pnpm cluster` exec the real Node binary (pnpm's SIGTERM reaches it)", () => {
    // Not the `node` package's wrapper script on PATH, which does not pass signals on.
    const root = scripts("../../../package.json");
    expect(root.odgm).toMatch(/&& exec node_modules\/node\/bin\/node /);
    expect(root.cluster).toMatch(
      /&& exec node_modules\/node\/bin\/node apps\/odgm\/scripts\/cluster\.mjs$/,
    );
  });

  it("are the ones `pnpm cluster` starts its nodes with", () => {
    const cluster = readFileSync(new URL("../scripts/cluster.mjs", import.meta.url), "utf8");
    expect(cluster).toContain('import { NODE_FLAGS } from "./node-flags.mjs";');
    expect(cluster).toContain("spawn(process.execPath, [...NODE_FLAGS, bin]");
  });
});
