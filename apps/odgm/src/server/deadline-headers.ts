// Deadlines a timer cannot hold. Node's timers take at most 2^31-1 ms (~24.8 days); a
// longer one fires after 1 ms with a warning, so a client asking for a 30-day deadline saw
// DEADLINE_EXCEEDED almost at once — on the fast path and in connect-node alike. Such a
// deadline is dropped before either sees the call: it means "no deadline" in practice.
import type { IncomingHttpHeaders } from "node:http";
import { parseTimeout } from "@connectrpc/connect/protocol-grpc";

/** The longest delay a Node timer holds. */
export const MAX_TIMER_MS: number = 2 ** 31 - 1;

/**
 * Removes a `grpc-timeout` (gRPC, gRPC-Web) or `connect-timeout-ms` (Connect) header whose
 * deadline is longer than a timer can hold. Malformed values are left for the protocol
 * handlers to refuse.
 */
export function dropUnrepresentableDeadline(headers: IncomingHttpHeaders): void {
  const grpc = headers["grpc-timeout"];
  if (typeof grpc === "string") {
    const t = parseTimeout(grpc, Number.MAX_SAFE_INTEGER);
    if (t.timeoutMs !== undefined && t.timeoutMs > MAX_TIMER_MS) delete headers["grpc-timeout"];
  }
  const connect = headers["connect-timeout-ms"];
  if (typeof connect === "string" && /^\d{1,10}$/.test(connect) && Number(connect) > MAX_TIMER_MS) {
    delete headers["connect-timeout-ms"];
  }
}
