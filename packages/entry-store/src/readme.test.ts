// Runs the README's TypeScript example verbatim (written to a temporary module next to
// this package's sources so its package imports resolve exactly as a user's would).
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { expect, it } from "vitest";

it("README example runs", { timeout: 30_000 }, async () => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
  expect(block).toContain('from "@oprc/entry-store"');
  const file = new URL(`../test/readme-example-${process.pid}.tmp.ts`, import.meta.url);
  writeFileSync(file, `${block}\nexport {};\n`);
  try {
    await import(/* @vite-ignore */ file.href);
  } finally {
    rmSync(file, { force: true });
  }
});
