// Telling a peer's answer from a broken connection, for calls whose outcome matters.
import type { ConnectError } from "@connectrpc/connect";

/**
 * A call that failed in the connection rather than with the peer's answer. Connect reports a
 * reset connection (ECONNRESET) or destroyed stream as ABORTED, the code of a CAS refusal,
 * so the code alone cannot tell them apart; a transport failure keeps Node's error as cause.
 */
export function isConnectionFailure(ce: ConnectError): boolean {
  let c: unknown = ce.cause;
  for (let depth = 0; c instanceof Error && depth < 8; depth++, c = c.cause) {
    if (typeof (c as { code?: unknown }).code === "string") return true;
  }
  return false;
}

/**
 * A call whose connection was refused: it never left this node, so it was not applied
 * anywhere, and sending it elsewhere is safe even for a write.
 */
export function isConnectionRefused(ce: ConnectError): boolean {
  let c: unknown = ce.cause;
  for (let depth = 0; c instanceof Error && depth < 8; depth++, c = c.cause) {
    if ((c as { code?: unknown }).code === "ECONNREFUSED") return true;
  }
  return false;
}
