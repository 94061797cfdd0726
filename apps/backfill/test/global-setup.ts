// Builds dist/ once before the suites that run the real `odgm-backfill` process. That
// process resolves its workspace siblings to their built dist/ (as an installed package
// would); turbo's `test` task builds them first (`dependsOn: ["^build"]`).
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export default function setup(): void {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  const require = createRequire(join(root, "package.json"));
  for (const sibling of ["@oprc/entry-store", "@oprc/grpc-api", "@oprc/oprc-id"]) {
    const dist = join(dirname(require.resolve(`${sibling}/package.json`)), "dist", "index.js");
    if (!existsSync(dist)) {
      throw new Error(
        `${sibling} is not built (${dist} is missing): run the workspace build first`,
      );
    }
  }
  const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
  execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], {
    cwd: root,
    stdio: "inherit",
  });
}
