import { existsSync } from "node:fs";
import { freePorts } from "@oprc/test-config/ports";
import { Redis } from "ioredis";
import { CALL_TIMEOUT_MS } from "./clients.js";
import { type Child, startChild } from "./processes.js";

/** Where Debian installs it (`apt-get install redis-server`). */
export const REDIS_SERVER: string = process.env.BENCH_REDIS_SERVER ?? "/usr/bin/redis-server";

/** Whether the redis-server binary is present. */
export function redisAvailable(): boolean {
  return existsSync(REDIS_SERVER);
}

/** A free TCP port on 127.0.0.1 for a server started later (see `@oprc/test-config/ports`). */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0] as number;
}

/** A redis-server the harness started, and a client of it. */
export interface RedisInstance {
  readonly child: Child;
  /** TCP port on 127.0.0.1. */
  readonly port: number;
  readonly client: Redis;
  /** `used_memory` from `INFO memory` (bytes). */
  usedMemory(): Promise<number>;
  stop(): Promise<void>;
}

/** Options of {@link startRedis}. */
export interface StartRedisOptions {
  /**
   * Turn the append-only file on with `appendfsync always` (every write fsynced before it is
   * acknowledged, group-committed per event-loop turn) and keep it in this directory.
   * Default: no persistence at all (no RDB snapshots, no AOF).
   */
  readonly aofDir?: string;
}

/**
 * Starts redis-server on 127.0.0.1 with a random port and, by default, no persistence (no
 * RDB snapshots, no AOF), and connects one ioredis client (commands from concurrent callers
 * are pipelined on its one connection, as gRPC calls share one HTTP/2 session).
 */
export async function startRedis(
  name: string,
  options: StartRedisOptions = {},
): Promise<RedisInstance> {
  const port = await freePort();
  const persistence =
    options.aofDir === undefined
      ? ["--appendonly", "no", "--dir", "/tmp", "--dbfilename", `bench-never-written-${port}.rdb`]
      : ["--appendonly", "yes", "--appendfsync", "always", "--dir", options.aofDir];
  const child = await startChild({
    name,
    command: REDIS_SERVER,
    args: [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--protected-mode",
      "yes",
      "--daemonize",
      "no",
      ...persistence,
    ],
    ready: /Ready to accept connections/,
    timeoutMs: 20_000,
  });
  const client = new Redis({
    host: "127.0.0.1",
    port,
    lazyConnect: false,
    enableAutoPipelining: false,
    commandTimeout: CALL_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
  });
  await client.ping();
  return {
    child,
    port,
    client,
    async usedMemory() {
      const info = await client.info("memory");
      const m = /used_memory:(\d+)/.exec(info);
      return m?.[1] === undefined ? Number.NaN : Number(m[1]);
    },
    async stop() {
      client.disconnect();
      await child.stop(5_000);
    },
  };
}

/**
 * Loads the same shape of data as the odgm data set: hashes `h:1..h:<objects>` with
 * fields `f0..f<n-1>` (16-byte values), `big` with 256 fields and `list100` with 100,
 * through pipelines of 1000 commands.
 */
export async function preloadRedis(
  client: Redis,
  objects: number,
  entriesPerObject: number,
  value: (seed: number) => Buffer,
): Promise<void> {
  const hash = (n: number, seed: number): (string | Buffer)[] => {
    const args: (string | Buffer)[] = [];
    for (let k = 0; k < n; k++) args.push(`f${k}`, value(seed * 1024 + k));
    return args;
  };
  await client.hset("big", ...hash(256, 0));
  await client.hset("list100", ...hash(100, 0));
  for (let base = 1; base <= objects; base += 1000) {
    const p = client.pipeline();
    for (let i = base; i < base + 1000 && i <= objects; i++)
      p.hset(`h:${i}`, ...hash(entriesPerObject, i));
    await p.exec();
  }
}
