import type { AddressInfo } from "node:net";
import type { Client } from "@connectrpc/connect";
import { serve } from "@hono/node-server";
import { REST_SUITE_BODY_LIMIT, type RestTarget } from "@oprc/conformance";
import type { DataService, OprcFunction } from "@oprc/grpc-api";
import { createRestGateway } from "../src/index.js";

/** Clients the gateway under test talks to. */
export interface GatewayClients {
  data: Client<typeof DataService>;
  functions?: Client<typeof OprcFunction>;
  close(): Promise<void>;
}

/**
 * Builds the gateway over `clients` as a conformance target: through `app.request`, or
 * (`http: true`) served on 127.0.0.1 by @hono/node-server and reached with fetch.
 */
export async function gatewayTarget(clients: GatewayClients, http: boolean): Promise<RestTarget> {
  const app = createRestGateway({
    data: clients.data,
    ...(clients.functions === undefined ? {} : { functions: clients.functions }),
    bodyLimit: REST_SUITE_BODY_LIMIT,
    metrics: () => "# TYPE odgm_test_total counter\nodgm_test_total 1\n",
  });
  if (!http) {
    return {
      send: async (method, path, init) =>
        app.request(path, { method, ...(init ?? {}) } as RequestInit),
      close: () => clients.close(),
    };
  }
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
  });
  const port = (server.address() as AddressInfo).port;
  return {
    send: (method, path, init) =>
      fetch(`http://127.0.0.1:${port}${path}`, { method, ...(init ?? {}) } as RequestInit),
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ("closeAllConnections" in server) server.closeAllConnections();
      });
      await clients.close();
    },
  };
}
