#!/usr/bin/env node
// Regenerates the protobuf code into a temporary directory with the repository's own
// buf.gen.yaml and fails if it differs in any way from the files in the tree.
// Usage: node scripts/check-generated.mjs   (also run by `pnpm test`)
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const genDir = "packages/grpc-api/src/gen";

/** Lists files below `dir`, as paths relative to it, sorted. */
function listFiles(dir) {
  const out = [];
  const walk = (d) => {
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

const tmp = mkdtempSync(join(tmpdir(), "odgm-gen-"));
try {
  const bin = join(root, "node_modules", ".bin");
  execFileSync(join(bin, "buf"), ["generate", "--output", tmp], {
    cwd: root,
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ""}` },
  });
  const fresh = join(tmp, genDir);
  const committed = join(root, genDir);
  const a = listFiles(fresh);
  const b = listFiles(committed);
  const problems = [];
  for (const f of a) if (!b.includes(f)) problems.push(`missing from the tree: ${genDir}/${f}`);
  for (const f of b)
    if (!a.includes(f)) problems.push(`not produced by buf generate: ${genDir}/${f}`);
  for (const f of a) {
    if (b.includes(f) && !readFileSync(join(fresh, f)).equals(readFileSync(join(committed, f)))) {
      problems.push(`differs from a fresh buf generate: ${genDir}/${f}`);
    }
  }
  if (problems.length > 0) {
    console.error(
      `Generated code is out of date. Run \`pnpm generate\` and commit:\n  ${problems.join("\n  ")}`,
    );
    process.exit(1);
  }
  console.log(`Generated code matches a fresh buf generate (${a.length} files).`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
