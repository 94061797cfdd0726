// Runs the example block of README.md and checks each `console.log(...); // expected` line.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it, vi } from "vitest";

const here = fileURLToPath(new URL(".", import.meta.url));
const readme = readFileSync(join(here, "..", "README.md"), "utf8");

function exampleBlock(): string {
  const start = readme.indexOf("## Example");
  const open = readme.indexOf("```ts\n", start);
  const close = readme.indexOf("\n```", open + 6);
  if (start < 0 || open < 0 || close < 0) throw new Error("README.md has no ts example block");
  return readme.slice(open + 6, close + 1);
}

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  vi.restoreAllMocks();
});

it("runs the README example and prints what its comments say", async () => {
  const code = exampleBlock();
  const expected = code
    .split("\n")
    .filter((line) => /console\.log\(.*\/\/ /.test(line))
    .map((line) => line.slice(line.lastIndexOf("// ") + 3).trim());
  expect(expected.length).toBeGreaterThan(4);
  const source = code.replace(
    /from "@oprc\/rest-gateway"/,
    `from ${JSON.stringify(join(here, "index.ts"))}`,
  );
  expect(source).not.toBe(code);
  // Inside the package directory, so bare imports resolve against its node_modules.
  dir = mkdtempSync(join(here, "..", ".readme-"));
  const file = join(dir, "example.ts");
  writeFileSync(file, source);
  const printed: string[] = [];
  vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => {
    printed.push(args.map(String).join(" "));
  });
  await import(/* @vite-ignore */ file);
  expect(printed).toEqual(expected);
});
