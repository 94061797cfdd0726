// Lets plain `node` run this workspace's TypeScript sources without a build (child
// processes in tests, dev scripts, the bench harness). The sources import each other
// NodeNext-style as `./x.js`; when such a relative, absolute or `file:` specifier ending in
// `.js` does not resolve, this resolves `./x.ts` instead. Type stripping itself comes from
// Node (`--experimental-transform-types`); sibling packages resolve to their sources through
// `--conditions=@oprc/source`. Synchronous in-thread hooks (`module.registerHooks`,
// Node >= 22.15), installed by importing this file:
//   node --experimental-transform-types --conditions=@oprc/source \
//     --import @oprc/test-config/ts-hooks src/main.ts
// Callers that spawn `node` from elsewhere pass the absolute path instead, e.g.
//   createRequire(import.meta.url).resolve("@oprc/test-config/ts-hooks")
import { registerHooks } from "node:module";

/**
 * Resolves `specifier`; if it names a missing `.js` file by a relative, absolute or `file:`
 * specifier, resolves the `.ts` file of the same name instead.
 * @param {string} specifier
 * @param {import("node:module").ResolveHookContext} context
 * @param {(specifier: string, context?: Partial<import("node:module").ResolveHookContext>) => import("node:module").ResolveFnOutput} nextResolve
 * @returns {import("node:module").ResolveFnOutput}
 */
export function resolveTs(specifier, context, nextResolve) {
  try {
    return nextResolve(specifier, context);
  } catch (err) {
    if (
      err?.code === "ERR_MODULE_NOT_FOUND" &&
      specifier.endsWith(".js") &&
      (specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("file:"))
    ) {
      return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
    }
    throw err;
  }
}

registerHooks({ resolve: resolveTs });
