import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { odgmNodeFlags } from "./odgm-bin.js";

describe("odgmNodeFlags", () => {
  it("are the Node flags of the root `pnpm odgm` script, in its order", () => {
    const script = (
      JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as {
        scripts: Record<string, string>;
      }
    ).scripts.odgm as string;
    const flags = odgmNodeFlags();
    expect(flags.every((f) => f.startsWith("--"))).toBe(true);
    expect(script).toContain(
      ["node_modules/node/bin/node", ...flags, "apps/odgm/dist/bin/odgm.js"].join(" "),
    );
  });
});
