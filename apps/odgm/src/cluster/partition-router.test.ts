import { Code, ConnectError } from "@connectrpc/connect";
import {
  type DataPlane,
  type DataPlaneCall,
  DataPlaneError,
  type EntryWrite,
  isDataPlaneError,
  type ObjectRef,
  type RemoteDataPlane,
} from "@oprc/grpc-api";
import { describe, expect, it } from "vitest";
import { createPartitionRouter, FORWARDED_HEADER } from "./partition-router.js";

// How a call forwarded to another node's replica fails: the remote's own answers pass
// through; a connection that broke after the call went out is UNAVAILABLE "may have been
// applied", never the ABORTED (a CAS refusal's code) or CANCELED Connect reports for it; a
// refused connection tries the next replica.

// The router only passes these on.
const ref = { cls: "kv", partition: 0, id: { id: "o", kind: "string" } } as unknown as ObjectRef;
const entry = { key: { key: "k", kind: "string" } } as unknown as EntryWrite;
const call = (signal = new AbortController().signal): DataPlaneCall => ({
  signal,
  headers: new Headers(),
});

const nodeError = (code: string, message: string) => Object.assign(new Error(message), { code });
const RESET = new ConnectError(
  "read ECONNRESET",
  Code.Aborted,
  undefined,
  undefined,
  nodeError("ECONNRESET", "read ECONNRESET"),
);
const STREAM_CANCEL = new ConnectError(
  "http/2 stream closed with error code CANCEL (0x8)",
  Code.Canceled,
);
const REFUSED = new ConnectError(
  "connect ECONNREFUSED 127.0.0.1:1",
  Code.Unavailable,
  undefined,
  undefined,
  nodeError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:1"),
);
const CAS = new DataPlaneError("version_mismatch", "expected object version 1, actual 2", {
  expected: 1n,
  actual: 2n,
});

function routerWith(failures: Record<number, unknown>) {
  const tried: number[] = [];
  const remote = (id: number): RemoteDataPlane =>
    ({
      setEntry: async () => {
        tried.push(id);
        if (failures[id] !== undefined) throw failures[id];
      },
    }) as unknown as RemoteDataPlane;
  const router = createPartitionRouter({
    local: {} as DataPlane,
    replicasElsewhere: () => [1, 2],
    remote,
  });
  return { router, tried };
}

async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "ok";
  } catch (err) {
    if (isDataPlaneError(err)) return err.code;
    return `connect:${Code[ConnectError.from(err).code]}`;
  }
}

