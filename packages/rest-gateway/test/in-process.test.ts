import { createClient, createRouterTransport } from "@connectrpc/connect";
import { DataService, OprcFunction } from "@oprc/grpc-api";
import { memoryServiceRoutes } from "./fixtures/memory-data-service.js";
import { runRestSuite } from "./rest-suite.js";

// The gateway as odgm embeds it: Connect clients over an in-process router transport.
runRestSuite("in-process (router transport, app.request)", {
  fixture: true,
  propertyRuns: 150,
  makeClient: async () => {
    const transport = createRouterTransport(memoryServiceRoutes());
    return {
      data: createClient(DataService, transport),
      functions: createClient(OprcFunction, transport),
      close: async () => {},
    };
  },
});
