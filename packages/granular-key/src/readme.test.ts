// Runs the README's TypeScript example verbatim against this package's source.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import ts from "typescript";
import { expect, it } from "vitest";
import * as api from "./index.js";

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";

it("README example runs", () => {
  expect(block).toContain("@oprc/granular-key");
  const imported = /import \{([^}]*)\} from "@oprc\/granular-key";/.exec(block)?.[1] ?? "";
  const names = imported
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const name of names) expect(api).toHaveProperty(name);
  const body = block.replace(/^import[\s\S]*?;\n/gm, "");
  const js = ts.transpileModule(body, {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext },
  }).outputText;
  const bindings = Object.fromEntries(names.map((n) => [n, (api as Record<string, unknown>)[n]]));
  const run = new Function("assert", "Buffer", ...Object.keys(bindings), js);
  run(assert, Buffer, ...Object.values(bindings));
});
