import { defineConfig, type ViteUserConfig } from "vitest/config";

// Resolve workspace siblings to their TypeScript sources (the `@oprc/source` condition),
// so tests need no build of the packages they import.
const config: ViteUserConfig = defineConfig({
  resolve: { conditions: ["@oprc/source"] },
  ssr: { resolve: { conditions: ["@oprc/source"] } },
  test: { include: ["src/**/*.test.ts", "test/**/*.test.ts"] },
});

export default config;
