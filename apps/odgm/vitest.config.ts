import { defineTestConfig } from "@oprc/test-config";
import type { ViteUserConfig } from "vitest/config";

const config: ViteUserConfig = defineTestConfig();

export default config;
