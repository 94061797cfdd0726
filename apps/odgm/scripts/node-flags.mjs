// The Node flags odgm runs with: a larger young generation (--max-semi-space-size=64; see
// BENCHMARKS.md, "A larger young generation"). `pnpm cluster` starts its nodes with them,
// and the benchmarks (tools/bench) their odgm processes. The package.json scripts that
// start odgm (`start` here, `odgm` at the root) spell them out in their commands, and
// test/node-flags.test.ts checks that they agree.
export const NODE_FLAGS = ["--max-semi-space-size=64"];
