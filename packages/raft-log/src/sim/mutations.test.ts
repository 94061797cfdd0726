import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MUTATIONS, mutatedCopy, patchTargetsPresent } from "./mutations.js";

const src = join(dirname(fileURLToPath(import.meta.url)), "..");

describe("mutation patches", () => {
  it("cover the six bugs of the spec", () => {
    expect(MUTATIONS.map((m) => m.name)).toEqual(
      expect.arrayContaining([
        "vote-ignores-last-term",
        "commit-prior-term-by-counting",
        "truncate-on-non-conflict",
        "reply-before-sync",
        "joint-single-majority",
        "read-index-before-own-term-commit",
      ]),
    );
  });

  it.each(MUTATIONS.map((m) => [m.name, m] as const))(
    "%s still applies to the current core source",
    (_name, m) => {
      expect(patchTargetsPresent(m, (f) => readFileSync(join(src, f), "utf8"))).toEqual([]);
      const copy = mutatedCopy(src, m);
      try {
        for (const p of m.patches) {
          expect(readFileSync(join(copy.src, p.file), "utf8")).toContain(p.replace);
        }
      } finally {
        copy.cleanup();
      }
    },
  );

  // The full validation (each mutant caught within 1,000 seeds) takes minutes; opt in with
  // RAFT_SIM_MUTATIONS=1, or run `pnpm --filter @oprc/raft-log mutations`.
  it.runIf(process.env.RAFT_SIM_MUTATIONS === "1")(
    "every mutant is caught within 1,000 seeds",
    () => {
      const r = spawnSync(
        process.execPath,
        [
          "--experimental-transform-types",
          "--disable-warning=ExperimentalWarning",
          "--import",
          createRequire(import.meta.url).resolve("@oprc/test-config/ts-hooks"),
          join(src, "sim", "mutations-cli.ts"),
          "--seeds",
          "1000",
        ],
        { encoding: "utf8" },
      );
      console.log(r.stdout);
      expect(r.status, r.stderr).toBe(0);
    },
    3_600_000,
  );
});
