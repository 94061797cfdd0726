// Cluster administration over REST (`/api/cluster…`) and gRPC (`oprc.ClusterService`),
// from one status builder: members, every local group's leader, term, indexes, snapshots
// and (on its leader) each follower's lag; adding members and changing memberships.
import { create, toJson } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ChangeMembershipRequest_Change,
  ChangeMembershipsResponseSchema,
  type ClusterService,
  type ClusterStatus as ClusterStatusMessage,
  ClusterStatusSchema,
  DataPlaneError,
  RaftConfStateSchema,
  toConnectError,
} from "@oprc/grpc-api";
import { documentRoute, type HostRoute } from "@oprc/rest-gateway";
import type { Hono } from "hono";
import type { ClusterNode } from "./cluster-node.js";

/** Membership changes by their REST name. */
export const MEMBERSHIP_CHANGES: Readonly<Record<string, ChangeMembershipRequest_Change>> = {
  add_learner: ChangeMembershipRequest_Change.ADD_LEARNER,
  promote: ChangeMembershipRequest_Change.PROMOTE,
  remove: ChangeMembershipRequest_Change.REMOVE,
  transfer_leader: ChangeMembershipRequest_Change.TRANSFER_LEADER,
};

/** The node's view of the cluster as the ClusterStatus message. */
export function clusterStatusOf(cluster: ClusterNode): ClusterStatusMessage {
  const st = cluster.status();
  const n = (x: number) => BigInt(x);
  return create(ClusterStatusSchema, {
    nodeId: n(st.nodeId),
    incarnation: n(st.incarnation),
    ...(st.failure === undefined ? {} : { failure: st.failure }),
    members: st.members.map((m) => ({ id: n(m.id), url: m.url, incarnation: n(m.incarnation) })),
    groups: st.groups.map((g) => ({
      group: g.group,
      role: g.role,
      leader: n(g.lead),
      term: n(g.term),
      commitIndex: n(g.commit),
      appliedIndex: n(g.applied),
      firstIndex: n(g.firstIndex),
      lastIndex: n(g.lastIndex),
      lastSnapshotIndex: n(g.lastSnapshotIndex),
      snapshotsSent: n(g.snapshotsSent),
      snapshotsInstalled: n(g.snapshotsInstalled),
      snapshotsBuilt: n(g.snapshotsBuilt),
      quiescent: g.quiescent,
      ...(g.failure === undefined ? {} : { failure: g.failure }),
      voters: g.confState.voters.map(n),
      learners: g.confState.learners.map(n),
      followers:
        g.role === "leader"
          ? [...g.match]
              .filter(([id]) => id !== st.nodeId)
              .map(([id, match]) => ({
                id: n(id),
                match: n(match),
                lag: n(Math.max(0, g.lastIndex - match)),
              }))
          : [],
    })),
    replicas: st.replicas.map((r) => ({
      group: r.group,
      voters: r.voters.map(n),
      learners: r.learners.map(n),
      confIndex: n(r.confIndex),
    })),
  });
}

/** `/api/cluster` JSON: the ClusterStatus message in proto3 JSON, with plain numbers. */
function statusJson(cluster: ClusterNode): unknown {
  return JSON.parse(
    JSON.stringify(
      toJson(ClusterStatusSchema, clusterStatusOf(cluster), { alwaysEmitImplicit: true }),
    ),
    (_k, v: unknown) => (typeof v === "string" && /^\d+$/.test(v) && v.length < 16 ? Number(v) : v),
  );
}

function checkMember(id: number, url: string): string {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (
    !Number.isSafeInteger(id) ||
    id < 1 ||
    parsed === undefined ||
    !/^https?:$/.test(parsed.protocol)
  ) {
    throw new DataPlaneError(
      "invalid_argument",
      'a member is {"id": <positive node id>, "url": "http://host:port"}',
    );
  }
  return parsed.origin;
}

/** Runs `fn`, answering a refusal with its gRPC status (the REST side maps that to HTTP). */
async function guard<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toConnectError(err);
  }
}

