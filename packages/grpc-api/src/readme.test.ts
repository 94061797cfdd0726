import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { main } from "../test/fixtures/readme-example.js";

it("the README example is the tested file, verbatim", () => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const example = readFileSync(
    new URL("../test/fixtures/readme-example.ts", import.meta.url),
    "utf8",
  );
  const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(block).toBe(example);
});

it("the README example serves and answers over gRPC", async () => {
  expect(await main()).toBe("alice@example.com (version 1)");
});
