// The remote data plane is a plug-in point implementation too: the shared DataService
// scenario is run against a server whose plane forwards every object call to a second
// server (over real HTTP/2), and its transcripts must equal those of the second server
// answered directly — codes, messages, responses and odgm trailers.
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRemoteDataPlane, DataService } from "../src/index.js";
import {
  type Caller,
  createConnectCaller,
  createTranscripts,
  startServer,
  type TestServer,
} from "./fixtures/harness.js";
import { createMemoryPlane, type MemoryPlane } from "./fixtures/memory-plane.js";
import { DATA_SERVICE_SCENARIO } from "./testing/index.js";

const transcripts = createTranscripts();
const servers: TestServer[] = [];
const callers: Caller[] = [];
afterAll(async () => {
  for (const c of callers) await c.close();
  for (const s of servers) await s.close();
});

/** A server over a fresh memory plane, or one relaying object calls to such a server. */
async function serve(relayed: boolean): Promise<Caller> {
  const origin = await startServer();
  servers.push(origin);
  let target = origin;
  if (relayed) {
    const remote = createRemoteDataPlane(
      createClient(DataService, createGrpcTransport({ baseUrl: origin.baseUrl })),
      { headers: { "x-relayed": "1" } },
    );
    // Capabilities, stats and invocations stay with the relay's own plane.
    target = await startServer({ plane: { ...origin.plane, ...remote } as MemoryPlane });
    servers.push(target);
  }
  const caller = createConnectCaller(target.baseUrl);
  callers.push(caller);
  return caller;
}

describe.each([
  ["direct", false],
  ["through a remote data plane", true],
])("the DataService scenario, %s", (name, relayed) => {
  let c: Caller;
  beforeAll(async () => {
    c = await serve(relayed);
  });
  for (const scenario of DATA_SERVICE_SCENARIO) {
    it(scenario.title, () => scenario.run(transcripts.recorder(name, scenario.name, c)));
  }
});

describe("the remote data plane", () => {
  it("answers exactly as the plane it reaches (identical transcripts)", () => {
    transcripts.expectIdentical(["direct", "through a remote data plane"]);
  });

  it("passes the headers it is told to, and adds its own", async () => {
    const seen: Headers[] = [];
    const plane = createMemoryPlane();
    const getEntry = plane.getEntry.bind(plane);
    plane.getEntry = (ref, key, call) => {
      seen.push(call.headers);
      return getEntry(ref, key, call);
    };
    const origin = await startServer({ plane });
    servers.push(origin);
    const remote = createRemoteDataPlane(
      createClient(DataService, createGrpcTransport({ baseUrl: origin.baseUrl })),
      { headers: { "x-forwarded-by": "7" }, passHeaders: ["x-consistency", "x-absent"] },
    );
    await remote.getEntry(
      { cls: "c", partition: 0, id: { kind: "string", id: "o" } },
      { kind: "string", key: "k" },
      {
        signal: new AbortController().signal,
        headers: new Headers({ "x-consistency": "follower", "x-other": "no" }),
      },
    );
    expect(seen[0]?.get("x-forwarded-by")).toBe("7");
    expect(seen[0]?.get("x-consistency")).toBe("follower");
    expect(seen[0]?.has("x-other")).toBe(false);
    expect(seen[0]?.has("x-absent")).toBe(false);
  });
});
