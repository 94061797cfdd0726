// Runs the example block of README.md and checks each `console.log(...); // expected` line.
import { runReadmeExample } from "@oprc/test-config/readme";
import { expect, it } from "vitest";

it("runs the README example and prints what its comments say", async () => {
  const { expected, printed } = await runReadmeExample({
    readme: new URL("../README.md", import.meta.url),
    packageName: "@oprc/rocksdb",
    entry: new URL("./index.ts", import.meta.url),
  });
  expect(expected).toEqual(["B", "worker"]);
  expect(printed).toEqual(expected);
});
