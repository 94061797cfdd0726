// Baseline server: a trivial Hono route on @hono/node-server (HTTP/1.1), the floor of any
// REST endpoint built with the same framework as the gateway.
import { serve } from "@hono/node-server";
import { Hono } from "hono";

const app = new Hono();
app.get("/", (c) => c.text("ok"));
const server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, (info) => {
  process.stdout.write(`BENCH_READY ${info.port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
