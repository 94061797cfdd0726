import { describe, expect, it } from "vitest";
import { createOdgmMetrics } from "../observability/metrics.js";
import { compileRestRoutes, REST_ACCESS } from "./authorization-table.js";
import { createAuthorizer, TRUSTED_HEADER } from "./authorizer.js";
import { createTokenSet, parseTokenEntries } from "./token-set.js";

const ADMIN = "admin-token-0123456789";
const READER = "reader-token-0123456789";
const SCOPED = "scoped-token-0123456789";

function authorizer(metricsAccess: "open" | "read" = "read") {
  const metrics = createOdgmMetrics();
  const tokens = createTokenSet(
    parseTokenEntries(`admin ${ADMIN}; read ${READER}; write ${SCOPED} orders`, "T"),
  );
  return { auth: createAuthorizer({ tokens, metricsAccess, metrics }), metrics };
}

describe("compileRestRoutes", () => {
  it("matches static paths before parameters and reads :cls", () => {
    const routes = compileRestRoutes(REST_ACCESS);
    const find = (method: string, path: string) =>
      routes.find((r) => r.method === method && r.pattern.test(path));
    expect(find("POST", "/api/class/c/0/objects/o/values/batch")?.rule.access).toBe("write");
    expect(find("GET", "/api/class/c/0/objects/o/values/batch")?.rule.access).toBe("read");
    expect(
      find("GET", "/api/class/orders/3/objects")?.pattern.exec("/api/class/orders/3/objects")
        ?.groups?.cls,
    ).toBe("orders");
    expect(find("GET", "/healthz/extra")).toBeUndefined();
  });
});

describe("guardFetch", () => {
  const ok = () => new Response("ok");
  const status = async (
    guard: (req: Request) => Response | Promise<Response>,
    method: string,
    path: string,
    token?: string,
  ) =>
    (
      await guard(
        new Request(`http://node${path}`, {
          method,
          headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
        }),
      )
    ).status;

  it("applies roles, scopes and open routes; unknown routes need admin", async () => {
    const { auth } = authorizer();
    const guard = auth.guardFetch(ok);
    expect(await status(guard, "GET", "/healthz")).toBe(200);
    expect(await status(guard, "HEAD", "/readyz")).toBe(200);
    expect(await status(guard, "GET", "/metrics")).toBe(401);
    expect(await status(guard, "GET", "/metrics", READER)).toBe(200);
    expect(await status(guard, "GET", "/metrics", SCOPED)).toBe(403);
    expect(await status(guard, "PUT", "/api/class/orders/0/objects/o", READER)).toBe(403);
    expect(await status(guard, "PUT", "/api/class/orders/0/objects/o", SCOPED)).toBe(200);
    expect(await status(guard, "PUT", "/api/class/or%64ers/0/objects/o", SCOPED)).toBe(200);
    expect(await status(guard, "PUT", "/api/class/carts/0/objects/o", SCOPED)).toBe(403);
    expect(await status(guard, "GET", "/api/capabilities", SCOPED)).toBe(200);
    expect(await status(guard, "GET", "/somewhere", READER)).toBe(403);
    expect(await status(guard, "GET", "/somewhere", ADMIN)).toBe(200);
  });

  it("ODGM_AUTH_METRICS=open opens /metrics only", async () => {
    const guard = authorizer("open").auth.guardFetch(ok);
    expect(await status(guard, "GET", "/metrics")).toBe(200);
    expect(await status(guard, "GET", "/openapi.json")).toBe(401);
  });

  it("counts failures by surface and reason", async () => {
    const { auth, metrics } = authorizer();
    const guard = auth.guardFetch(ok);
    await status(guard, "GET", "/api/collections");
    await status(guard, "GET", "/api/collections", READER);
    await status(guard, "GET", "/api/collections", READER);
    const { values } = await metrics.authFailures.get();
    expect(values.map((v) => [v.labels.surface, v.labels.reason, v.value])).toEqual([
      ["rest", "unauthenticated", 1],
      ["rest", "permission_denied", 2],
    ]);
  });
});

describe("markPeer", () => {
  it("drops a client's trust header and marks only authenticated peers", () => {
    const { auth } = authorizer();
    const headers: Record<string, string | string[] | undefined> = { [TRUSTED_HEADER]: "forged" };
    auth.markPeer(headers, false);
    expect(headers[TRUSTED_HEADER]).toBeUndefined();
    auth.markPeer(headers, true);
    const mark = headers[TRUSTED_HEADER] as string;
    expect(mark).toMatch(/^[0-9a-f]{64}$/);
    const rule = { access: "admin", scope: "node" } as const;
    expect(auth.check("rpc", rule, "x", { authorization: null, trusted: mark }).ok).toBe(true);
    expect(auth.check("rpc", rule, "x", { authorization: null, trusted: "forged" }).ok).toBe(false);
  });
});
