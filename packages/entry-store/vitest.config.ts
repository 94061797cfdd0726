import { defineConfig, type ViteUserConfig } from "vitest/config";

// Resolve workspace siblings to their TypeScript sources (the `@oprc/source` condition),
// so tests need no build of the packages they import.
const config: ViteUserConfig = defineConfig({
  resolve: { conditions: ["@oprc/source"] },
  ssr: { resolve: { conditions: ["@oprc/source"] } },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // Without this, Vitest counts every access to a module export getter during a
    // benchmark (a Map lookup and update per cross-module call), which inflates the
    // microsecond-scale store operations measured in src/entry-store.bench.ts.
    benchmark: { suppressExportGetterWarnings: true },
  },
});

export default config;
