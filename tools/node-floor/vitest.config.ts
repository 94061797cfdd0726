import { defineTestConfig } from "@oprc/test-config";
import type { ViteUserConfig } from "vitest/config";

const config: ViteUserConfig = defineTestConfig({ test: { include: ["src/**/*.test.ts"] } });

export default config;
