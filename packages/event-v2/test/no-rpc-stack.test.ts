// Loading the event library must not load the RPC stack: the generated wire types come
// from @oprc/grpc-api/messages, which depends on @bufbuild/protobuf only.
import { fileURLToPath } from "node:url";
import { moduleResolutions } from "@oprc/test-config/resolutions";
import { expect, it } from "vitest";

it("loading @oprc/event-v2 loads no @connectrpc module", () => {
  const seen = moduleResolutions(["@oprc/event-v2"], fileURLToPath(new URL("..", import.meta.url)));
  // Not vacuous: the generated messages and protobuf-es were loaded.
  expect(seen.some((s) => s.includes("@bufbuild/protobuf"))).toBe(true);
  expect(seen.some((s) => s.startsWith("@oprc/grpc-api/messages"))).toBe(true);
  expect(seen.filter((s) => s.includes("@connectrpc/"))).toEqual([]);
});
