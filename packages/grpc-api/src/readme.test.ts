// Runs the README's example as written (@oprc/test-config/readme) and checks what it prints.
import { runReadmeExample } from "@oprc/test-config/readme";
import { expect, it } from "vitest";

it("runs the README example and prints what the README says", { timeout: 30_000 }, async () => {
  const { expected, printed } = await runReadmeExample({
    readme: new URL("../README.md", import.meta.url),
    packageName: "@oprc/grpc-api",
    entry: new URL("./index.ts", import.meta.url),
    heading: "## Host the API over your own data plane",
  });
  expect(expected).toEqual(["alice@example.com 1n"]);
  expect(printed).toEqual(expected);
});
