// Lets plain `node --experimental-transform-types` run this package's TypeScript sources:
// relative imports are written with `.js` extensions (NodeNext style), so map each one to the
// `.ts` file beside it when no `.js` file exists. Registered with `node --import`.
import { existsSync } from "node:fs";
import { registerHooks } from "node:module";
import { fileURLToPath } from "node:url";

registerHooks({
  resolve(specifier, context, nextResolve) {
    if ((specifier.startsWith("./") || specifier.startsWith("../")) && specifier.endsWith(".js")) {
      const parent = context.parentURL;
      if (parent?.startsWith("file:")) {
        const js = new URL(specifier, parent);
        if (!existsSync(fileURLToPath(js))) {
          const ts = new URL(specifier.replace(/\.js$/, ".ts"), parent);
          if (existsSync(fileURLToPath(ts))) return nextResolve(ts.href, context);
        }
      }
    }
    return nextResolve(specifier, context);
  },
});
