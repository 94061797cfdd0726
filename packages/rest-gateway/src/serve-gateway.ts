import type { AddressInfo } from "node:net";
import { createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { serve } from "@hono/node-server";
import { DataService, OprcFunction, WatchService } from "@oprc/grpc-api";
import { createRestGateway, type RestGatewayOptions } from "./rest-gateway.js";

/** Options of {@link serveGateway}: the gateway's options plus where to listen and what to call. */
export interface ServeGatewayOptions extends Omit<RestGatewayOptions, "data" | "functions"> {
  /** Base URL of the remote odgm, e.g. `http://127.0.0.1:8080` (h2c). Required. */
  endpoint: string;
  /**
   * Protocol spoken to the node: `"grpc"` (HTTP/2, default, what every odgm and oaas-rs node
   * serves) or `"connect"` (Connect protocol over HTTP/2).
   */
  protocol?: "grpc" | "connect";
  /** Whether to route invocations to the node's `OprcFunction` service. Default true. */
  invocations?: boolean;
  /** TCP port to listen on; 0 picks a free one. Default 8081. */
  port?: number;
  /** Address to listen on. Default `"0.0.0.0"`. */
  hostname?: string;
}

/** A running standalone gateway (see {@link serveGateway}). */
export interface ServedGateway {
  /** The bound port. */
  readonly port: number;
  /** `http://<hostname>:<port>`. */
  readonly url: string;
  /** Stops accepting connections and closes the upstream HTTP/2 session. */
  close(): Promise<void>;
}

/**
 * Runs the gateway standalone: a Connect client to the remote node at `endpoint`, the Hono app
 * on an HTTP/1.1 server from `@hono/node-server`. This is what the `odgm-gateway` bin runs.
 *
 * @example
 * ```ts
 * const gw = await serveGateway({ endpoint: "http://127.0.0.1:8080", port: 8081 });
 * // … later
 * await gw.close();
 * ```
 */
export async function serveGateway(options: ServeGatewayOptions): Promise<ServedGateway> {
  const {
    endpoint,
    protocol = "grpc",
    invocations = true,
    port = 8081,
    hostname = "0.0.0.0",
    ...rest
  } = options;
  const sessionManager = new Http2SessionManager(endpoint);
  const transport =
    protocol === "grpc"
      ? createGrpcTransport({ baseUrl: endpoint, sessionManager })
      : createConnectTransport({ baseUrl: endpoint, httpVersion: "2", sessionManager });
  const app = createRestGateway({
    ...rest,
    data: createClient(DataService, transport),
    ...(invocations ? { functions: createClient(OprcFunction, transport) } : {}),
    watch: createClient(WatchService, transport),
  });
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port, hostname }, () => resolve(s));
    s.once("error", reject);
  });
  const bound = (server.address() as AddressInfo).port;
  const shownHost = hostname.includes(":") ? `[${hostname}]` : hostname;
  return {
    port: bound,
    url: `http://${shownHost}:${bound}`,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ("closeAllConnections" in server) server.closeAllConnections();
      });
      sessionManager.abort();
    },
  };
}
