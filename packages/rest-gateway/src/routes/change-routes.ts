// GET /api/class/:cls/:pid/changes — one partition's change feed as Server-Sent Events,
// over a WatchService client: inside odgm the node's own service (and interceptors), in
// the standalone gateway a gRPC stream to the remote node. Every change is an
// event `change` whose `id:` is its revision and whose data is the ChangeRecord as proto3
// JSON; an idle stream gets `progress` events whose `id:` is the revision everything up to
// which was sent, so a browser's EventSource resumes (Last-Event-ID) without a gap or a
// duplicate. Errors before the stream starts are the gateway's JSON errors; a failure later
// is an `error` event with {"code","message"}, and the stream ends.
import { toJson } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { ChangeAction, ChangeRecordSchema, type WatchService } from "@oprc/grpc-api";
import { streamSSE } from "hono/streaming";
import { GatewayError } from "../gateway-error.js";
import { passedOnHeaders } from "./route-context.js";

const ACTION_NAMES: Record<string, ChangeAction> = {
  create: ChangeAction.CREATE,
  update: ChangeAction.UPDATE,
  delete: ChangeAction.DELETE,
};

function bad(message: string): GatewayError {
  return new GatewayError("bad_request", message);
}

/** A revision from a query parameter or Last-Event-ID: decimal u64. */
function revision(raw: string, what: string): bigint {
  if (!/^\d{1,20}$/.test(raw) || BigInt(raw) > 2n ** 64n - 1n) {
    throw bad(`${what} must be a revision (decimal u64), got ${JSON.stringify(raw.slice(0, 40))}`);
  }
  return BigInt(raw);
}

/** The `error` event that ends a stream: `{code, message}` as the gateway's JSON errors. */
function errorEvent(e: ConnectError): { event: string; data: string } {
  return {
    event: "error",
    data: JSON.stringify({ code: GatewayError.from(e).code, message: e.rawMessage }),
  };
}

/** Reconnection delay an EventSource is told to use after the node was unavailable, ms. */
const RETRY_MS = 1_000;

const QUERY = [
  "start_revision",
  "object_id",
  "id_prefix",
  "key_prefix",
  "actions",
  "include_values",
  "progress_ms",
];

/** Binds the SSE route (and its OpenAPI description) to `watch`. */
export function bindChangeRoutes(app: OpenAPIHono, watch: Client<typeof WatchService>): void {
  app.openAPIRegistry.registerPath(
    createRoute({
      operationId: "watchChanges",
      method: "get",
      path: "/api/class/{cls}/{pid}/changes",
      summary:
        "The partition's change feed as Server-Sent Events (`change` events with the revision as id, `progress` events while idle); Last-Event-ID resumes",
      request: {
        params: z.object({ cls: z.string(), pid: z.string() }),
        query: z.object({
          start_revision: z.string().optional(),
          object_id: z.string().optional(),
          id_prefix: z.string().optional(),
          key_prefix: z.string().optional(),
          actions: z.string().optional().describe("comma-separated: create, update, delete"),
          include_values: z.enum(["true", "false"]).optional(),
          progress_ms: z.string().optional(),
        }),
      },
      responses: {
        200: {
          description: "The event stream",
          content: { "text/event-stream": { schema: z.string() } },
        },
        400: { description: "Bad parameters, or a compacted start revision (failed_precondition)" },
        404: { description: "Unknown collection or partition" },
      },
    }),
  );

  app.get("/api/class/:cls/:pid/changes", async (c) => {
    for (const k of Object.keys(c.req.query())) {
      if (!QUERY.includes(k))
        throw bad(
          `unknown query parameter ${JSON.stringify(k.slice(0, 40))}; known: ${QUERY.join(", ")}`,
        );
    }
    const pid = c.req.param("pid");
    if (!/^\d{1,10}$/.test(pid) || Number(pid) > 0xffff_ffff)
      throw bad(`partition must be a u32, got ${JSON.stringify(pid.slice(0, 20))}`);
    const q = (k: string) => c.req.query(k);
    const lastEventId = c.req.header("last-event-id");
    // Resume after the last event the client saw; otherwise start where asked (or now).
    const start =
      lastEventId !== undefined && lastEventId !== ""
        ? revision(lastEventId, "Last-Event-ID") + 1n
        : q("start_revision") === undefined
          ? 0n
          : revision(q("start_revision") as string, "start_revision");
    const actions = (q("actions") ?? "")
      .split(",")
      .map((a) => a.trim().toLowerCase())
      .filter((a) => a !== "")
      .map((a) => {
        const action = ACTION_NAMES[a];
        if (action === undefined)
          throw bad(
            `unknown action ${JSON.stringify(a.slice(0, 20))}; use create, update or delete`,
          );
        return action;
      });
    const includeValues = q("include_values");
    if (includeValues !== undefined && includeValues !== "true" && includeValues !== "false") {
      throw bad("include_values must be true or false");
    }
    const progress = q("progress_ms");
    if (progress !== undefined && !/^\d{1,7}$/.test(progress))
      throw bad("progress_ms must be a number of milliseconds");
    const abort = new AbortController();
    c.req.raw.signal.addEventListener("abort", () => abort.abort(), { once: true });
    const stream = watch
      .watch(
        {
          clsId: c.req.param("cls"),
          partitionIds: [Number(pid)],
          startRevision: start,
          ...(q("object_id") === undefined ? {} : { objectIdStr: q("object_id") }),
          ...(q("id_prefix") === undefined ? {} : { idPrefix: q("id_prefix") }),
          ...(q("key_prefix") === undefined ? {} : { keyPrefix: q("key_prefix") }),
          actions,
          includeValues: includeValues === "true",
          progressIntervalMs: progress === undefined ? 0 : Number(progress),
        },
        { signal: abort.signal, headers: passedOnHeaders(c) },
      )
      [Symbol.asyncIterator]();
    // The first message (or the refusal) before answering, so a bad request is a JSON error.
    let first: IteratorResult<unknown>;
    try {
      first = await stream.next();
    } catch (err) {
      abort.abort();
      const e = ConnectError.from(err);
      // A node that is down or shutting down: an EventSource treats any status but 200 as
      // final, so answer a stream with the error and a retry delay; it reconnects (with its
      // Last-Event-ID) instead of giving up.
      if (e.code === Code.Unavailable) {
        return streamSSE(c, async (sse) => {
          await sse.writeSSE({ ...errorEvent(e), retry: RETRY_MS });
        });
      }
      throw err;
    }
    return streamSSE(c, async (sse) => {
      sse.onAbort(() => abort.abort());
      let next: IteratorResult<unknown> = first;
      try {
        while (next.done !== true) {
          const msg = next.value as Awaited<ReturnType<typeof stream.next>>["value"];
          const ev = (msg as { event: { case: string; value: unknown } }).event;
          if (ev.case === "change") {
            const r = ev.value as Parameters<typeof toJson<typeof ChangeRecordSchema>>[1];
            await sse.writeSSE({
              event: "change",
              id: String(r.revision),
              data: JSON.stringify(toJson(ChangeRecordSchema, r)),
            });
          } else if (ev.case === "progress") {
            const p = ev.value as { revision: bigint };
            await sse.writeSSE({
              event: "progress",
              id: String(p.revision),
              data: JSON.stringify({ revision: String(p.revision) }),
            });
          }
          next = await stream.next();
        }
      } catch (err) {
        if (abort.signal.aborted) return;
        await sse.writeSSE(errorEvent(ConnectError.from(err)));
      } finally {
        abort.abort();
      }
    });
  });
}
