import { defineConfig, type ViteUserConfig } from "vitest/config";

// Resolve workspace siblings to their TypeScript sources (the `@oprc/source` condition),
// so tests need no build of the packages they import.
const config: ViteUserConfig = defineConfig({
  resolve: { conditions: ["@oprc/source"] },
  ssr: { resolve: { conditions: ["@oprc/source"] } },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // The interop suites run real servers and a python gRPC client; on a loaded 2-core
    // machine the default 5 s can run out. A ceiling, not a timing assertion.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});

export default config;
