// A loopback TCP proxy for cluster fault tests. Node i reaches node j through a listener of
// its own, dedicated to the ordered pair (i → j), which forwards to node j's real port; so
// every TCP connection i opens to j, and every byte on it, passes here.
//
// A directed link i → j is "every byte that originates at i and is bound for j": the
// request bytes on connections i opened to j, and the response bytes on connections j
// opened to i. Faults per directed link:
// - `cut`: those bytes are dropped silently (connections stay open: a partition looks like
//   silence, not a refusal). A connection that lost bytes is reset on heal, since its
//   HTTP/2 stream is no longer whole; the client reconnects.
// - `delay(ms)`: those bytes arrive `ms` later, in order.
// - `reset`: connections carrying the link are destroyed now, and new ones refused while set.
import { connect, createServer, type Server, type Socket } from "node:net";

/** A node behind the proxy. */
export interface ProxiedNode {
  readonly id: number;
  /** The node's real port on 127.0.0.1. */
  readonly port: number;
}

/** Options of {@link createFaultProxy}. */
export interface FaultProxyOptions {
  readonly nodes: readonly ProxiedNode[];
  /** Listener ports per pair: `ports(from, to)`; default any free port. */
  readonly port?: (from: number, to: number) => number;
}

type LinkState = { cut: boolean; delayMs: number; reset: boolean };

interface Pipe {
  readonly from: number;
  readonly to: number;
  readonly client: Socket;
  readonly server: Socket;
  /** A byte of this connection was dropped: reset it on heal. */
  lost: boolean;
}

/** Counters for a test's assertions. */
export interface FaultProxyStats {
  readonly connections: number;
  readonly open: number;
  readonly bytesForwarded: number;
  readonly bytesDropped: number;
}

/** A running fault proxy. */
export interface FaultProxy {
  /** The listener port node `from` uses to reach node `to`. */
  portFor(from: number, to: number): number;
  /** Drops bytes from `from` to `to` (and back, with `both`). */
  cut(from: number, to: number, options?: { both?: boolean }): void;
  /** Delays bytes from `from` to `to` (and back, with `both`) by `ms`. */
  delay(from: number, to: number, ms: number, options?: { both?: boolean }): void;
  /** Destroys connections between the two and refuses new ones until healed. */
  reset(from: number, to: number, options?: { both?: boolean }): void;
  /** Cuts every link between the two groups, both ways. */
  partition(a: readonly number[], b: readonly number[]): void;
  /** Cuts every link of `id`, both ways. */
  isolate(id: number): void;
  /** Restores links: all, or those between `from` and `to` (both ways). */
  heal(from?: number, to?: number): void;
  /** Link states, for logs: `"1->2": "cut"`. */
  status(): Record<string, string>;
  stats(): FaultProxyStats;
  close(): Promise<void>;
}

/** Starts a proxy listener for every ordered pair of `nodes`. */
export async function createFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const nodes = options.nodes;
  const links = new Map<string, LinkState>();
  const key = (a: number, b: number) => `${a}->${b}`;
  const link = (a: number, b: number): LinkState => {
    let l = links.get(key(a, b));
    if (l === undefined) {
      l = { cut: false, delayMs: 0, reset: false };
      links.set(key(a, b), l);
    }
    return l;
  };
  const listeners = new Map<string, { server: Server; port: number }>();
  const pipes = new Set<Pipe>();
  let connections = 0;
  let bytesForwarded = 0;
  let bytesDropped = 0;

  /** Forwards `src` → `dst` under the state of the directed link `from → to`. */
  const forward = (pipe: Pipe, src: Socket, dst: Socket, from: number, to: number): void => {
    let chain = Promise.resolve();
    src.on("data", (chunk: Buffer) => {
      const l = link(from, to);
      if (l.cut) {
        pipe.lost = true;
        bytesDropped += chunk.length;
        return;
      }
      const send = () => {
        if (!dst.destroyed) {
          bytesForwarded += chunk.length;
          dst.write(chunk);
        }
      };
      if (l.delayMs > 0) {
        const ms = l.delayMs;
        chain = chain.then(() => new Promise<void>((r) => setTimeout(r, ms).unref())).then(send);
      } else {
        chain = chain.then(send);
      }
    });
  };

  const destroy = (pipe: Pipe): void => {
    pipe.client.destroy();
    pipe.server.destroy();
    pipes.delete(pipe);
  };

  for (const from of nodes) {
    for (const to of nodes) {
      if (from.id === to.id) continue;
      const server = createServer((client) => {
        if (link(from.id, to.id).reset || link(to.id, from.id).reset) {
          client.destroy();
          return;
        }
        connections++;
        const upstream = connect(to.port, "127.0.0.1");
        const pipe: Pipe = { from: from.id, to: to.id, client, server: upstream, lost: false };
        pipes.add(pipe);
        forward(pipe, client, upstream, from.id, to.id);
        forward(pipe, upstream, client, to.id, from.id);
        const close = () => destroy(pipe);
        client.on("error", close).on("close", close);
        upstream.on("error", close).on("close", close);
      });
      const port = options.port?.(from.id, to.id) ?? 0;
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, "127.0.0.1", () => resolve());
      });
      const bound = (server.address() as import("node:net").AddressInfo).port;
      listeners.set(key(from.id, to.id), { server, port: bound });
    }
  }

  const each = (a: number, b: number, both: boolean | undefined, fn: (l: LinkState) => void) => {
    fn(link(a, b));
    if (both === true) fn(link(b, a));
  };
  const touching = (a: number, b: number) =>
    [...pipes].filter((p) => (p.from === a && p.to === b) || (p.from === b && p.to === a));

  const proxy: FaultProxy = {
    portFor(from, to) {
      const l = listeners.get(key(from, to));
      if (l === undefined) throw new Error(`no listener for ${key(from, to)}`);
      return l.port;
    },
    cut(from, to, o = {}) {
      each(from, to, o.both, (l) => {
        l.cut = true;
      });
    },
    delay(from, to, ms, o = {}) {
      each(from, to, o.both, (l) => {
        l.delayMs = ms;
      });
    },
    reset(from, to, o = {}) {
      each(from, to, o.both, (l) => {
        l.reset = true;
      });
      for (const p of touching(from, to)) destroy(p);
    },
    partition(a, b) {
      for (const x of a) for (const y of b) proxy.cut(x, y, { both: true });
    },
    isolate(id) {
      for (const n of nodes) if (n.id !== id) proxy.cut(id, n.id, { both: true });
    },
    heal(from, to) {
      const affected =
        from === undefined || to === undefined ? [...links.keys()] : [key(from, to), key(to, from)];
      for (const k of affected) links.set(k, { cut: false, delayMs: 0, reset: false });
      // Connections that lost bytes carry a broken stream: reset them so clients reconnect.
      for (const p of [...pipes]) {
        if (!p.lost) continue;
        if (from === undefined || to === undefined || touching(from, to).includes(p)) destroy(p);
      }
    },
    status() {
      const out: Record<string, string> = {};
      for (const [k, l] of links) {
        const s = [
          l.cut ? "cut" : "",
          l.reset ? "reset" : "",
          l.delayMs > 0 ? `delay ${l.delayMs}ms` : "",
        ].filter(Boolean);
        if (s.length > 0) out[k] = s.join(", ");
      }
      return out;
    },
    stats: () => ({ connections, open: pipes.size, bytesForwarded, bytesDropped }),
    async close() {
      for (const p of [...pipes]) destroy(p);
      await Promise.all([...listeners.values()].map((l) => new Promise((r) => l.server.close(r))));
    },
  };
  return proxy;
}
