import { defineConfig, type ViteUserConfig } from "vitest/config";

// Only the harness's pure parts have tests (statistics, ratios, tables); the harness
// itself is run with `pnpm --filter @oprc/bench bench`, never by vitest.
const config: ViteUserConfig = defineConfig({
  resolve: { conditions: ["@oprc/source"] },
  ssr: { resolve: { conditions: ["@oprc/source"] } },
  test: { include: ["src/**/*.test.ts"] },
});

export default config;
