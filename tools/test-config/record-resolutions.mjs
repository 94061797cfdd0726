// `node --import ./record-resolutions.mjs`: records every module specifier resolved in this
// process and prints them (JSON, one line) when the process exits.
import { registerHooks } from "node:module";

const seen = [];
registerHooks({
  resolve(specifier, context, nextResolve) {
    const result = nextResolve(specifier, context);
    seen.push(`${specifier} -> ${result.url}`);
    return result;
  },
});
process.on("exit", () => {
  process.stdout.write(`${JSON.stringify(seen)}\n`);
});
