import { describe, expect, it } from "vitest";
import { frameBucket, profileShares, topFunctions } from "./profile.js";

describe("frameBucket", () => {
  it("names packages, workspace code, node internals and V8 pseudo-frames", () => {
    expect(
      frameBucket(
        "file:///w/node_modules/.pnpm/@connectrpc+connect-node@2.2.0/node_modules/@connectrpc/connect-node/dist/esm/x.js",
        "f",
      ),
    ).toBe("@connectrpc/connect-node");
    expect(frameBucket("file:///w/node_modules/hono/dist/index.js", "f")).toBe("hono");
    expect(frameBucket("file:///w/packages/entry-store/src/entry-store.ts", "f")).toBe(
      "@oprc/entry-store",
    );
    expect(frameBucket("node:internal/http2/core", "f")).toBe("node: internals");
    expect(frameBucket("", "(garbage collector)")).toBe("(garbage collector)");
    expect(frameBucket("", "writev")).toBe("(native)");
  });
});

describe("profileShares", () => {
  it("charges each sample's time delta to its frame's bucket, idle excluded", () => {
    const shares = profileShares({
      nodes: [
        { id: 1, callFrame: { functionName: "(idle)", url: "" } },
        { id: 2, callFrame: { functionName: "(garbage collector)", url: "" } },
        {
          id: 3,
          callFrame: { functionName: "get", url: "file:///w/packages/entry-store/src/a.ts" },
        },
      ],
      samples: [1, 2, 3, 3, 1],
      timeDeltas: [100, 10, 20, 10, 100],
    });
    expect(shares).toEqual([
      { bucket: "@oprc/entry-store", share: 0.75 },
      { bucket: "(garbage collector)", share: 0.25 },
    ]);
  });
});

describe("topFunctions", () => {
  it("ranks functions by busy self time", () => {
    const top = topFunctions(
      {
        nodes: [
          { id: 1, callFrame: { functionName: "(idle)", url: "" } },
          {
            id: 2,
            callFrame: {
              functionName: "encode",
              url: "file:///w/node_modules/@bufbuild/protobuf/x.js",
            },
          },
          { id: 3, callFrame: { functionName: "", url: "file:///w/apps/odgm/src/a.ts" } },
        ],
        samples: [1, 2, 3, 3, 2, 2],
        timeDeltas: [50, 10, 10, 10, 10, 10],
      },
      1,
    );
    expect(top).toEqual([{ fn: "encode", bucket: "@bufbuild/protobuf", share: 0.6 }]);
  });
});
