#!/usr/bin/env node
// The `odgm` command: a single-node ODGM service configured by ODGM_* variables.
import { ConfigError, loadConfig } from "../config.js";
import { startOdgm } from "../odgm.js";

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`odgm: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const node = await startOdgm(config);
  let signals = 0;
  const stop = (signal: NodeJS.Signals): void => {
    signals++;
    if (signals > 1) {
      node.logger.warn({ signal }, "second signal: exiting now");
      process.exit(130);
    }
    node.logger.info({ signal }, "stopping (send the signal again to exit at once)");
    node.close().then(
      () => process.exit(0),
      (err: unknown) => {
        node.logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

main().catch((err: unknown) => {
  process.stderr.write(
    `odgm: failed to start: ${err instanceof Error ? err.message : String(err)}\n`,
  );
  process.exit(1);
});
