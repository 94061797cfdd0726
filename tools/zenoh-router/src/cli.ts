#!/usr/bin/env node
// zenoh-router [--port 10000] [--host 127.0.0.1]
// Prints {"port": <port>, "locator": "ws/127.0.0.1:<port>"} on one line once listening.
// Stops on SIGTERM or SIGINT.
import { parseArgs } from "node:util";
import { createZenohRouter } from "./zenoh-router.js";

const { values } = parseArgs({
  options: { port: { type: "string" }, host: { type: "string" } },
});
const port = values.port === undefined ? 0 : Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`zenoh-router: bad --port ${values.port}\n`);
  process.exit(2);
}
const router = await createZenohRouter({ port, ...(values.host ? { host: values.host } : {}) });
process.stdout.write(`${JSON.stringify({ port: router.port, locator: router.locator })}\n`);
const stop = () => {
  void router.close().then(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
