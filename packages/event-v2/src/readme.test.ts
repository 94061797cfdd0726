import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it, vi } from "vitest";

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const example = readFileSync(new URL("../test/readme-example.ts", import.meta.url), "utf8");

describe("README example", () => {
  afterEach(() => vi.restoreAllMocks());

  it("is the code of test/readme-example.ts", () => {
    const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBe(example);
  });

  it("runs and prints what the README says", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => {
      lines.push(
        args
          .map((a) =>
            typeof a === "string"
              ? a
              : JSON.stringify(a, (_k, v) => (typeof v === "bigint" ? `${v}n` : v)),
          )
          .join(" "),
      );
    });
    await import("../test/readme-example.js");
    expect(lines).toEqual([
      '{"accepted":true,"seq":1}',
      "invoke audit/record-change stateless",
      'event 1 [{"key":"email","numeric":false,"action":"update"}]',
      '{"drained":0,"discarded":0,"queueDrops":0}',
      "1",
    ]);
  });
});
