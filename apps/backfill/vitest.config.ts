// package's dist/ for the suites that run the real `odgm-backfill` process.
import { defineTestConfig } from "@oprc/test-config";
import type { ViteUserConfig } from "vitest/config";

const config: ViteUserConfig = defineTestConfig({
  test: { globalSetup: ["test/global-setup.ts"] },
});

export default config;
