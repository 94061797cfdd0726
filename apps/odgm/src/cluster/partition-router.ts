// Any node answers any request: a call for a raft partition this node holds no replica of
// is handed, through the DataService, to a node that does (which forwards writes to the
// group's leader as usual). Whatever protocol the call came in on — gRPC, Connect, REST —
// it reaches the data plane, so this is the one place it is routed.

import { Code, ConnectError } from "@connectrpc/connect";
import type { DataPlane, DataPlaneCall, PartitionRef, RemoteDataPlane } from "@oprc/grpc-api";
import { DataPlaneError, isDataPlaneError } from "@oprc/grpc-api";
import { isConnectionFailure, isConnectionRefused } from "./connection-failure.js";

/** Header a forwarded call carries (the forwarding node's id); such a call is never forwarded again. */
export const FORWARDED_HEADER = "odgm-forwarded-by";

/** Options of {@link createPartitionRouter}. */
export interface PartitionRouterOptions {
  /** Serves what this node holds, and every refusal (unknown collection, bad partition…). */
  readonly local: DataPlane;
  /**
   * The nodes holding a replica of `ref`'s partition when this node holds none, in the
   * order to try them; `undefined` when this node serves the partition itself. For a call
   * another node forwarded here (`forwardedBy`: its id, 0 when not given as one),
   * `undefined` unless this node knows where the partition went (which the sender may not
   * know yet), and never the sender.
   */
  readonly replicasElsewhere: (
    ref: PartitionRef,
    forwardedBy: number | undefined,
  ) => readonly number[] | undefined;
  /** The data plane of another node, `undefined` when its address is unknown. */
  readonly remote: (nodeId: number) => RemoteDataPlane | undefined;
  /** Told of every forwarded call. */
  readonly onForwarded?: () => void;
  /**
   * When this node may not know yet what the cluster knows of `ref`'s partition (its
   * collection was just created elsewhere, or its replica here is still opening), a promise
   * that settles once it does or after a bound; the call is routed after it.
   */
  readonly pending?: (ref: PartitionRef) => Promise<void> | undefined;
}

/** A refused connection never carried the call: trying another replica is safe, even for a write. */
function refused(err: unknown): boolean {
  return isConnectionRefused(ConnectError.from(err));
}

/**
 * The connection broke after the call went out (reset, or the stream cancelled as the peer
 * died) while this side's caller was still waiting: the remote may have applied it. Connect
 * reports these as ABORTED — a CAS refusal's code — or CANCELED, which must not reach the
 * client as such. (The remote's own answers arrive as DataPlaneErrors.)
 */
function lostAnswer(err: unknown, call: DataPlaneCall): boolean {
  if (isDataPlaneError(err) || call.signal.aborted) return false;
  const ce = ConnectError.from(err);
  return ce.code === Code.Canceled || isConnectionFailure(ce);
}

/**
 * Wraps `local` so that object calls for partitions held elsewhere go to a node holding
 * them. `capabilities`, `stats` and invocations stay local.
 */
