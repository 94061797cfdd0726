#!/usr/bin/env node
// The `odgm` command: a single-node ODGM service configured by ODGM_* variables.
import { loadConfig } from "../config.js";
import { startTracing, type Tracing } from "../observability/tracing.js";
import { type OdgmNode, startOdgm } from "../odgm.js";
import { isOdgmError } from "../odgm-error.js";

/** Invalid configuration: exit code 2 with the message naming the variable. */
function exitWithConfigError(message: string): never {
  process.stderr.write(`odgm: ${message}\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (isOdgmError(err)) exitWithConfigError(err.message);
    throw err;
  }
  // OpenTelemetry (OTEL_EXPORTER_OTLP_ENDPOINT …): registered before the node creates spans.
  let tracing: Tracing | undefined;
  try {
    tracing = startTracing(process.env);
  } catch (err) {
    if (isOdgmError(err)) exitWithConfigError(err.message);
    throw err;
  }
  // Signal handlers come first: a signal while the node starts (or right after it logs
  // "listening") still gets the graceful stop, once the node is up.
  let node: OdgmNode | undefined;
  let stopRequested: NodeJS.Signals | undefined;
  let signals = 0;
  const stop = (signal: NodeJS.Signals): void => {
    signals++;
    if (signals > 1) {
      node?.logger.warn({ signal }, "second signal: exiting now");
      process.exit(130);
    }
    if (node === undefined) {
      stopRequested = signal;
      return;
    }
    const running = node;
    running.logger.info({ signal }, "stopping (send the signal again to exit at once)");
    // Spans of the last requests are exported before the process exits.
    running
      .close()
      .finally(() =>
        tracing
          ?.shutdown()
          .catch((err: unknown) => running.logger.warn({ err }, "could not export the last spans")),
      )
      .then(
        () => process.exit(0),
        (err: unknown) => {
          running.logger.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  // SIGHUP re-reads the TLS certificate and key (a renewed certificate, no restart) and
  // the bearer tokens (a rotated token file).
  process.on("SIGHUP", () => {
    if (node === undefined) return;
    if (config.tls !== undefined) {
      try {
        node.reloadTls();
      } catch (err) {
        node.logger.error({ err }, "could not reload the TLS certificate; keeping the old one");
      }
    }
    if (config.auth !== undefined) {
      try {
        node.reloadAuth();
      } catch (err) {
        node.logger.error({ err }, "could not reload the bearer tokens; keeping the old ones");
      }
    }
  });
  try {
    node = await startOdgm(config);
    if (tracing !== undefined)
      node.logger.info({ endpoint: tracing.endpoint }, "exporting traces over OTLP/HTTP");
  } catch (err) {
    // Some configuration (ODGM_COLLECTION against the stored registry) is only checkable here.
    if (isOdgmError(err) && err.code === "invalid_config") exitWithConfigError(err.message);
    throw err;
  }
  if (stopRequested !== undefined) {
    signals--;
    stop(stopRequested);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `odgm: failed to start: ${err instanceof Error ? err.message : String(err)}\n`,
  );
  process.exit(1);
});
