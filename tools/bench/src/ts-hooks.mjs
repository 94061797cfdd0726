// Module hooks that let Node 22 run this workspace's TypeScript sources directly (the
// harness and its child processes run from src, so nothing needs building first):
// relative imports written as `./x.js` resolve to `./x.ts` when only the TypeScript file
// exists. Same approach as apps/odgm's process fixtures.
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (err) {
    if (
      err?.code === "ERR_MODULE_NOT_FOUND" &&
      specifier.endsWith(".js") &&
      (specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("file:"))
    ) {
      return next(`${specifier.slice(0, -3)}.ts`, context);
    }
    throw err;
  }
}
