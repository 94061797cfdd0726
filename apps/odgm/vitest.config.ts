import { availableParallelism } from "node:os";
import { defineTestConfig } from "@oprc/test-config";
import type { ViteUserConfig } from "vitest/config";

// Most of this suite waits on child processes (nodes starting, elections, fsyncs), so two
// files at a time finish sooner even on two cores: 412 s instead of 675 s for the whole
// suite here. Vitest's default would run one file at a time on a two-core machine.
const config: ViteUserConfig = defineTestConfig({
  test: { maxWorkers: Math.max(2, availableParallelism() - 1) },
});

export default config;
