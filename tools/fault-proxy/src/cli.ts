#!/usr/bin/env node
// fault-proxy --nodes 1=7001,2=7002,3=7003 [--control-port 7100]
// Prints {"control": port, "ports": {"1->2": port, …}} on one line, then serves a control
// endpoint on loopback for chaos scripts in other processes:
//   POST /cut?from=1&to=2[&both=1]   POST /delay?from=1&to=2&ms=50[&both=1]
//   POST /reset?from=1&to=2[&both=1] POST /partition?a=1&b=2,3   POST /isolate?id=1
//   POST /heal[?from=1&to=2]         GET /status
// Stops on SIGTERM or SIGINT.
import { createServer } from "node:http";
import { parseArgs } from "node:util";
import { createFaultProxy } from "./fault-proxy.js";

const { values } = parseArgs({
  options: { nodes: { type: "string" }, "control-port": { type: "string" } },
});
const nodes = (values.nodes ?? "")
  .split(",")
  .filter(Boolean)
  .map((pair) => {
    const [id, port] = pair.split("=").map(Number);
    if (!Number.isInteger(id) || !Number.isInteger(port))
      throw new Error(`bad --nodes item ${pair}`);
    return { id: id as number, port: port as number };
  });
if (nodes.length < 2) {
  process.stderr.write("usage: fault-proxy --nodes 1=7001,2=7002[,…] [--control-port P]\n");
  process.exit(2);
}
const proxy = await createFaultProxy({ nodes });
const ids = (s: string | null) => (s ?? "").split(",").filter(Boolean).map(Number);
const control = createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://x");
  const q = (k: string) => Number(url.searchParams.get(k));
  const both = url.searchParams.get("both") === "1";
  try {
    switch (`${req.method} ${url.pathname}`) {
      case "POST /cut":
        proxy.cut(q("from"), q("to"), { both });
        break;
      case "POST /delay":
        proxy.delay(q("from"), q("to"), q("ms"), { both });
        break;
      case "POST /reset":
        proxy.reset(q("from"), q("to"), { both });
        break;
      case "POST /partition":
        proxy.partition(ids(url.searchParams.get("a")), ids(url.searchParams.get("b")));
        break;
      case "POST /isolate":
        proxy.isolate(q("id"));
        break;
      case "POST /heal":
        if (url.searchParams.has("from")) proxy.heal(q("from"), q("to"));
        else proxy.heal();
        break;
      case "GET /status":
        break;
      default:
        res.writeHead(404).end();
        return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ links: proxy.status(), stats: proxy.stats() }));
  } catch (err) {
    res.writeHead(400).end(String(err));
  }
});
control.listen(Number(values["control-port"] ?? 0), "127.0.0.1", () => {
  const ports: Record<string, number> = {};
  for (const a of nodes)
    for (const b of nodes) if (a.id !== b.id) ports[`${a.id}->${b.id}`] = proxy.portFor(a.id, b.id);
  const addr = control.address() as import("node:net").AddressInfo;
  process.stdout.write(`${JSON.stringify({ control: addr.port, ports })}\n`);
});
const stop = () => {
  control.close();
  void proxy.close().then(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
