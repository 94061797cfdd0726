// Summarizes a V8 .cpuprofile: self time per function and inclusive time per package/file
// group, as shares of busy (non-idle) samples. Usage: node bench/profile-summary.mjs <file>
import { readFileSync } from "node:fs";

const prof = JSON.parse(readFileSync(process.argv[2], "utf8"));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const counts = new Map();
for (const s of prof.samples) counts.set(s, (counts.get(s) ?? 0) + 1);
const idle = new Set(["(idle)", "(program)"]);
let busy = 0;
const self = new Map();
const groups = new Map();
const groupOf = (url, name) => {
  if (name === "(garbage collector)") return "GC";
  if (url === "") return null;
  const m = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?(@[^/]+\/[^/]+|[^/@][^/]*)/.exec(url);
  if (m) return m[1];
  const w = /\/work\/main\/(packages|apps)\/([^/]+)\/src\/(.*)$/.exec(url);
  if (w) return `@oprc/${w[2]}/${w[3]}`;
  if (url.startsWith("node:")) return url;
  return null;
};
for (const [id, c] of counts) {
  const n = byId.get(id);
  const name = n.callFrame.functionName || "(anonymous)";
  if (idle.has(name)) continue;
  busy += c;
  const key = `${name} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber}`;
  self.set(key, (self.get(key) ?? 0) + c);
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const f = byId.get(cur).callFrame;
    const g = groupOf(f.url, f.functionName);
    if (g && !seen.has(g)) {
      seen.add(g);
      groups.set(g, (groups.get(g) ?? 0) + c);
    }
  }
}
const pct = (c) => `${((100 * c) / busy).toFixed(1)}%`;
console.log(`busy samples: ${busy}\n\nself time:`);
for (const [k, c] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(pct(c), k);
console.log("\ninclusive by group:");
for (const [k, c] of [...groups].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(pct(c), k);