/** `oprc.ClusterService` over the node. */
export function createClusterServiceImpl(cluster: ClusterNode): ServiceImpl<typeof ClusterService> {
  return {
    getCluster: () => clusterStatusOf(cluster),
    setMember: (req) =>
      guard(async () => {
        await cluster.setMember(Number(req.id), checkMember(Number(req.id), req.url));
        return clusterStatusOf(cluster);
      }),
    changeMembership: (req) =>
      guard(async () => {
        if (req.change === ChangeMembershipRequest_Change.UNSPECIFIED) {
          throw new DataPlaneError("invalid_argument", "change is required");
        }
        const out = await cluster.changeMembership(
          req.group === "" ? "*" : req.group,
          req.change,
          Number(req.nodeId),
        );
        const groups: Record<string, ReturnType<typeof create<typeof RaftConfStateSchema>>> = {};
        for (const [g, c] of out) {
          groups[g] = create(RaftConfStateSchema, {
            voters: c.voters.map(BigInt),
            learners: c.learners.map(BigInt),
            votersOutgoing: c.votersOutgoing.map(BigInt),
            learnersNext: c.learnersNext.map(BigInt),
            autoLeave: c.autoLeave,
          });
        }
        return create(ChangeMembershipsResponseSchema, { groups });
      }),
  };
}

const MEMBERS_ROUTE: HostRoute = {
  method: "post",
  path: "/api/cluster/members",
  operationId: "setClusterMember",
  summary: 'Records a member\'s address: {"id": 4, "url": "http://host:port"}',
  jsonBody: true,
  success: { status: 200, description: "The cluster after the change" },
  errors: [400],
};

const MEMBERSHIP_ROUTE: HostRoute = {
  method: "post",
  path: "/api/cluster/membership",
  operationId: "changeMembership",
  summary:
    "Changes one group's membership, or every group's (\"*\"): add_learner, promote, remove, transfer_leader",
  jsonBody: true,
  success: { status: 200, description: "The resulting membership of every changed group" },
  errors: [400],
};

/** The REST side: `GET /api/cluster`, `POST /api/cluster/members`, `POST /api/cluster/membership`. */
export function registerClusterRoutes(app: Hono, cluster: ClusterNode): void {
  const invalid = (message: string) => ({ error: { code: "invalid_argument", message } });
  documentRoute(
    app,
    {
      method: "get",
      path: "/api/cluster",
      operationId: "clusterStatus",
      summary:
        "Members; for every local Raft group its leader, term, indexes and follower lag; the replica sets the metadata group records",
      success: { status: 200, description: "The cluster as this node sees it" },
    },
    (c) => c.json(statusJson(cluster) as object),
  );
  documentRoute(app, MEMBERS_ROUTE, async (c) => {
    const body = (await c.req.json().catch(() => undefined)) as
      | { id?: unknown; url?: unknown }
      | undefined;
    let url: string;
    try {
      url = checkMember(Number(body?.id), String(body?.url));
    } catch (err) {
      return c.json(invalid((err as Error).message.replace(/^\[[a-z_]+\] /, "")), 400);
    }
    await guard(() => cluster.setMember(Number(body?.id), url));
    return c.json(statusJson(cluster) as object);
  });
  documentRoute(app, MEMBERSHIP_ROUTE, async (c) => {
    const body = (await c.req.json().catch(() => undefined)) as
      | { group?: unknown; change?: unknown; nodeId?: unknown }
      | undefined;
    const change = MEMBERSHIP_CHANGES[String(body?.change)];
    const nodeId = Number(body?.nodeId);
    if (change === undefined || !Number.isSafeInteger(nodeId) || nodeId < 1) {
      return c.json(
        invalid(
          `expected {"group": "<id>"|"*", "change": ${Object.keys(MEMBERSHIP_CHANGES).join("|")}, "nodeId": <id>}`,
        ),
        400,
      );
    }
    const result = await guard(() =>
      cluster.changeMembership(
        body?.group === undefined ? "*" : String(body.group),
        change,
        nodeId,
      ),
    );
    return c.json({ groups: Object.fromEntries(result) });
  });
}
