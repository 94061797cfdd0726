import { defineConfig, type ViteUserConfig } from "vitest/config";

// Resolve workspace siblings to their TypeScript sources (the `@oprc/source` condition),
// so tests need no build of the packages they import. The global setup builds this
// package's dist/ for the suites that run the real `odgm-backfill` process.
const config: ViteUserConfig = defineConfig({
  resolve: { conditions: ["@oprc/source"] },
  ssr: { resolve: { conditions: ["@oprc/source"] } },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});

export default config;
