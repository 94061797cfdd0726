// Works around connect-es issue #1768 (open; fix proposed in PR #1769): when a peer sends
// GOAWAY on an idle HTTP/2 connection, connect-node's Http2SessionManager destroys the
// session with an error that Node raises later; if the manager has already detached its
// listeners, that error is uncaught and kills the process. Nodes of a cluster shut down
// and restart all the time, so peers send exactly that GOAWAY. This guard gives every
// client session a listener that swallows such a late error (the manager's own listeners
// still see and handle errors while attached), as the upstream fix does. Remove it once
// the installed @connectrpc/connect-node carries the fix.
import { createRequire, syncBuiltinESMExports } from "node:module";

let installed = false;

/** Installs the guard once per process. */
export function guardHttp2ClientSessions(): void {
  if (installed) return;
  installed = true;
  const http2 = createRequire(import.meta.url)("node:http2") as typeof import("node:http2");
  const connect = http2.connect;
  http2.connect = ((...args: Parameters<typeof connect>) => {
    const session = connect(...args);
    session.on("error", () => undefined);
    return session;
  }) as typeof connect;
  // Code that imported `node:http2` as an ES module sees the patched function too.
  syncBuiltinESMExports();
}
