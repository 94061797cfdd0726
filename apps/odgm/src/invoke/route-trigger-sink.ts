import type { TriggerInvocation, TriggerSink } from "@oprc/event-v2";
import { ResponseStatus } from "@oprc/grpc-api";
import type { CollectionRegistry } from "../collections/collection-registry.js";
import type { FunctionClientPool } from "./function-client-pool.js";

/**
 * Delivers fired triggers over gRPC to the target function's route (the target
 * collection's `invocations.fn_routes[fn].url`), the same path `InvokeFn`/`InvokeObj` take.
 * With `publish` (Zenoh up), every trigger is also published on its target's async
 * invocation key, for functions hosted on Zenoh; a target with no route then counts as
 * delivered once published. A target with no route (and nothing published), a transport
 * failure or a non-OKAY status rejects, which the dispatcher counts as a trigger failure.
 */
export function createRouteTriggerSink(
  registry: CollectionRegistry,
  functions: FunctionClientPool,
  publish?: (invocation: TriggerInvocation) => Promise<boolean>,
): TriggerSink {
  return {
    async dispatch(invocation, { signal }) {
      const { clsId, fnId } = invocation.request;
      const route = registry.get(clsId)?.invocations?.fnRoutes[fnId];
      const published = (await publish?.(invocation)) ?? false;
      if (route === undefined) {
        if (published) return;
        throw new Error(`trigger target ${clsId}/${fnId} has no function route on this node`);
      }
      const client = functions.get(route.url);
      const res =
        invocation.kind === "object"
          ? await client.invokeObj(invocation.request, { signal })
          : await client.invokeFn(invocation.request, { signal });
      if (res.status !== ResponseStatus.OKAY) {
        throw new Error(
          `trigger target ${clsId}/${fnId} answered ${ResponseStatus[res.status] ?? res.status}`,
        );
      }
    },
  };
}
