// What a real Node process loads when it imports some modules: for tests that a library
// stays light (e.g. a storage package never loading the RPC stack).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const recorder = fileURLToPath(new URL("../record-resolutions.mjs", import.meta.url));
const tsHooks = fileURLToPath(new URL("../ts-hooks.mjs", import.meta.url));

/**
 * Runs the real node binary (`process.execPath`) in `cwd`, imports `modules` through the
 * workspace's source condition, and returns every specifier it resolved, as
 * `"<specifier> -> <url>"`.
 */
export function moduleResolutions(modules: readonly string[], cwd: string): string[] {
  const script = modules.map((m) => `await import(${JSON.stringify(m)});`).join("\n");
  const out = spawnSync(
    process.execPath,
    [
      "--conditions=@oprc/source",
      "--experimental-transform-types",
      "--no-warnings",
      "--import",
      tsHooks,
      "--import",
      recorder,
      "--input-type=module",
      "-e",
      script,
    ],
    { cwd, encoding: "utf8" },
  );
  if (out.status !== 0) throw new Error(`importing ${modules.join(", ")} failed: ${out.stderr}`);
  return JSON.parse(out.stdout.trim().split("\n").pop() ?? "[]") as string[];
}
