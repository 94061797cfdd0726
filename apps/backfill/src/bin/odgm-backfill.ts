#!/usr/bin/env node
// The `odgm-backfill` command: see `odgm-backfill --help` and the package README.
import { runCli } from "../cli.js";

const controller = new AbortController();
let signals = 0;
const onSignal = (name: NodeJS.Signals): void => {
  signals++;
  if (signals === 1) {
    process.stderr.write(
      `odgm-backfill: ${name}: finishing in-flight objects and saving the checkpoint (again to quit at once)\n`,
    );
    controller.abort(new Error(name));
  } else {
    process.exit(130);
  }
};
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  signal: controller.signal,
});
// The run is over and its resources are closed; should a library handle (an HTTP/2
// session, say) still hold the event loop, do not hang a finished command on it.
setTimeout(() => process.exit(), 2000).unref();
