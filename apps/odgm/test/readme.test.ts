// Runs README.md's examples against a real odgm process: every curl line of the "With curl"
// block (against the process's port instead of 8080) and the TypeScript blocks, whose
// `// <expected>` comments on console.log lines must match what they print.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type OdgmProcess, startOdgmProcess } from "./fixtures/odgm-process.js";
import { tempDir } from "./fixtures/temp-node.js";

const exec = promisify(execFile);
const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const blocks = (lang: string): string[] =>
  [...readme.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, "g"))].map(
    (m) => m[1] as string,
  );

let node: OdgmProcess;
let dir: string;
beforeAll(async () => {
  dir = await tempDir("odgm-readme-");
  node = await startOdgmProcess({ ODGM_DATA_DIR: dir });
});
afterAll(async () => {
  node?.child.kill("SIGTERM");
  await node?.exited;
  await rm(dir, { recursive: true, force: true });
});

it("the curl examples succeed (HTTP/1.1)", async () => {
  const curl = blocks("sh").find((b) => b.includes("curl -sf localhost:8080/api/collections"));
  const lines = (curl ?? "").split("\n").filter((l) => l.startsWith("curl "));
  expect(lines.length).toBeGreaterThanOrEqual(8);
  const outputs: string[] = [];
  for (const line of lines) {
    const cmd = line.replaceAll("localhost:8080", `127.0.0.1:${node.port}`);
    const { stdout } = await exec("bash", ["-c", cmd]); // -f: an HTTP error fails the command
    outputs.push(stdout);
  }
  expect(outputs[3]).toContain('"value":"shipped"');
  expect(outputs[4]).toContain('"status":{"data":"InNoaXBwZWQi"}'); // base64 of "shipped"
});

it("the TypeScript examples print what their comments say", async () => {
  const ts = blocks("ts");
  expect(ts.length).toBe(2);
  for (const [i, block] of ts.entries()) {
    const code = block.replaceAll("http://localhost:8080", node.url);
    const file = fileURLToPath(
      new URL(`./fixtures/readme-example-${i}.generated.ts`, import.meta.url),
    );
    await writeFile(file, code);
    try {
      const { stdout } = await exec(process.execPath, [
        "--conditions=@oprc/source",
        "--experimental-transform-types",
        "--no-warnings",
        "--import",
        createRequire(import.meta.url).resolve("@oprc/test-config/ts-hooks"),
        file,
      ]);
      const expected = code
        .split("\n")
        .filter((l) => l.includes("console.log(") && l.includes("// "))
        .map((l) => l.slice(l.indexOf("// ") + 3));
      const printed = stdout.trim().split("\n");
      expect(printed.length).toBe(expected.length);
      printed.forEach((line, j) => {
        const want = expected[j] as string;
        if (want.includes("<port>")) expect(line).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        else expect(line).toBe(want);
      });
    } finally {
      await rm(file, { force: true });
    }
  }
});
