#!/usr/bin/env node
import { parseArgs } from "node:util";
import { serveGateway } from "../serve-gateway.js";

// odgm-gateway: the REST gateway standalone, in front of a remote odgm node.
//   odgm-gateway --endpoint http://odgm:8080 [--port 8081] [--host 0.0.0.0] [--protocol grpc]
// Environment: ODGM_GATEWAY_UPSTREAM (endpoint), ODGM_GATEWAY_PORT, ODGM_GATEWAY_HOST,
// ODGM_MAX_STRING_ID_LEN, ODGM_STRING_ID_UNICODE (must match the node's settings).

const USAGE = `usage: odgm-gateway --endpoint <url> [--port <n>] [--host <addr>] [--protocol grpc|connect]
  --endpoint   remote odgm base URL (env ODGM_GATEWAY_UPSTREAM), e.g. http://127.0.0.1:8080
  --port       listen port (env ODGM_GATEWAY_PORT, default 8081)
  --host       listen address (env ODGM_GATEWAY_HOST, default 0.0.0.0)
  --protocol   grpc (default) or connect`;

function fail(message: string): never {
  process.stderr.write(`odgm-gateway: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function intFrom(
  name: string,
  raw: string | undefined,
  min: number,
  max: number,
): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (!/^[0-9]+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    fail(`${name} must be an integer in ${min}..${max}, got "${raw}"`);
  }
  return Number(raw);
}

let args: ReturnType<
  typeof parseArgs<{ options: Record<string, { type: "string" | "boolean" }> }>
>["values"];
try {
  args = parseArgs({
    options: {
      endpoint: { type: "string" },
      port: { type: "string" },
      host: { type: "string" },
      protocol: { type: "string" },
      help: { type: "boolean" },
    },
  }).values;
} catch (err) {
  fail((err as Error).message);
}
if (args.help === true) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const env = process.env;
const endpoint = (args.endpoint as string | undefined) ?? env.ODGM_GATEWAY_UPSTREAM;
if (endpoint === undefined || endpoint === "")
  fail("--endpoint or ODGM_GATEWAY_UPSTREAM is required");
try {
  new URL(endpoint);
} catch {
  fail(`endpoint "${endpoint}" is not a URL`);
}
const protocol = (args.protocol as string | undefined) ?? "grpc";
if (protocol !== "grpc" && protocol !== "connect")
  fail(`--protocol must be grpc or connect, got "${protocol}"`);
const port =
  intFrom(
    "port (ODGM_GATEWAY_PORT)",
    (args.port as string | undefined) ?? env.ODGM_GATEWAY_PORT,
    0,
    65535,
  ) ?? 8081;
const maxLength = intFrom("ODGM_MAX_STRING_ID_LEN", env.ODGM_MAX_STRING_ID_LEN, 1, 65535);
const unicodeRaw = env.ODGM_STRING_ID_UNICODE;
if (unicodeRaw !== undefined && unicodeRaw !== "true" && unicodeRaw !== "false") {
  fail(`ODGM_STRING_ID_UNICODE must be true or false, got "${unicodeRaw}"`);
}

const gateway = await serveGateway({
  endpoint,
  protocol,
  port,
  hostname: (args.host as string | undefined) ?? env.ODGM_GATEWAY_HOST ?? "0.0.0.0",
  ids: { ...(maxLength === undefined ? {} : { maxLength }), unicode: unicodeRaw === "true" },
  onServerError: (error) => {
    process.stderr.write(
      `${JSON.stringify({ level: "error", msg: error.message, cause: String(error.cause) })}\n`,
    );
  },
});
process.stdout.write(
  `${JSON.stringify({ level: "info", msg: "odgm-gateway listening", url: gateway.url, upstream: endpoint })}\n`,
);

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    gateway.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
