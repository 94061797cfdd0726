// Bearer-token authentication and authorization, applied the same way on every surface:
// an interceptor for RPCs (both gRPC server paths, gRPC-Web and Connect run the same
// interceptors; Zenoh's in-process calls, carrying the attachment's token, too) and a guard
// in front of the REST app. Calls the REST gateway makes through the in-process client,
// already checked at the REST edge, and calls from cluster peers authenticated by mutual
// TLS carry a per-process secret header instead of a token.
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { Code, ConnectError, type Interceptor, type StreamRequest } from "@connectrpc/connect";
import { quoteInput } from "@oprc/grpc-api";
import { errorResponse, GatewayError } from "@oprc/rest-gateway";
import type { OdgmMetrics } from "../observability/metrics.js";
import {
  type AccessRule,
  compileRestRoutes,
  REST_ACCESS,
  type RestRoute,
  RPC_ACCESS,
} from "./authorization-table.js";
import { type Principal, roleIncludes, type TokenSet } from "./token-set.js";

/** Header marking a call as the node's own or a cluster peer's (value: the node's secret). */
export const TRUSTED_HEADER = "x-odgm-trusted";

/** Where a request arrived, the `surface` label of `odgm_auth_failures_total`. */
export type AuthSurface = "rpc" | "rest";

/** The outcome of {@link Authorizer.check}. */
export type AuthResult =
  | { readonly ok: true; readonly principal: Principal | "trusted" | "anonymous" }
  | {
      readonly ok: false;
      readonly reason: "unauthenticated" | "permission_denied";
      readonly message: string;
    };

/** Options of {@link createAuthorizer}. */
export interface AuthorizerOptions {
  readonly tokens: TokenSet;
  /** `/metrics`: `open`, or `read` (a token of any role). */
  readonly metricsAccess: "open" | "read";
  readonly metrics: OdgmMetrics;
}

/** Authentication and authorization of one node. */
export interface Authorizer {
  /**
   * Checks a call against `rule`: `authorization` is the request's `Authorization` header,
   * `collection` the collection it names (when the rule's scope is `collection`), `trusted`
   * the value of {@link TRUSTED_HEADER}. Counts failures in `odgm_auth_failures_total`.
   */
  check(
    surface: AuthSurface,
    rule: AccessRule,
    what: string,
    headers: { authorization: string | null; trusted: string | null },
    collection?: string,
  ): AuthResult;
  /** The Connect interceptor applying {@link RPC_ACCESS} (outermost but for metrics). */
  readonly interceptor: Interceptor;
  /** An interceptor for the node's in-process clients: marks calls as trusted. */
  readonly trustInterceptor: Interceptor;
  /**
   * Wraps a fetch handler (the REST app) with {@link REST_ACCESS}: 401 with
   * `WWW-Authenticate: Bearer` or 403 in the gateway's JSON error format.
   */
  guardFetch<A extends unknown[]>(
    fetch: (req: Request, ...rest: A) => Response | Promise<Response>,
  ): (req: Request, ...rest: A) => Response | Promise<Response>;
  /**
   * Marks a network request trusted when it comes from an authenticated cluster peer, and
   * removes any {@link TRUSTED_HEADER} a client sent. Run on every request before routing.
   */
  markPeer(headers: IncomingHttpHeaders, isPeer: boolean): void;
  /** Replaces the tokens (a reloaded token file); calls in flight keep their outcome. */
  setTokens(tokens: TokenSet): void;
}

const BEARER = /^Bearer[ \t]+([^ \t]+)[ \t]*$/i;

