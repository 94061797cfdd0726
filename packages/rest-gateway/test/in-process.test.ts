import { createClient, createRouterTransport } from "@connectrpc/connect";
import { runRestSuite } from "@oprc/conformance";
import { DataService, OprcFunction } from "@oprc/grpc-api";
import { memoryServiceRoutes } from "./fixtures/memory-data-service.js";
import { gatewayTarget } from "./gateway-target.js";

// The gateway in process, over Connect's router transport. (odgm embeds it over a client that
// calls its handlers directly; apps/odgm/test/rest-conformance.test.ts runs this suite there.)
runRestSuite("in-process (router transport, app.request)", {
  fixture: true,
  propertyRuns: 150,
  start: () => {
    const transport = createRouterTransport(memoryServiceRoutes());
    return gatewayTarget(
      {
        data: createClient(DataService, transport),
        functions: createClient(OprcFunction, transport),
        close: async () => {},
      },
      false,
    );
  },
});
