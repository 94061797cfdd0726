import { defineTestConfig } from "@oprc/test-config";
import type { ViteUserConfig } from "vitest/config";

const config: ViteUserConfig = defineTestConfig({
  test: { benchmark: { suppressExportGetterWarnings: true } },
});

export default config;
