import { describe, expect, it } from "vitest";
import { loadConfig } from "./config.js";
import { isOdgmError, type OdgmError } from "./odgm-error.js";

function errorOf(env: Record<string, string>): OdgmError {
  try {
    loadConfig(env);
  } catch (err) {
    if (isOdgmError(err) && err.code === "invalid_config") return err;
    throw err;
  }
  throw new Error("expected an invalid_config OdgmError");
}

describe("loadConfig", () => {
  it("has the specification's defaults with no variables set", () => {
    const c = loadConfig({});
    expect(c.http).toEqual({ host: "0.0.0.0", port: 8080, h2cEngine: "lean" });
    expect(loadConfig({ ODGM_H2C_ENGINE: "Node" }).http.h2cEngine).toBe("node");
    expect(c.dataDir).toBe("./data");
    expect(c.storage).toBe("rocksdb");
    expect(c.syncWrites).toBe(true);
    expect(c.cluster).toMatchObject({
      nodeId: 1,
      members: new Map([[1, "http://127.0.0.1:8080"]]),
      state: "new",
      readConsistency: "linearizable",
      tickMs: 100,
      electionTicks: 10,
      compactEntries: 100_000,
      compactBytes: 64 * 1024 * 1024,
      catchUpEntries: 5_000,
      balanceLeaders: true,
      quiesce: true,
      logInlineMaxMs: 10,
    });
    expect(c.collections).toEqual([]);
    expect(c.features).toEqual({
      stringIds: true,
      stringKeys: true,
      stringIdsWriteOnly: false,
      stringIdWrites: true,
      numericIdCreates: "allow",
      granularStorage: true,
      blobFallback: true,
      allowRemainingBlobs: false,
      maxStringIdLen: 160,
      unicodeIds: false,
    });
    expect(c.limits.prefetchLimit).toBe(256);
  });

  it("reads flags, numbers and the string-keys alias", () => {
    const c = loadConfig({
      ODGM_ENABLE_STRING_IDS: "false",
      ODGM_ENABLE_STRING_ENTRY_KEYS: "0",
      ODGM_STRING_IDS_WRITE_ONLY: "TRUE",
      ODGM_MAX_STRING_ID_LEN: "64",
      ODGM_HTTP_PORT: "0",
      ODGM_MEMBERS: "1=http://127.0.0.1:7001, 2=http://127.0.0.1:7002,3=http://n3:80/",
    });
    expect(c.features.stringIds).toBe(false);
    expect(c.features.stringKeys).toBe(false);
    expect(c.features.stringIdsWriteOnly).toBe(true);
    expect(c.features.maxStringIdLen).toBe(64);
    expect(c.http.port).toBe(0);
    expect(c.cluster.members).toEqual(
      new Map([
        [1, "http://127.0.0.1:7001"],
        [2, "http://127.0.0.1:7002"],
        [3, "http://n3"],
      ]),
    );
  });

  it("blob phases: dual-write and no blob fallback exclude each other", () => {
    const f = loadConfig({ ODGM_BLOB_FALLBACK: "false", ODGM_ALLOW_REMAINING_BLOBS: "true" });
    expect(f.features).toMatchObject({ blobFallback: false, allowRemainingBlobs: true });
    expect(() =>
      loadConfig({ ODGM_ENABLE_GRANULAR_STORAGE: "false", ODGM_BLOB_FALLBACK: "false" }),
    ).toThrow(/ODGM_BLOB_FALLBACK.*set one or the other/);
  });

  it("the primary name wins over the alias", () => {
    const c = loadConfig({
      ODGM_ENABLE_STRING_KEYS: "true",
      ODGM_ENABLE_STRING_ENTRY_KEYS: "false",
    });
    expect(c.features.stringKeys).toBe(true);
  });

  it.each([
    ["ODGM_HTTP_PORT", "80a"],
    ["ODGM_HTTP_PORT", "70000"],
    ["ODGM_ENABLE_STRING_IDS", "maybe"],
    ["ODGM_ENABLE_STRING_ENTRY_KEYS", "2"],
    ["ODGM_MAX_STRING_ID_LEN", "0"],
    ["ODGM_NODE_ID", "-1"],
    ["ODGM_MEMBERS", "1,,2"],
    ["ODGM_MEMBERS", "1,2,3"],
    ["ODGM_MEMBERS", "2=http://a:1"],
    ["ODGM_MEMBERS", "1=ftp://a:1"],
    ["ODGM_MEMBERS", "1=http://a:1,1=http://b:1"],
    ["ODGM_CLUSTER_STATE", "joining"],
    ["ODGM_READ_CONSISTENCY", "eventual"],
    ["ODGM_NUMERIC_ID_CREATES", "deny"],
    ["ODGM_STRING_ID_WRITES", "sometimes"],
    ["ODGM_RAFT_TICK_MS", "0"],
    ["ODGM_RAFT_CATCHUP_ENTRIES", "-1"],
    ["ODGM_RAFT_BALANCE_LEADERS", "sometimes"],
    ["ODGM_RAFT_QUIESCE", "maybe"],
    ["ODGM_RAFT_LOG_INLINE_MAX_MS", "-1"],
    ["ODGM_STORAGE", "leveldb"],
    ["ODGM_H2C_ENGINE", "nghttp2"],
    ["ODGM_LOG_LEVEL", "loud"],
    ["ODGM_COLLECTION", "{not json"],
    ["ODGM_COLLECTION", '{"name":"a"}'],
    ["ODGM_COLLECTION", '[{"name":"a","bogus":1}]'],
    ["ODGM_COLLECTION", '[{"name":"a"},{"name":"a"}]'],
    ["ODGM_EVENT_QUEUE_BOUND", "lots"],
    ["ODGM_EVENT_PAYLOAD_FORMAT", "xml"],
  ])("rejects %s=%s naming the variable", (name, value) => {
    const err = errorOf({ [name]: value });
    expect(err.variable).toBe(name);
    expect(err.message).toContain(name);
  });

  it("TLS: both files or neither; a cluster needs a CA and https:// members", () => {
    expect(loadConfig({}).tls).toBeUndefined();
    expect(loadConfig({ ODGM_TLS_CERT: "c.pem", ODGM_TLS_KEY: "k.pem" }).tls).toEqual({
      certFile: "c.pem",
      keyFile: "k.pem",
    });
    expect(errorOf({ ODGM_TLS_CERT: "c.pem" }).variable).toBe("ODGM_TLS_KEY");
    expect(errorOf({ ODGM_TLS_KEY: "k.pem" }).variable).toBe("ODGM_TLS_CERT");
    expect(errorOf({ ODGM_TLS_CA: "ca.pem" }).variable).toBe("ODGM_TLS_CA");
    const tls = { ODGM_TLS_CERT: "c.pem", ODGM_TLS_KEY: "k.pem", ODGM_NODE_ID: "1" };
    const noCa = errorOf({ ...tls, ODGM_MEMBERS: "1=https://a:1,2=https://b:1" });
    expect(noCa.variable).toBe("ODGM_TLS_CA");
    expect(noCa.message).toMatch(/needs ODGM_TLS_CA/);
    const c = loadConfig({
      ...tls,
      ODGM_TLS_CA: "ca.pem",
      ODGM_MEMBERS: "1=https://a:1,2=https://b:1",
    });
    expect(c.tls).toEqual({ certFile: "c.pem", keyFile: "k.pem", caFile: "ca.pem" });
    expect(c.cluster.members.get(2)).toBe("https://b:1");
    // One scheme for the whole cluster: TLS nodes talk https, cleartext nodes http.
    expect(
      errorOf({ ...tls, ODGM_TLS_CA: "ca.pem", ODGM_MEMBERS: "1=https://a:1,2=http://b:1" })
        .message,
    ).toMatch(/member 2: expected an https:\/\/ URL/);
    expect(errorOf({ ODGM_MEMBERS: "1=http://a:1,2=https://b:1" }).message).toMatch(
      /member 2: expected an http:\/\/ URL/,
    );
    expect(loadConfig({ ODGM_TLS_CERT: "c.pem", ODGM_TLS_KEY: "k.pem" }).cluster.members).toEqual(
      new Map([[1, "https://127.0.0.1:8080"]]),
    );
  });

  it("authentication: off by default; tokens turn it on; a cluster needs mutual TLS", () => {
    expect(loadConfig({}).auth).toBeUndefined();
    // ODGM_AUTH_METRICS alone does not turn authentication on.
    expect(loadConfig({ ODGM_AUTH_METRICS: "open" }).auth).toBeUndefined();
    expect(loadConfig({ ODGM_AUTH_TOKENS_FILE: "/etc/odgm/tokens" }).auth).toEqual({
      tokensFile: "/etc/odgm/tokens",
      metrics: "read",
    });
    expect(loadConfig({ ODGM_AUTH_TOKENS: "read x", ODGM_AUTH_METRICS: "OPEN" }).auth).toEqual({
      tokens: "read x",
      metrics: "open",
    });
    expect(errorOf({ ODGM_AUTH_METRICS: "public" }).variable).toBe("ODGM_AUTH_METRICS");
    const cluster = errorOf({
      ODGM_AUTH_TOKENS: "read x",
      ODGM_MEMBERS: "1=http://a:1,2=http://b:1",
    });
    expect(cluster.variable).toBe("ODGM_AUTH_TOKENS");
    expect(cluster.message).toMatch(/needs mutual TLS/);
    const tls = { ODGM_TLS_CERT: "c.pem", ODGM_TLS_KEY: "k.pem", ODGM_TLS_CA: "ca.pem" };
    expect(
      loadConfig({
        ...tls,
        ODGM_AUTH_TOKENS: "read x",
        ODGM_MEMBERS: "1=https://a:1,2=https://b:1",
      }).auth?.tokens,
    ).toBe("read x");
  });

  it("parses ODGM_COLLECTION in the seed-era JSON format", () => {
    const c = loadConfig({
      ODGM_COLLECTION: JSON.stringify([
        {
          name: "order",
          partition_count: 2,
          replica_count: 1,
          shard_type: "basic",
          invocations: { fn_routes: { echo: { url: "http://127.0.0.1:9000", stateless: true } } },
        },
      ]),
    });
    expect(c.collections).toHaveLength(1);
    expect(c.collections[0]?.name).toBe("order");
    expect(c.collections[0]?.partitionCount).toBe(2);
    expect(c.collections[0]?.invocations?.fnRoutes.echo?.url).toBe("http://127.0.0.1:9000");
  });
});
