import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { CapabilitiesResponseSchema } from "@oprc/grpc-api";
import { hashId, partitionOf } from "@oprc/oprc-id";
import { errorResponse, GatewayError } from "../gateway-error.js";
import { METRICS_ROUTE } from "../openapi-routes.js";
import {
  parseNameSegment,
  parseObjectSegment,
  parsePartitionSegment,
  rawPathSegments,
} from "../path-segments.js";
import { U32_MAX } from "../request-parsing.js";
import type { RouteContext } from "./route-context.js";

/** Where the service routes get readiness and metrics from. */
export interface ServiceRouteOptions {
  ready?: (() => Promise<boolean> | boolean) | undefined;
  readyDetail?: (() => Record<string, string>) | undefined;
  metrics?: (() => Promise<string> | string) | undefined;
  partitionCount?: ((cls: string) => number | undefined) | undefined;
}

/** Capabilities, health, readiness, the debug hash route and (when given) metrics. */
export function bindServiceRoutes(ctx: RouteContext, options: ServiceRouteOptions): void {
  const { data, ids } = ctx;

  ctx.bind("capabilities", async (c) => {
    const res = await data.capabilities({}, ctx.call(c));
    return c.json(toJson(CapabilitiesResponseSchema, res, { alwaysEmitImplicit: true }) as object);
  });

  ctx.bind("healthz", (c) => c.json({ status: "ok" }));

  const ready =
    options.ready ??
    (async () => {
      try {
        await data.capabilities({}, { timeoutMs: 2000 });
        return true;
      } catch (err) {
        // A node that wants a token for Capabilities is up and answering: the probe has none.
        const code = ConnectError.from(err).code;
        return code === Code.Unauthenticated || code === Code.PermissionDenied;
      }
    });
  ctx.bind("readyz", async (c) => {
    const detail = options.readyDetail?.() ?? {};
    if (await ready()) return c.json({ status: "ready", ...detail });
    const parts = Object.entries(detail).map(([k, v]) => `${k} ${v}`);
    return errorResponse(
      new GatewayError(
        "unavailable",
        parts.length === 0 ? "not ready" : `not ready (${parts.join(", ")})`,
      ),
    );
  });

  ctx.bind("debugObjectHash", (c) => {
    const segs = rawPathSegments(c.req.url);
    const clsId = parseNameSegment(segs[3] ?? "", "class id");
    const partitionId = parsePartitionSegment(segs[4] ?? "");
    const identity = parseObjectSegment(segs[5] ?? "", ids);
    const hash = hashId(identity.id);
    const out: Record<string, unknown> = {
      clsId,
      partitionId,
      objectId: identity.id,
      kind: identity.kind,
      hash: hash.toString(),
      hashHex: `0x${hash.toString(16).padStart(16, "0")}`,
    };
    // `?partitions=N` asks about N partitions; without it, the collection's own count when
    // the host knows it.
    const n = c.req.query("partitions");
    let partitions: number | undefined;
    if (n !== undefined) {
      if (!/^[0-9]{1,10}$/.test(n) || Number(n) < 1 || Number(n) > U32_MAX) {
        throw new GatewayError(
          "bad_request",
          `partitions must be an integer in 1..${U32_MAX}, got "${n}"`,
        );
      }
      partitions = Number(n);
    } else {
      partitions = options.partitionCount?.(clsId);
    }
    if (partitions !== undefined) {
      out.partitions = partitions;
      out.partition = partitionOf(identity.id, partitions);
    }
    return c.json(out);
  });

  const metrics = options.metrics;
  if (metrics !== undefined) {
    ctx.bind(METRICS_ROUTE, async (c) => {
      const text = await metrics();
      return c.body(text, 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
    });
  }
}
