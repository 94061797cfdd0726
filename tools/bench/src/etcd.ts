// A one-member etcd (3.4) for the writes benchmark, and the etcdctl reads that verify it.
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { type Child, startChild } from "./processes.js";
import { freePort } from "./redis.js";

const run = promisify(execFile);

/** An etcd server the harness started. */
export interface EtcdInstance {
  readonly child: Child;
  /** Client port on 127.0.0.1 (gRPC over h2c; the path of Put is `/etcdserverpb.KV/Put`). */
  readonly port: number;
  /** The store revision now (each successful Put adds exactly one). */
  revision(): Promise<number>;
  /** Keys under `prefix`. */
  countPrefix(prefix: string): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Starts a one-member etcd with its data in `dir`, client and peer ports on 127.0.0.1
 * (random free ports). Defaults otherwise (WAL fsync per Raft batch, no auto-compaction).
 */
export async function startEtcd(name: string, dir: string): Promise<EtcdInstance> {
  const client = await freePort();
  const peer = await freePort();
  const clientUrl = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  const child = await startChild({
    name,
    command: "etcd",
    args: [
      "--name",
      "bench",
      "--data-dir",
      path.join(dir, "data"),
      "--listen-client-urls",
      clientUrl,
      "--advertise-client-urls",
      clientUrl,
      "--listen-peer-urls",
      peerUrl,
      "--initial-advertise-peer-urls",
      peerUrl,
      "--initial-cluster",
      `bench=${peerUrl}`,
      "--initial-cluster-state",
      "new",
      "--logger",
      "zap",
      "--log-outputs",
      "stderr",
    ],
    ready: /serving client traffic|ready to serve client requests/,
    timeoutMs: 30_000,
  });
  const ctl = async (
    args: string[],
  ): Promise<{ header?: { revision?: number }; count?: number }> => {
    const { stdout } = await run(
      "etcdctl",
      ["--endpoints", `127.0.0.1:${client}`, "--command-timeout=10s", ...args, "-w", "json"],
      { env: { ...process.env, ETCDCTL_API: "3" }, timeout: 20_000 },
    );
    return JSON.parse(stdout) as { header?: { revision?: number }; count?: number };
  };
  return {
    child,
    port: client,
    async revision() {
      const r = await ctl(["get", "revision-probe"]);
      const rev = r.header?.revision;
      if (typeof rev !== "number") throw new Error("etcdctl get printed no header.revision");
      return rev;
    },
    async countPrefix(prefix) {
      // RangeResponse.count is the number of keys in the range, whatever the limit.
      const r = await ctl(["get", "--prefix", "--keys-only", "--limit=1", prefix]);
      return r.count ?? 0;
    },
    async stop() {
      await child.stop(10_000);
    },
  };
}
