// Only the harness's pure parts have tests (statistics, ratios, tables); the harness
// itself is run with `pnpm --filter @oprc/bench bench`, never by vitest.
import { defineTestConfig } from "@oprc/test-config";
import type { ViteUserConfig } from "vitest/config";

const config: ViteUserConfig = defineTestConfig({ test: { include: ["src/**/*.test.ts"] } });

export default config;