/** Creates the {@link Authorizer} of a node whose tokens are `options.tokens`. */
export function createAuthorizer(options: AuthorizerOptions): Authorizer {
  const secret = randomBytes(32).toString("hex");
  const secretBytes = Buffer.from(secret);
  const isTrusted = (value: string | null): boolean => {
    if (value === null) return false;
    const b = Buffer.from(value);
    return b.length === secretBytes.length && timingSafeEqual(b, secretBytes);
  };
  const failures = options.metrics.authFailures;
  let tokens = options.tokens;
  const restRoutes = compileRestRoutes(REST_ACCESS);

  const check: Authorizer["check"] = (surface, rule, what, headers, collection) => {
    const deny = (reason: "unauthenticated" | "permission_denied", message: string) => {
      failures.inc({ surface, reason });
      return { ok: false, reason, message } as const;
    };
    const access = rule.access === "metrics" ? options.metricsAccess : rule.access;
    if (access === "open") return { ok: true, principal: "anonymous" };
    if (isTrusted(headers.trusted)) return { ok: true, principal: "trusted" };
    if (access === "peer") {
      return deny(
        "unauthenticated",
        `${what} is for cluster members: they authenticate with a client certificate signed by ODGM_TLS_CA, not a bearer token`,
      );
    }
    const auth = headers.authorization;
    if (auth === null || auth === "") {
      return deny(
        "unauthenticated",
        `${what} needs a bearer token: send the header "authorization: Bearer <token>"`,
      );
    }
    const token = BEARER.exec(auth)?.[1];
    if (token === undefined) {
      return deny("unauthenticated", 'the authorization header must be "Bearer <token>"');
    }
    const principal = tokens.authenticate(token);
    if (principal === undefined) return deny("unauthenticated", "unknown bearer token");
    if (principal.expiresAt !== undefined && Date.now() >= principal.expiresAt) {
      return deny(
        "unauthenticated",
        `this bearer token expired at ${new Date(principal.expiresAt).toISOString()}`,
      );
    }
    if (!roleIncludes(principal.role, access)) {
      return deny(
        "permission_denied",
        `${what} needs the ${access} role; this token has ${principal.role}`,
      );
    }
    if (principal.collections !== undefined) {
      if (rule.scope === "node") {
        return deny(
          "permission_denied",
          `${what} concerns every collection; this token is limited to some`,
        );
      }
      if (rule.scope === "collection" && !principal.collections.has(collection ?? "")) {
        return deny(
          "permission_denied",
          `this token may not use collection ${quoteInput(collection ?? "")}`,
        );
      }
    }
    return { ok: true, principal };
  };

  const rpcHeaders = (header: Headers) => ({
    authorization: header.get("authorization"),
    trusted: header.get(TRUSTED_HEADER),
  });
  const fail = (r: Extract<AuthResult, { ok: false }>): ConnectError =>
    new ConnectError(
      r.message,
      r.reason === "unauthenticated" ? Code.Unauthenticated : Code.PermissionDenied,
    );
  const clsOf = (message: unknown): string | undefined => {
    const cls = (message as { clsId?: unknown } | undefined)?.clsId;
    return typeof cls === "string" ? cls : undefined;
  };

  const interceptor: Interceptor = (next) => async (req) => {
    const path = `${req.service.typeName}/${req.method.name}`;
    const rule = RPC_ACCESS[path] ?? { access: "peer", scope: "node" };
    if (!req.stream) {
      const r = check("rpc", rule, path, rpcHeaders(req.header), clsOf(req.message));
      if (!r.ok) throw fail(r);
      return next(req);
    }
    if (rule.scope !== "collection") {
      const r = check("rpc", rule, path, rpcHeaders(req.header));
      if (!r.ok) throw fail(r);
      return next(req);
    }
    // A server stream's one request names the collection: read it first, then hand the
    // handler the same messages.
    const it = req.message[Symbol.asyncIterator]();
    const first = await it.next();
    const r = check(
      "rpc",
      rule,
      path,
      rpcHeaders(req.header),
      first.done ? undefined : clsOf(first.value),
    );
    if (!r.ok) throw fail(r);
    async function* replay() {
      if (first.done) return;
      yield first.value;
      for (let n = await it.next(); !n.done; n = await it.next()) yield n.value;
    }
    return next({ ...req, message: replay() } as StreamRequest as never);
  };

  const trustInterceptor: Interceptor = (next) => (req) => {
    req.header.set(TRUSTED_HEADER, secret);
    return next(req);
  };

  const matchRest = (method: string, path: string): { route?: RestRoute; cls?: string } => {
    const m = method === "HEAD" ? "GET" : method;
    for (const route of restRoutes) {
      if (route.method !== m) continue;
      const found = route.pattern.exec(path);
      if (found === null) continue;
      const raw = found.groups?.cls;
      let cls: string | undefined;
      try {
        cls = raw === undefined ? undefined : decodeURIComponent(raw);
      } catch {
        cls = raw;
      }
      return { route, ...(cls === undefined ? {} : { cls }) };
    }
    return {};
  };

  return {
    check,
    interceptor,
    trustInterceptor,
    guardFetch<A extends unknown[]>(
      fetch: (req: Request, ...rest: A) => Response | Promise<Response>,
    ) {
      return (req: Request, ...rest: A) => {
        const path = new URL(req.url).pathname;
        const { route, cls } = matchRest(req.method, path);
        // Unknown routes need an admin token: no table entry, no open door.
        const rule = route?.rule ?? { access: "admin", scope: "node" };
        const what = route === undefined ? "this route" : `${route.method} ${path.slice(0, 200)}`;
        const r = check(
          "rest",
          rule,
          what,
          {
            authorization: req.headers.get("authorization"),
            trusted: req.headers.get(TRUSTED_HEADER),
          },
          cls,
        );
        if (r.ok) return fetch(req, ...rest);
        return errorResponse(
          new GatewayError(r.reason, r.message),
          r.reason === "unauthenticated" ? { "www-authenticate": 'Bearer realm="odgm"' } : {},
        );
      };
    },
    setTokens(next) {
      tokens = next;
    },
    markPeer(headers, isPeer) {
      delete headers[TRUSTED_HEADER];
      if (isPeer) headers[TRUSTED_HEADER] = secret;
    },
  };
}
