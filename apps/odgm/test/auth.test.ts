// Bearer-token authentication and authorization on every surface of a real node: gRPC on
// the unary fast path and on connect-node's router (streams, and a node with the fast path
// off), gRPC-Web, Connect, REST, and Google's C-core (python3-grpcio). Absent, malformed
// and unknown tokens are UNAUTHENTICATED / 401, missing rights PERMISSION_DENIED / 403,
// and both are counted.
import { execFile } from "node:child_process";
import { rm, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import {
  CollectionService,
  DataService,
  Health,
  SetKeyRequestSchema,
  SingleKeyRequestSchema,
  WatchService,
} from "@oprc/grpc-api";
import { findPythonWithGrpc, skipPythonInterop } from "@oprc/grpc-api/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTokenSet, digestToken, parseTokenEntries } from "../src/index.js";
import type { OdgmProcess } from "./fixtures/odgm-process.js";
import { startTempNode, type TempNode, tempDir } from "./fixtures/temp-node.js";

const exec = promisify(execFile);
const ADMIN = "admin-token-0123456789abcdef";
const WRITER = "writer-token-0123456789abcdef";
const READER = "reader-token-0123456789abcdef";
/** A writer limited to collection `scoped`. */
const SCOPED = "scoped-token-0123456789abcdef";
/** An admin whose token expired. */
const EXPIRED = "expired-token-0123456789abcdef";

let n: TempNode;
let slow: TempNode;
/** Holds the token file. */
let tokensDir: string | undefined;
beforeAll(async () => {
  const dir = await tempDir("odgm-auth-");
  tokensDir = dir;
  // The file holds the admin token only as its SHA-256 digest.
  const file = `${dir}/tokens`;
  await writeFile(
    file,
    `# role token-or-digest [collections]\nadmin sha256:${digestToken(ADMIN).toString("hex")}\nwrite ${WRITER}\n`,
  );
  const env = {
    ODGM_AUTH_TOKENS_FILE: file,
    ODGM_AUTH_TOKENS: `read ${READER}; write ${SCOPED} scoped; admin ${EXPIRED} expires=2020-01-01`,
    ODGM_COLLECTION: '[{"name":"default"},{"name":"scoped"}]',
  };
  n = await startTempNode(env);
  slow = await startTempNode({ ...env, ODGM_GRPC_FAST_PATH: "false" });
});
afterAll(async () => {
  await n?.close();
  await slow?.close();
  if (tokensDir !== undefined) await rm(tokensDir, { recursive: true, force: true });
});

const bearer = (token: string | undefined): Record<string, string> =>
  token === undefined ? {} : { authorization: `Bearer ${token}` };

const set = (cls = "default") =>
  create(SetKeyRequestSchema, {
    clsId: cls,
    objectIdStr: "o",
    keyStr: "k",
    value: { data: new Uint8Array([1]) },
  });

/** The code a call ended with (`Code` value, 0 for success). */
async function codeOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 0;
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

/** Every RPC surface: the same expectations hold on each. */
const surfaces: [string, () => Transport][] = [
  ["gRPC, unary fast path", () => createGrpcTransport({ baseUrl: n.node.url })],
  ["gRPC, connect-node router", () => createGrpcTransport({ baseUrl: slow.node.url })],
  ["gRPC-Web", () => createGrpcWebTransport({ baseUrl: n.node.url, httpVersion: "1.1" })],
  ["Connect", () => createConnectTransport({ baseUrl: n.node.url, httpVersion: "1.1" })],
];

describe.each(surfaces)("%s", (_name, transport) => {
  it("refuses absent, malformed, unknown and expired tokens with UNAUTHENTICATED", async () => {
    const data = createClient(DataService, transport());
    const expired = await data.setValue(set(), { headers: bearer(EXPIRED) }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(expired?.code).toBe(Code.Unauthenticated);
    expect(expired?.rawMessage).toMatch(/expired at 2020-01-01T00:00:00.000Z/);
    expect(await codeOf(data.setValue(set()))).toBe(Code.Unauthenticated);
    expect(
      await codeOf(data.setValue(set(), { headers: { authorization: `Basic ${WRITER}` } })),
    ).toBe(Code.Unauthenticated);
    expect(
      await codeOf(data.setValue(set(), { headers: bearer("unknown-token-0123456789") })),
    ).toBe(Code.Unauthenticated);
    // A digest is not a token.
    const digest = digestToken(ADMIN).toString("hex");
    expect(await codeOf(data.getValue({ clsId: "default" }, { headers: bearer(digest) }))).toBe(
      Code.Unauthenticated,
    );
    // Nor can a client pass itself off as the node or a cluster member.
    expect(
      await codeOf(data.setValue(set(), { headers: { "x-odgm-trusted": "0".repeat(64) } })),
    ).toBe(Code.Unauthenticated);
  });

  it("gives each role its rights and no more", async () => {
    const data = createClient(DataService, transport());
    const admin = createClient(CollectionService, transport());
    const get = create(SingleKeyRequestSchema, { clsId: "default", objectIdStr: "o", keyStr: "k" });
    expect(await codeOf(data.setValue(set(), { headers: bearer(READER) }))).toBe(
      Code.PermissionDenied,
    );
    expect(await codeOf(data.setValue(set(), { headers: bearer(WRITER) }))).toBe(0);
    expect(await codeOf(data.getValue(get, { headers: bearer(READER) }))).toBe(0);
    expect(await codeOf(data.setValue(set(), { headers: bearer(ADMIN) }))).toBe(0);
    expect(await codeOf(admin.listCollections({}, { headers: bearer(WRITER) }))).toBe(
      Code.PermissionDenied,
    );
    expect(await codeOf(admin.listCollections({}, { headers: bearer(ADMIN) }))).toBe(0);
    // Health stays open.
    expect(await codeOf(createClient(Health, transport()).check({}))).toBe(0);
  });

  it("keeps a scoped token to its collections, streams included", async () => {
    const data = createClient(DataService, transport());
    expect(await codeOf(data.setValue(set("scoped"), { headers: bearer(SCOPED) }))).toBe(0);
    expect(await codeOf(data.setValue(set("default"), { headers: bearer(SCOPED) }))).toBe(
      Code.PermissionDenied,
    );
    expect(await codeOf(data.stats({}, { headers: bearer(SCOPED) }))).toBe(Code.PermissionDenied);
    expect(await codeOf(data.capabilities({}, { headers: bearer(SCOPED) }))).toBe(0);
    const list = async (cls: string, token: string | undefined) => {
      const keys: string[] = [];
      for await (const v of data.listValues(
        { clsId: cls, objectIdStr: "o" },
        { headers: bearer(token) },
      )) {
        keys.push(v.key);
      }
      return keys;
    };
    expect(await list("scoped", SCOPED)).toEqual(["k"]);
    expect(await codeOf(list("default", SCOPED))).toBe(Code.PermissionDenied);
    expect(await codeOf(list("scoped", undefined))).toBe(Code.Unauthenticated);
    // The change feed: a read right on the collection.
    const watch = createClient(WatchService, transport());
    const opened = async (cls: string, token: string | undefined) => {
      for await (const _ of watch.watch({ clsId: cls }, { headers: bearer(token) })) break;
    };
    expect(await codeOf(opened("scoped", SCOPED))).toBe(0);
    expect(await codeOf(opened("default", READER))).toBe(0);
    expect(await codeOf(opened("default", SCOPED))).toBe(Code.PermissionDenied);
    expect(await codeOf(opened("default", undefined))).toBe(Code.Unauthenticated);
  });
});

describe("REST", () => {
  const call = (path: string, init: RequestInit & { token?: string } = {}) =>
    fetch(`${n.node.url}${path}`, {
      ...init,
      headers: { "content-type": "application/json", ...bearer(init.token) },
    });
  const put = (cls: string, token?: string) =>
    call(`/api/class/${cls}/0/objects/r/values/k`, {
      method: "PUT",
      body: JSON.stringify({ value: 1 }),
      ...(token === undefined ? {} : { token }),
    });

  it("answers 401 with WWW-Authenticate to absent and unknown tokens", async () => {
    const absent = await put("default");
    expect(absent.status).toBe(401);
    expect(absent.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(((await absent.json()) as { error: { code: string } }).error.code).toBe(
      "unauthenticated",
    );
    expect((await put("default", "unknown-token-0123456789")).status).toBe(401);
    expect((await put("default", EXPIRED)).status).toBe(401);
    expect((await call("/api/collections")).status).toBe(401);
    // Routes the table does not know need a token too (no open door), and say so before 404.
    expect((await call("/no/such/route")).status).toBe(401);
    expect((await call("/no/such/route", { token: ADMIN })).status).toBe(404);
  });

  it("answers 403 to missing rights and to collections outside a token's scope", async () => {
    expect((await put("default", READER)).status).toBe(403);
    expect((await put("default", WRITER)).status).toBe(204);
    expect((await call("/api/class/default/0/objects/r/values/k", { token: READER })).status).toBe(
      200,
    );
    expect((await call("/api/collections", { token: WRITER })).status).toBe(403);
    expect((await call("/api/collections", { token: ADMIN })).status).toBe(200);
    expect((await call("/api/cluster", { token: READER })).status).toBe(403);
    expect((await call("/api/class/default/0/changes")).status).toBe(401);
    expect((await call("/api/class/default/0/changes", { token: SCOPED })).status).toBe(403);
    const feed = await call("/api/class/default/0/changes", { token: READER });
    expect(feed.status).toBe(200);
    expect(feed.headers.get("content-type")).toMatch(/^text\/event-stream/);
    await feed.body?.cancel();
    expect((await put("scoped", SCOPED)).status).toBe(204);
    const outside = await put("default", SCOPED);
    expect(outside.status).toBe(403);
    expect(((await outside.json()) as { error: { code: string } }).error.code).toBe(
      "permission_denied",
    );
  });

  it("keeps /healthz and /readyz open and /metrics behind a read token", async () => {
    expect((await call("/healthz")).status).toBe(200);
    expect((await call("/readyz")).status).toBe(200);
    expect((await call("/metrics")).status).toBe(401);
    const metrics = await call("/metrics", { token: READER });
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    for (const surface of ["rpc", "rest"]) {
      for (const reason of ["unauthenticated", "permission_denied"]) {
        const m = new RegExp(
          `odgm_auth_failures_total\\{surface="${surface}",reason="${reason}"\\} (\\d+)`,
        ).exec(text);
        expect(Number(m?.[1] ?? 0), `${surface} ${reason}`).toBeGreaterThan(0);
      }
    }
  });

  it("a client cannot pass itself off as the node with the trusted header", async () => {
    const forged = await fetch(`${n.node.url}/api/collections`, {
      headers: { "x-odgm-trusted": "0".repeat(64) },
    });
    expect(forged.status).toBe(401);
  });
});

describe.skipIf(skipPythonInterop)("grpcio (C-core)", () => {
  it("sends tokens as call metadata: absent, unknown, read-only and write tokens", async () => {
    const python = findPythonWithGrpc();
    if (python === undefined) throw new Error("python3 with grpcio is required");
    const body = Buffer.from(toBinary(SetKeyRequestSchema, set())).toString("hex");
    const script = `
import grpc, sys
with grpc.insecure_channel(sys.argv[1]) as ch:
    call = ch.unary_unary("/oprc.DataService/SetValue")
    for token in sys.argv[3:]:
        md = [] if token == "-" else [("authorization", "Bearer " + token)]
        try:
            call(bytes.fromhex(sys.argv[2]), metadata=md, timeout=10)
            print("OK")
        except grpc.RpcError as e:
            print(e.code().name)
`;
    for (const node of [n, slow]) {
      const { stdout } = await exec(python, [
        "-c",
        script,
        node.target,
        body,
        "-",
        "unknown-token-0123456789",
        READER,
        WRITER,
      ]);
      expect(stdout.trim().split("\n")).toEqual([
        "UNAUTHENTICATED",
        "UNAUTHENTICATED",
        "PERMISSION_DENIED",
        "OK",
      ]);
    }
  });
});

describe("the README's token file", () => {
  it("parses, and its digests belong to the tokens it names", async () => {
    const { readFileSync } = await import("node:fs");
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    const block = /```text\n(# role[\s\S]*?)```/.exec(readme)?.[1] ?? "";
    const tokens = createTokenSet(parseTokenEntries(block, "README"));
    expect(tokens.size).toBe(3);
    expect(tokens.authenticate("example-admin-token-0000")?.role).toBe("admin");
    expect(tokens.authenticate("example-writer-token-0000")?.role).toBe("write");
    const reader = tokens.authenticate("example-reader-token-0000");
    expect(reader?.role).toBe("read");
    expect([...(reader?.collections ?? [])]).toEqual(["orders", "carts"]);
    expect(reader?.expiresAt).toBe(Date.UTC(2099, 11, 31));
  });
});

describe("configuration", () => {
  it("ODGM_AUTH_METRICS=open serves /metrics without a token, and nothing else", async () => {
    const open = await startTempNode({
      ODGM_AUTH_TOKENS: `read ${READER}`,
      ODGM_AUTH_METRICS: "open",
    });
    try {
      expect((await fetch(`${open.node.url}/metrics`)).status).toBe(200);
      expect((await fetch(`${open.node.url}/api/capabilities`)).status).toBe(401);
    } finally {
      await open.close();
    }
  });

  it("a token file that cannot be read, or lists no token, stops the start clearly", async () => {
    const dir = await tempDir("odgm-auth-bad-");
    try {
      await expect(startTempNode({ ODGM_AUTH_TOKENS_FILE: `${dir}/missing` })).rejects.toThrow(
        /ODGM_AUTH_TOKENS_FILE: ENOENT/,
      );
      await writeFile(`${dir}/empty`, "# nobody yet\n");
      await expect(startTempNode({ ODGM_AUTH_TOKENS_FILE: `${dir}/empty` })).rejects.toThrow(
        /list no token/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("rotating tokens", () => {
  it("SIGHUP re-reads the token file of a running odgm process", async () => {
    const { startOdgmProcess } = await import("./fixtures/odgm-process.js");
    const dir = await tempDir("odgm-auth-hup-");
    try {
      const file = `${dir}/tokens`;
      await writeFile(file, `write ${WRITER}\n`);
      const proc = await startOdgmProcess({
        ODGM_DATA_DIR: `${dir}/data`,
        ODGM_AUTH_TOKENS_FILE: file,
      });
      try {
        const status = (token: string) =>
          fetch(`${proc.url}/api/capabilities`, { headers: bearer(token) }).then((r) => r.status);
        expect([await status(WRITER), await status(READER)]).toEqual([200, 401]);
        await writeFile(file, `read ${READER}\n`);
        proc.child.kill("SIGHUP");
        for (let i = 0; i < 100 && !proc.output().includes("reloaded the bearer tokens"); i++) {
          await new Promise((r) => setTimeout(r, 50));
        }
        expect([await status(WRITER), await status(READER)]).toEqual([401, 200]);
        // A file that no longer parses keeps the tokens in force.
        await writeFile(file, "owner nobody\n");
        proc.child.kill("SIGHUP");
        for (let i = 0; i < 100 && !proc.output().includes("could not reload the bearer"); i++) {
          await new Promise((r) => setTimeout(r, 50));
        }
        expect(proc.output()).toContain("could not reload the bearer tokens");
        expect(await status(READER)).toBe(200);
      } finally {
        proc.child.kill("SIGTERM");
        await proc.exited;
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("without tokens", () => {
  it("a node listening beyond loopback warns that authentication is off", async () => {
    const { startOdgmProcess } = await import("./fixtures/odgm-process.js");
    const dir = await tempDir("odgm-auth-off-");
    // The second node's data directory is a sibling the node itself creates.
    const dirs = [dir, `${dir}-2`];
    const procs: OdgmProcess[] = [];
    try {
      const open = await startOdgmProcess({ ODGM_DATA_DIR: dir, ODGM_HTTP_HOST: "0.0.0.0" });
      procs.push(open);
      const local = await startOdgmProcess({ ODGM_DATA_DIR: `${dir}-2` });
      procs.push(local);
      expect(open.output()).toContain("authentication is off");
      expect(local.output()).not.toContain("authentication is off");
    } finally {
      for (const p of procs) p.child.kill("SIGTERM");
      await Promise.all(procs.map((p) => p.exited));
      await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
    }
  });
});
