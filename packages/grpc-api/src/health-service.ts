import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type Health,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "./gen/grpc/health/v1/health_pb.js";

/** Options of {@link createHealthService}. */
export interface HealthServiceOptions {
  /**
   * Initial status per service name; `""` is the server as a whole. Default: `""`,
   * `oprc.DataService` and `oprc.OprcFunction` all SERVING.
   */
  initial?: Readonly<Record<string, ServingStatus>> | undefined;
}

/**
 * The standard `grpc.health.v1.Health` service (Check, List, Watch) plus the controls its
 * host uses to report readiness.
 */
export interface HealthService {
  /** The handlers to register with `router.service(Health, impl)`. */
  readonly impl: ServiceImpl<typeof Health>;
  /** Sets a service's status and notifies its watchers. Ignored after {@link shutdown}. */
  setStatus(service: string, status: ServingStatus): void;
  /** The current status of a service, `undefined` when unknown. */
  getStatus(service: string): ServingStatus | undefined;
  /** Marks every service NOT_SERVING and freezes statuses (graceful shutdown, as grpc-go does). */
  shutdown(): void;
}

/**
 * Creates the standard gRPC health service, so stock probes (`grpc_health_probe`,
 * Kubernetes gRPC probes, load balancers) can check the node. Check answers NOT_FOUND for
 * an unknown service; Watch answers SERVICE_UNKNOWN for it and keeps watching.
 *
 * @example
 * ```ts
 * const health = createHealthService();
 * router.service(Health, health.impl);
 * process.on("SIGTERM", () => health.shutdown());
 * ```
 */
export function createHealthService(options: HealthServiceOptions = {}): HealthService {
  const statuses = new Map<string, ServingStatus>(
    Object.entries(
      options.initial ?? {
        "": ServingStatus.SERVING,
        "oprc.DataService": ServingStatus.SERVING,
        "oprc.OprcFunction": ServingStatus.SERVING,
      },
    ),
  );
  const watchers = new Map<string, Set<() => void>>();
  let frozen = false;

  const notify = (service: string): void => {
    for (const wake of watchers.get(service) ?? []) wake();
  };
  const set = (service: string, status: ServingStatus): void => {
    if (statuses.get(service) === status) return;
    statuses.set(service, status);
    notify(service);
  };

  const impl: ServiceImpl<typeof Health> = {
    check(req) {
      const status = statuses.get(req.service);
      if (status === undefined) {
        throw new ConnectError(`unknown service ${JSON.stringify(req.service)}`, Code.NotFound);
      }
      return { status };
    },
    list() {
      const out: Record<string, { status: ServingStatus }> = {};
      for (const [name, status] of statuses) out[name] = { status };
      return { statuses: out };
    },
    async *watch(req, ctx) {
      const service = req.service;
      let pending = true;
      let wake: (() => void) | undefined;
      const onChange = (): void => {
        pending = true;
        wake?.();
      };
      const subs = watchers.get(service) ?? new Set<() => void>();
      watchers.set(service, subs);
      subs.add(onChange);
      const onAbort = (): void => wake?.();
      ctx.signal.addEventListener("abort", onAbort);
      try {
        let last: ServingStatus | undefined;
        while (!ctx.signal.aborted) {
          if (pending) {
            pending = false;
            const status = statuses.get(service) ?? ServingStatus.SERVICE_UNKNOWN;
            if (status !== last) {
              last = status;
              yield { status };
            }
            continue;
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = undefined;
        }
      } finally {
        ctx.signal.removeEventListener("abort", onAbort);
        subs.delete(onChange);
        if (subs.size === 0) watchers.delete(service);
      }
    },
  };

  return {
    impl,
    setStatus(service, status) {
      if (!frozen) set(service, status);
    },
    getStatus: (service) => statuses.get(service),
    shutdown() {
      frozen = true;
      for (const service of statuses.keys()) set(service, ServingStatus.NOT_SERVING);
    },
  };
}
