import { defineConfig, type ViteUserConfig } from "vitest/config";

// Resolve workspace siblings to their TypeScript sources (the `@oprc/source` condition),
// so tests need no build of the packages they import.
const config: ViteUserConfig = defineConfig({
  resolve: { conditions: ["@oprc/source"] },
  ssr: { resolve: { conditions: ["@oprc/source"] } },
  // Real processes, RocksDB and grpc C-core on a loaded 2-core machine: generous ceilings.
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});

export default config;
