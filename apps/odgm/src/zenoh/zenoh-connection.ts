// One zenoh-ts session to a router's remote-api plugin, kept open: connect (after a TCP
// probe, since zenoh-ts's own retry loop runs for ~34 minutes and cannot be cancelled),
// declare everything, health-check, and on loss close and start over (zenoh-ts has no
// reconnect; after a loss its puts resolve silently and its requests time out).
import { connect } from "node:net";
import { Config, open, type Session } from "@eclipse-zenoh/zenoh-ts";
import type { Logger } from "pino";

/** Options of {@link createZenohConnection}. */
export interface ZenohConnectionOptions {
  /** `ws/<host>:<port>` or `ws://<host>:<port>` (`wss` for TLS). */
  readonly endpoint: string;
  /** Pause between attempts and between health checks, in ms. */
  readonly retryMs: number;
  /** How long one remote-api request may take before the session counts as lost, in ms. */
  readonly requestTimeoutMs?: number;
  readonly logger: Logger;
  /**
   * Declares everything on a newly opened session; a throw closes it and retries. Returns
   * what to run when the session is given up (undeclared state is dropped with it).
   */
  readonly onSession: (session: Session) => Promise<() => void>;
  /** Told when the session comes up or goes down. */
  readonly onState?: (up: boolean) => void;
}

/** A kept-open Zenoh session. */
export interface ZenohConnection {
  /** Whether a session is open and declared right now. */
  isUp(): boolean;
  /** The open session, if any. */
  session(): Session | undefined;
  /** Stops reconnecting and closes the session. */
  close(): Promise<void>;
}

function hostPort(endpoint: string): { host: string; port: number } {
  const rest = endpoint.replace(/^wss?(:\/\/|\/)/, "").replace(/\/$/, "");
  const at = rest.lastIndexOf(":");
  const host = rest.slice(0, at).replace(/^\[(.*)\]$/, "$1");
  return { host, port: Number(rest.slice(at + 1)) };
}

/** Whether a TCP connection to the router can be opened within `timeoutMs`. */
function probe(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/**
 * Opens and keeps open a session to `endpoint`, re-running `onSession` after every
 * reconnect. Never throws: a router that is down is retried every `retryMs`.
 */
export function createZenohConnection(o: ZenohConnectionOptions): ZenohConnection {
  const { host, port } = hostPort(o.endpoint);
  const requestTimeoutMs = o.requestTimeoutMs ?? 3000;
  let current: Session | undefined;
  let up = false;
  let closed = false;
  let wake: (() => void) | undefined;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const setUp = (value: boolean) => {
    if (up === value) return;
    up = value;
    o.onState?.(value);
  };

  const loop = async () => {
    let attempt = 0;
    while (!closed) {
      attempt++;
      if (!(await probe(host, port, Math.max(500, o.retryMs)))) {
        if (attempt === 1 || attempt % 30 === 0)
          o.logger.warn({ endpoint: o.endpoint, attempt }, "zenoh router unreachable; retrying");
        await sleep(o.retryMs);
        continue;
      }
      const opening = open(new Config(o.endpoint, requestTimeoutMs));
      let session: Session;
      try {
        session = await withTimeout(opening, requestTimeoutMs + 2000, "opening the zenoh session");
      } catch (err) {
        // A late open still yields a session: close it.
        opening.then((s) => s.close()).catch(() => {});
        o.logger.warn({ err, endpoint: o.endpoint }, "could not open a zenoh session; retrying");
        await sleep(o.retryMs);
        continue;
      }
      let release: (() => void) | undefined;
      try {
        release = await o.onSession(session);
      } catch (err) {
        o.logger.warn({ err }, "could not declare on the zenoh session; reconnecting");
        await session.close().catch(() => {});
        await sleep(o.retryMs);
        continue;
      }
      if (closed) {
        release();
        await session.close().catch(() => {});
        return;
      }
      current = session;
      attempt = 0;
      setUp(true);
      o.logger.info({ endpoint: o.endpoint }, "zenoh session open");
      while (!closed) {
        await sleep(o.retryMs);
        if (closed) break;
        try {
          await withTimeout(session.info(), requestTimeoutMs + 500, "zenoh health check");
        } catch (err) {
          o.logger.warn({ err, endpoint: o.endpoint }, "zenoh session lost; reconnecting");
          break;
        }
      }
      current = undefined;
      setUp(false);
      release();
      await session.close().catch(() => {});
    }
  };
  const running = loop().catch((err: unknown) => {
    o.logger.error({ err }, "zenoh connection loop failed");
  });

  return {
    isUp: () => up,
    session: () => current,
    async close() {
      closed = true;
      wake?.();
      await running;
    },
  };
}
