// The one authorization table: every RPC method of every service the node registers and
// every REST route, with the access it needs. Fail closed: a method missing here is for
// cluster peers only, a route missing here needs an admin token, and
// test/authorization-table.test.ts fails until each has an entry. A new service or route
// (the change feed did) adds its line here and is checked on every surface at once.
import type { Role } from "./token-set.js";

/**
 * What a call needs:
 * - a {@link Role} (`read` ⊂ `write` ⊂ `admin`): a bearer token of that role or above;
 * - `open`: nothing (health and readiness probes);
 * - `metrics`: `open` or `read`, as `ODGM_AUTH_METRICS` says;
 * - `peer`: a cluster member, authenticated by mutual TLS (`ODGM_TLS_CA`), never by a
 *   bearer token.
 */
export type Access = Role | "open" | "metrics" | "peer";

/**
 * Which collections a call touches, for tokens scoped to collections:
 * - `collection`: the one the request names (`cls_id` of the message, `:cls` of the path);
 *   a scoped token must list it;
 * - `node`: node-wide state (every collection's statistics, the collection registry, the
 *   cluster): only tokens without a scope;
 * - `none`: nothing of any collection (capabilities, the API description): any token of
 *   the role.
 */
export type Scope = "collection" | "node" | "none";

/** One entry of the table. */
export interface AccessRule {
  readonly access: Access;
  readonly scope: Scope;
}

const rule = (access: Access, scope: Scope = "collection"): AccessRule => ({ access, scope });

/**
 * Every RPC, by `<package>.<Service>/<Method>` (the gRPC path without its leading slash).
 * The services are the ones `startOdgm` registers (see `server-pipeline.ts` and `odgm.ts`).
 */
export const RPC_ACCESS: Readonly<Record<string, AccessRule>> = {
  // The data API (spec §6).
  "oprc.DataService/Get": rule("read"),
  "oprc.DataService/GetValue": rule("read"),
  "oprc.DataService/ListValues": rule("read"),
  "oprc.DataService/ListObjects": rule("read"),
  "oprc.DataService/Stats": rule("read", "node"),
  "oprc.DataService/Capabilities": rule("read", "none"),
  "oprc.DataService/Set": rule("write"),
  "oprc.DataService/SetValue": rule("write"),
  "oprc.DataService/Merge": rule("write"),
  "oprc.DataService/Delete": rule("write"),
  "oprc.DataService/DeleteValue": rule("write"),
  "oprc.DataService/BatchSetValues": rule("write"),
  // The change feed reads a collection's changes.
  "oprc.WatchService/Watch": rule("read"),
  // Invocations run functions that may write.
  "oprc.OprcFunction/InvokeFn": rule("write"),
  "oprc.OprcFunction/InvokeObj": rule("write"),
  // Probes, like /healthz.
  "grpc.health.v1.Health/Check": rule("open", "none"),
  "grpc.health.v1.Health/Watch": rule("open", "none"),
  "grpc.health.v1.Health/List": rule("open", "none"),
  // Administration.
  "oprc.CollectionService/CreateCollection": rule("admin", "node"),
  "oprc.CollectionService/ListCollections": rule("admin", "node"),
  "oprc.MaintenanceService/ListLegacyObjects": rule("admin"),
  "oprc.MaintenanceService/ConvertLegacyObjects": rule("admin"),
  "oprc.ClusterService/GetCluster": rule("admin", "node"),
  "oprc.ClusterService/SetMember": rule("admin", "node"),
  "oprc.ClusterService/ChangeMembership": rule("admin", "node"),
  // Raft between cluster members: mutual TLS, not bearer tokens.
  "oprc.RaftService/Stream": rule("peer", "node"),
  "oprc.RaftService/ProposeBatch": rule("peer", "node"),
  "oprc.RaftService/ChangeMembership": rule("peer", "node"),
};

/**
 * Every REST route, by `<METHOD> <path>` in Hono's syntax (`:param`), as the gateway and
 * the node register them. `HEAD` follows `GET`.
 */
export const REST_ACCESS: Readonly<Record<string, AccessRule>> = {
  "GET /healthz": rule("open", "none"),
  "GET /readyz": rule("open", "none"),
  "GET /metrics": rule("metrics", "node"),
  "GET /openapi.json": rule("read", "none"),
  "GET /api/capabilities": rule("read", "none"),
  "GET /debug/object-hash/:cls/:pid/:id": rule("read"),
  "GET /api/class/:cls/:pid/objects": rule("read"),
  "POST /api/class/:cls/:pid/objects": rule("write"),
  "GET /api/class/:cls/:pid/objects/:oid": rule("read"),
  "PUT /api/class/:cls/:pid/objects/:oid": rule("write"),
  "PATCH /api/class/:cls/:pid/objects/:oid": rule("write"),
  "DELETE /api/class/:cls/:pid/objects/:oid": rule("write"),
  "GET /api/class/:cls/:pid/objects/:oid/values": rule("read"),
  "POST /api/class/:cls/:pid/objects/:oid/values/batch": rule("write"),
  "GET /api/class/:cls/:pid/objects/:oid/values/:key": rule("read"),
  "PUT /api/class/:cls/:pid/objects/:oid/values/:key": rule("write"),
  "DELETE /api/class/:cls/:pid/objects/:oid/values/:key": rule("write"),
  "GET /api/class/:cls/:pid/changes": rule("read"),
  "POST /api/class/:cls/:pid/invokes/:fn": rule("write"),
  "POST /api/class/:cls/:pid/objects/:oid/invokes/:fn": rule("write"),
  "GET /api/collections": rule("admin", "node"),
  "POST /api/collections": rule("admin", "node"),
  "GET /api/cluster": rule("admin", "node"),
  "POST /api/cluster/members": rule("admin", "node"),
  "POST /api/cluster/membership": rule("admin", "node"),
};

/** A REST route of {@link REST_ACCESS}, compiled for matching a request. */
export interface RestRoute {
  readonly method: string;
  readonly pattern: RegExp;
  readonly rule: AccessRule;
}

/** {@link REST_ACCESS} as matchers (static paths before parameterized ones). */
export function compileRestRoutes(
  table: Readonly<Record<string, AccessRule>> = REST_ACCESS,
): RestRoute[] {
  const routes = Object.entries(table).map(([key, r]) => {
    const [method = "", path = ""] = key.split(" ");
    const source = path
      .split("/")
      .map((seg) =>
        seg.startsWith(":")
          ? `(?<${seg.slice(1)}>[^/]+)`
          : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"),
      )
      .join("/");
    return {
      method,
      pattern: new RegExp(`^${source}/?$`),
      rule: r,
      params: path.split(":").length,
    };
  });
  routes.sort((a, b) => a.params - b.params);
  return routes.map(({ method, pattern, rule: r }) => ({ method, pattern, rule: r }));
}
