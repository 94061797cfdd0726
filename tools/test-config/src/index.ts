import { defineConfig, mergeConfig, type ViteUserConfig } from "vitest/config";

/**
 * The vitest configuration shared by every workspace package, merged with `overrides`:
 * siblings resolve to their TypeScript sources (the `@oprc/source` export condition), tests
 * live beside the code and under `test/`, and timeouts are sized for shared 2-core machines
 * where every package's suite runs at once (a timeout there is load, not a verdict).
 */
export function defineTestConfig(overrides: ViteUserConfig = {}): ViteUserConfig {
  const base = defineConfig({
    resolve: { conditions: ["@oprc/source"] },
    ssr: { resolve: { conditions: ["@oprc/source"] } },
    test: {
      include: ["src/**/*.test.ts", "test/**/*.test.ts"],
      testTimeout: 60_000,
      hookTimeout: 120_000,
    },
  });
  return mergeConfig(base, overrides);
}
