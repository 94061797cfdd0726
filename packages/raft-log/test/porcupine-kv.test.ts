import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { analyzeOperations, checkOperations } from "../src/checker/check-operations.js";
import { parseEdnHistory } from "../src/checker/edn-history.js";
import { kvModel } from "../src/checker/kv-model.js";

// The known-answer histories live outside the repository, in the shared data folder:
// packages/raft-log/../../../shared/data/porcupine-kv = /work/shared/data/porcupine-kv.
const dataDir = fileURLToPath(new URL("../../../../shared/data/porcupine-kv/", import.meta.url));

const cases = [
  ["c01-ok.txt", "ok"],
  ["c01-bad.txt", "illegal"],
  ["c10-ok.txt", "ok"],
  ["c10-bad.txt", "illegal"],
  ["c50-ok.txt", "ok"],
  ["c50-bad.txt", "illegal"],
] as const;

describe("Porcupine key-value known-answer histories", () => {
  it("has the data folder", () => {
    expect(
      existsSync(dataDir),
      `missing ${dataDir}: the porcupine-kv histories are expected in /work/shared/data`,
    ).toBe(true);
  });

  for (const [file, expected] of cases) {
    it(`${file} is ${expected}`, () => {
      const path = `${dataDir}${file}`;
      expect(existsSync(path), `missing known-answer history ${path}`).toBe(true);
      const history = parseEdnHistory(readFileSync(path, "utf8"));
      expect(history.length).toBeGreaterThan(0);
      const result = analyzeOperations(kvModel, history, { maxSteps: 50_000_000 });
      expect(result.verdict).toBe(expected);
      if (expected === "illegal") {
        // The witness names a legal prefix of the failing key's history.
        const bad = result.partitions.find((p) => p.verdict === "illegal");
        expect(bad).toBeDefined();
        for (const i of bad?.linearization ?? []) expect(history[i]).toBeDefined();
      }
    });
  }

  it("a tiny budget yields unknown on the big history, never a wrong verdict", () => {
    const history = parseEdnHistory(readFileSync(`${dataDir}c50-ok.txt`, "utf8"));
    expect(checkOperations(kvModel, history, { maxSteps: 10 })).toBe("unknown");
  });
});
