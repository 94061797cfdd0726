// This package's tests must run on the oldest Node the workspace's `engines` allows: its
// `node` devDependency puts that Node first on the PATH of its scripts. Fails when the
// floor moves without this package (or when another Node runs it).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..", "..");
const read = (dir: string) =>
  JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
    engines?: { node?: string };
    devDependencies?: Record<string, string>;
  };

it("runs on the Node the engines field names as the oldest", () => {
  const published: string[] = [];
  const tools: string[] = [];
  for (const [group, into] of [
    ["apps", published],
    ["packages", published],
    ["tools", tools],
  ] as const) {
    for (const name of readdirSync(join(root, group))) {
      if (existsSync(join(root, group, name, "package.json"))) into.push(join(root, group, name));
    }
  }
  // Every published package names the floor; a tool that names one names the same.
  const floors = new Set([
    ...[root, ...published].map((dir) => read(dir).engines?.node),
    ...tools.flatMap((dir) => read(dir).engines?.node ?? []),
  ]);
  // The pin is the oldest release of the floor's minor version, and these tests run on it.
  const pinned = read(join(import.meta.dirname, "..")).devDependencies?.node ?? "";
  const [major, minor, patch] = pinned.split(".");
  expect(patch).toBe("0");
  expect([...floors]).toEqual([`>=${major}.${minor}`]);
  expect(process.version).toBe(`v${pinned}`);
});
