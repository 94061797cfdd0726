// Runs the example block of README.md and checks each `console.log(...); // expected` line.
import { runReadmeExample } from "@oprc/test-config/readme";
import { expect, it } from "vitest";

it("runs the README example and prints what its comments say", async () => {
  const { expected, printed } = await runReadmeExample({
    readme: new URL("../README.md", import.meta.url),
    packageName: "@oprc/rest-gateway",
    entry: new URL("./index.ts", import.meta.url),
  });
  expect(expected.length).toBeGreaterThan(4);
  expect(printed).toEqual(expected);
});