describe("createPartitionRouter", () => {
  it("answers a reset or cancelled stream as unavailable, and tries no other replica", async () => {
    for (const broken of [RESET, STREAM_CANCEL]) {
      const { router, tried } = routerWith({ 1: broken });
      expect(await outcome(router.setEntry(ref, entry, call()))).toBe("unavailable");
      expect(tried).toEqual([1]);
    }
    const { router } = routerWith({ 1: RESET });
    await router.setEntry(ref, entry, call()).catch((err: unknown) => {
      expect(String((err as Error).message)).toMatch(/may have been applied/);
    });
  });

  it("passes the remote's own answers through (a CAS refusal stays a CAS refusal)", async () => {
    const { router } = routerWith({ 1: CAS });
    expect(await outcome(router.setEntry(ref, entry, call()))).toBe("version_mismatch");
  });

  it("keeps CANCELED when this side's caller went away", async () => {
    const ac = new AbortController();
    ac.abort();
    const { router } = routerWith({ 1: STREAM_CANCEL });
    expect(await outcome(router.setEntry(ref, entry, call(ac.signal)))).toBe("connect:Canceled");
  });

  it("tries the next replica when a connection is refused, and is unavailable when all are", async () => {
    const one = routerWith({ 1: REFUSED });
    expect(await outcome(one.router.setEntry(ref, entry, call()))).toBe("ok");
    expect(one.tried).toEqual([1, 2]);
    const both = routerWith({ 1: REFUSED, 2: REFUSED });
    expect(await outcome(both.router.setEntry(ref, entry, call()))).toBe("unavailable");
  });

  it("serves a forwarded call here unless this node knows where the partition went", async () => {
    const forwarded = (): DataPlaneCall => ({
      signal: new AbortController().signal,
      headers: new Headers({ [FORWARDED_HEADER]: "5" }),
    });
    const senders: (number | undefined)[] = [];
    const route = (moved: readonly number[] | undefined) => {
      const tried: string[] = [];
      const plane = (name: string) =>
        ({
          setEntry: async () => {
            tried.push(name);
          },
        }) as unknown as RemoteDataPlane;
      const router = createPartitionRouter({
        local: plane("local") as unknown as DataPlane,
        replicasElsewhere: (_ref, by) => {
          senders.push(by);
          return by !== undefined ? moved : [1, 2];
        },
        remote: (id) => plane(`node ${id}`),
      });
      return { router, tried };
    };
    const stays = route(undefined);
    await stays.router.setEntry(ref, entry, forwarded());
    await stays.router.setEntry(ref, entry, call());
    expect(stays.tried).toEqual(["local", "node 1"]);
    const goes = route([3]);
    await goes.router.setEntry(ref, entry, forwarded());
    expect(goes.tried).toEqual(["node 3"]);
    // The router passes on who forwarded the call (never to be sent back there).
    expect(senders).toEqual([5, undefined, 5]);
  });

  it("lists from the next replica when a connection is refused, until one has streamed", async () => {
    const tried: number[] = [];
    const listing = (fails: Record<number, "refused" | "midway">) =>
      createPartitionRouter({
        local: {} as DataPlane,
        replicasElsewhere: () => [1, 2, 3],
        remote: (id) =>
          ({
            listEntries: async function* () {
              tried.push(id);
              if (fails[id] === "refused") throw REFUSED;
              yield `${id}a`;
              if (fails[id] === "midway") throw REFUSED;
              yield `${id}b`;
            },
          }) as unknown as RemoteDataPlane,
      });
    const drain = async (router: DataPlane) => {
      const out: unknown[] = [];
      try {
        for await (const e of router.listEntries(ref, {} as never, call())) out.push(e);
      } catch (err) {
        out.push(isDataPlaneError(err) ? err.code : `connect:${Code[ConnectError.from(err).code]}`);
      }
      return out;
    };
    expect(await drain(listing({ 1: "refused" }))).toEqual(["2a", "2b"]);
    expect(tried).toEqual([1, 2]);
    // A stream that broke after it streamed is not started again elsewhere.
    tried.length = 0;
    expect(await drain(listing({ 1: "midway" }))).toEqual(["1a", "connect:Unavailable"]);
    expect(tried).toEqual([1]);
    tried.length = 0;
    expect(await drain(listing({ 1: "refused", 2: "refused", 3: "refused" }))).toEqual([
      "unavailable",
    ]);
    expect(tried).toEqual([1, 2, 3]);
  });

  it("routes a call only once the node has learned what it was waiting to learn of the partition", async () => {
    // Until `pending` settles, the node does not know the partition (replicasElsewhere
    // says "serve it here"); once it has, the partition is on node 2.
    let learned = false;
    let settle = () => {};
    const learning = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const tried: string[] = [];
    const plane = (name: string) =>
      ({
        setEntry: async () => {
          tried.push(name);
        },
        listEntries: async function* () {
          tried.push(name);
          yield name;
        },
      }) as unknown as RemoteDataPlane;
    const router = createPartitionRouter({
      local: plane("local") as unknown as DataPlane,
      replicasElsewhere: () => (learned ? [2] : undefined),
      remote: (id) => plane(`node ${id}`),
      pending: () => (learned ? undefined : learning),
    });
    const write = router.setEntry(ref, entry, call());
    const listed = (async () => {
      const out: unknown[] = [];
      for await (const e of router.listEntries(ref, {} as never, call())) out.push(e);
      return out;
    })();
    await new Promise((r) => setTimeout(r, 10));
    expect(tried).toEqual([]);
    learned = true;
    settle();
    await write;
    expect(await listed).toEqual(["node 2"]);
    expect(tried).toEqual(["node 2", "node 2"]);
  });
});
