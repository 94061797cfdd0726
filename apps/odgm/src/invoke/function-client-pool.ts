import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { OprcFunction } from "@oprc/grpc-api";

/** A gRPC `OprcFunction` client for one function route URL. */
export type FunctionClient = Client<typeof OprcFunction>;

/** Options of {@link createFunctionClientPool}. */
export interface FunctionClientPoolOptions {
  /** Largest response accepted from a function. Default 4 MiB. */
  readonly maxMessageBytes?: number;
  /** Idle HTTP/2 sessions are closed after this long. Default 60 s. */
  readonly idleConnectionTimeoutMs?: number;
}

/** Pooled clients for function routes: one HTTP/2 session per URL, reused by every call. */
export interface FunctionClientPool {
  /** The client for `url` (`http://host:port`, gRPC over h2c; `https://` for TLS). */
  get(url: string): FunctionClient;
  /** Forgets every client; their sessions close once idle. */
  close(): void;
}

/**
 * Creates a pool of `OprcFunction` clients keyed by route URL. connect-node keeps one
 * HTTP/2 session per transport, so one transport per URL is the connection pool.
 */
export function createFunctionClientPool(
  options: FunctionClientPoolOptions = {},
): FunctionClientPool {
  const clients = new Map<string, FunctionClient>();
  return {
    get(url: string): FunctionClient {
      let client = clients.get(url);
      if (client === undefined) {
        let parsed: URL;
        try {
          parsed = new URL(url);
        } catch {
          throw new Error(`function route url ${JSON.stringify(url)} is not a URL`);
        }
        if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
          throw new Error(`function route url ${JSON.stringify(url)} must be http:// or https://`);
        }
        const transport = createGrpcTransport({
          baseUrl: url,
          readMaxBytes: options.maxMessageBytes ?? 4 * 1024 * 1024,
          idleConnectionTimeoutMs: options.idleConnectionTimeoutMs ?? 60_000,
        });
        client = createClient(OprcFunction, transport);
        clients.set(url, client);
      }
      return client;
    },
    close(): void {
      clients.clear();
    },
  };
}