export function createPartitionRouter(o: PartitionRouterOptions): DataPlane {
  const { local } = o;

  /** The replicas to try for `ref`, or `undefined` to serve it here. */
  const targets = (ref: PartitionRef, call: DataPlaneCall): RemoteDataPlane[] | undefined => {
    const by = call.headers.get(FORWARDED_HEADER);
    const nodes = o.replicasElsewhere(ref, by === null ? undefined : Number(by) || 0);
    if (nodes === undefined) return undefined;
    const planes = nodes.map((id) => o.remote(id)).filter((p) => p !== undefined);
    return planes.length === 0 ? undefined : planes;
  };

  const unreachable = (last: unknown) =>
    new DataPlaneError(
      "unavailable",
      `no node holding this partition could be reached: ${ConnectError.from(last).rawMessage}`,
      { cause: last },
    );

  /** Runs `fn` on the first replica that takes the connection. */
  const via = async <T>(
    planes: RemoteDataPlane[],
    call: DataPlaneCall,
    fn: (p: RemoteDataPlane) => Promise<T>,
  ) => {
    o.onForwarded?.();
    let last: unknown;
    for (const p of planes) {
      try {
        return await fn(p);
      } catch (err) {
        if (refused(err)) {
          last = err;
          continue;
        }
        if (lostAnswer(err, call)) {
          throw new DataPlaneError(
            "unavailable",
            `lost the answer of the node holding this partition (the operation may have been applied): ${ConnectError.from(err).rawMessage}`,
            { cause: err },
          );
        }
        throw err;
      }
    }
    throw unreachable(last);
  };

  /** Runs `fn` here, or on a replica elsewhere when this node holds none. */
  const route = <T>(
    ref: PartitionRef,
    call: DataPlaneCall,
    fn: (p: RemoteDataPlane) => Promise<T>,
  ) => {
    const planes = targets(ref, call);
    return planes === undefined ? fn(local) : via(planes, call, fn);
  };
  /** {@link route}, once this node knows of `ref`'s partition what the cluster knows. */
  const serve = <T>(
    ref: PartitionRef,
    call: DataPlaneCall,
    fn: (p: RemoteDataPlane) => Promise<T>,
  ): Promise<T> => {
    const settling = o.pending?.(ref);
    return settling === undefined
      ? route(ref, call, fn)
      : settling.then(() => route(ref, call, fn));
  };
  /**
   * A listing streams from the first replica that takes the connection. Once it has
   * streamed, a failure ends the listing (the caller resumes from its cursor).
   */
  const routeList = <T>(
    ref: PartitionRef,
    call: DataPlaneCall,
    fn: (p: RemoteDataPlane) => AsyncIterable<T>,
  ): AsyncIterable<T> => {
    const planes = targets(ref, call);
    if (planes === undefined) return fn(local);
    o.onForwarded?.();
    return (async function* () {
      let last: unknown;
      for (const p of planes) {
        let streamed = false;
        try {
          for await (const item of fn(p)) {
            streamed = true;
            yield item;
          }
          return;
        } catch (err) {
          if (streamed || !refused(err)) throw err;
          last = err;
        }
      }
      throw unreachable(last);
    })();
  };
  /** {@link routeList}, once this node knows of `ref`'s partition what the cluster knows. */
  const list = <T>(
    ref: PartitionRef,
    call: DataPlaneCall,
    fn: (p: RemoteDataPlane) => AsyncIterable<T>,
  ): AsyncIterable<T> => {
    const settling = o.pending?.(ref);
    if (settling === undefined) return routeList(ref, call, fn);
    return (async function* () {
      await settling;
      yield* routeList(ref, call, fn);
    })();
  };

  return {
    capabilities: () => local.capabilities(),
    stats: (call) => local.stats(call),
    invokeFn: (inv, call) => local.invokeFn(inv, call),
    invokeObj: (inv, call) => local.invokeObj(inv, call),
    getObject: (ref, call) => serve(ref, call, (p) => p.getObject(ref, call)),
    deleteObject: (ref, call) => serve(ref, call, (p) => p.deleteObject(ref, call)),
    setObject: (ref, write, call) => serve(ref, call, (p) => p.setObject(ref, write, call)),
    mergeObject: (ref, write, call) => serve(ref, call, (p) => p.mergeObject(ref, write, call)),
    getEntry: (ref, key, call) => serve(ref, call, (p) => p.getEntry(ref, key, call)),
    setEntry: (ref, entry, call) => serve(ref, call, (p) => p.setEntry(ref, entry, call)),
    deleteEntry: (ref, key, call) => serve(ref, call, (p) => p.deleteEntry(ref, key, call)),
    batchEntries: (ref, batch, call) => serve(ref, call, (p) => p.batchEntries(ref, batch, call)),
    listEntries: (ref, query, call) => list(ref, call, (p) => p.listEntries(ref, query, call)),
    listObjects: (part, query, call) => list(part, call, (p) => p.listObjects(part, query, call)),
  };
}
