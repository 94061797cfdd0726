import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const script = fileURLToPath(new URL("../../../scripts/check-generated.mjs", import.meta.url));

it("committed generated code matches a fresh `buf generate`", () => {
  // Throws (failing the test) when the script exits non-zero; its output names the files.
  const out = execFileSync(process.execPath, [script], { encoding: "utf8", stdio: "pipe" });
  expect(out).toMatch(/matches a fresh buf generate/);
}, 60_000);
