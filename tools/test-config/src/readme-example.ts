// Kept out of src/index.ts: the vitest config loader imports that file natively, where
// relative `.js` → `.ts` resolution does not exist; this module is loaded through vite.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { format } from "node:util";
import { vi } from "vitest";

/** Options of {@link runReadmeExample}. */
export interface ReadmeExampleOptions {
  /** The package's README.md. */
  readonly readme: URL;
  /** The package name the example imports, e.g. `@oprc/oprc-id`. */
  readonly packageName: string;
  /** The module that import is pointed at (the package's `src/index.ts`). */
  readonly entry: URL;
  /** Heading whose first ```ts block is the example. Default `## Example`. */
  readonly heading?: string;
  /**
   * Where the README says what the example prints: `comments` (default), the `// …` comment
   * of each `console.log(…)` line, in source order; or `output-block`, the lines of the first
   * fenced block after the example (for output whose order differs from the source's).
   */
  readonly expected?: "comments" | "output-block";
}

/** What {@link runReadmeExample} saw. */
export interface ReadmeExampleResult {
  /** What the README says the example prints (see {@link ReadmeExampleOptions.expected}). */
  readonly expected: string[];
  /** What the example printed with `console.log` (formatted as Node prints it), in order. */
  readonly printed: string[];
}

/**
 * Runs the example block of a package README as written — only its import of the package is
 * pointed at the sources — and returns what it printed next to what the README promises it
 * prints. The example runs from a temporary folder inside the package, so its other bare
 * imports resolve against the package's dependencies. Every package's README test uses it.
 */
export async function runReadmeExample(
  options: ReadmeExampleOptions,
): Promise<ReadmeExampleResult> {
  const readme = readFileSync(options.readme, "utf8");
  const start = readme.indexOf(options.heading ?? "## Example");
  const open = readme.indexOf("```ts\n", start);
  const close = readme.indexOf("\n```", open + 6);
  if (start < 0 || open < 0 || close < 0) throw new Error("README.md has no ts example block");
  const code = readme.slice(open + 6, close + 1);
  const expected =
    options.expected === "output-block"
      ? outputBlock(readme, close + 4)
      : code
          .split("\n")
          .filter((line) => /console\.log\(.*\/\/ /.test(line))
          .map((line) => line.slice(line.lastIndexOf("// ") + 3).trim());
  const from = `from "${options.packageName}"`;
  if (!code.includes(from))
    throw new Error(`the README example does not import ${options.packageName}`);
  const source = code.replaceAll(from, `from ${JSON.stringify(fileURLToPath(options.entry))}`);
  // Inside the package (bare imports resolve from there), ignored by git in case a killed
  // run leaves it behind.
  const dir = mkdtempSync(join(dirname(fileURLToPath(options.readme)), ".readme-"));
  const printed: string[] = [];
  const spy = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => {
    printed.push(format(...args));
  });
  try {
    const file = join(dir, "example.ts");
    writeFileSync(file, source);
    await import(/* @vite-ignore */ file);
  } finally {
    spy.mockRestore();
    rmSync(dir, { recursive: true, force: true });
  }
  return { expected, printed };
}

function outputBlock(readme: string, from: number): string[] {
  const open = readme.indexOf("```", from);
  const body = readme.indexOf("\n", open) + 1;
  const close = readme.indexOf("\n```", body);
  if (open < 0 || close < 0) throw new Error("README.md has no output block after the example");
  return readme.slice(body, close).split("\n");
}
