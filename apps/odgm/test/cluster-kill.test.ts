// kill -9 of the leader under load, 20 times: a new leader within a few election timeouts,
// no acknowledged write lost (acks are fsynced to a file by the client before they count),
// and the killed node catches up after its restart — from the log, or from a snapshot once
// the log was compacted past it.
import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CollectionService, DataService } from "@oprc/grpc-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./fixtures/cluster.js";
import { clusterView, leaderOf, waitFor } from "./fixtures/cluster-probe.js";
import { tempDir } from "./fixtures/temp-node.js";

const TRIALS = 20;
const TICK_MS = 50;
const ELECTION_MS = TICK_MS * 10;
const enc = new TextEncoder();

let cluster: TestCluster;
let ackDir: string;

beforeAll(async () => {
  // A small compaction threshold: restarted nodes often find the log compacted past them.
  cluster = await startCluster({ env: { ODGM_RAFT_COMPACT_ENTRIES: "100" } });
  await cluster.waitReady();
  ackDir = await tempDir("odgm-acks-");
  const admin = createClient(CollectionService, createGrpcTransport({ baseUrl: cluster.url(1) }));
  for (let i = 0; ; i++) {
    try {
      await admin.createCollection({
        name: "kv",
        partitionCount: 1,
        shardType: "raft",
        replicaCount: 3,
      });
      break;
    } catch (err) {
      if (i > 100) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await cluster.waitReady();
}, 180_000);
afterAll(async () => {
  await cluster?.close();
  if (ackDir !== undefined) await rm(ackDir, { recursive: true, force: true });
});

describe("kill -9 of the leader under load", () => {
  it(`elects a new leader, loses no acknowledged write and catches up, ${TRIALS} times`, {
    timeout: 600_000,
  }, async () => {
    const ackFile = join(ackDir, "acks.log");
    const ackFd = openSync(ackFile, "a");
    let stop = false;
    let acked = 0;
    let failures = 0;
    // Writers: unique keys, to random live nodes; an ack is fsynced before it counts.
    const writer = async (w: number): Promise<void> => {
      let n = 0;
      while (!stop) {
        const live = cluster.ids.filter((id) => cluster.proc(id) !== undefined);
        const id = live[(w + n) % live.length] as number;
        const key = `w${w}-${n}`;
        try {
          await createClient(
            DataService,
            createGrpcTransport({ baseUrl: cluster.url(id) }),
          ).setValue(
            { clsId: "kv", objectIdStr: `obj-${w}`, keyStr: key, value: { data: enc.encode(key) } },
            { timeoutMs: 5000 },
          );
          writeSync(ackFd, `${w} ${key}\n`);
          fsyncSync(ackFd);
          acked++;
          n++;
        } catch {
          failures++;
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    };
    const writers = Array.from({ length: 8 }, (_, w) => writer(w));
    const electionMs: number[] = [];
    let snapshotCatchUps = 0;
    try {
      for (let trial = 0; trial < TRIALS; trial++) {
        // Let some writes commit under the current leader first.
        const before = acked;
        await waitFor(async () => acked >= before + 30, 20_000);
        const leader = await leaderOf(cluster, "kv/0");
        expect(leader, `trial ${trial}: a leader before the kill`).toBeGreaterThan(0);
        await cluster.stop(leader, "SIGKILL");
        const took = await waitFor(
          async () => (await leaderOf(cluster, "kv/0", leader)) !== 0,
          20 * ELECTION_MS,
        );
        expect(
          took,
          `trial ${trial}: no new leader after killing node ${leader}`,
        ).toBeGreaterThanOrEqual(0);
        electionMs.push(took);
        const afterKill = acked;
        await waitFor(async () => acked >= afterKill + 30, 20_000);
        await cluster.start(leader);
        // The restarted node catches up with the group: it applies everything the others had
        // committed when it came back. (A moving target — "within 5 of the newest commit" —
        // is never reached by a healthy follower that stays a few writes behind under load.)
        const others = await Promise.all(
          cluster.ids.filter((id) => id !== leader).map((id) => clusterView(cluster.url(id))),
        );
        const target = Math.max(
          ...others.map((v) => v?.groups.find((g) => g.group === "kv/0")?.commitIndex ?? 0),
        );
        expect(target, `trial ${trial}: the others' commit index`).toBeGreaterThan(0);
        const caught = await waitFor(async () => {
          const mine = (await clusterView(cluster.url(leader)))?.groups.find(
            (g) => g.group === "kv/0",
          );
          if (mine !== undefined && mine.snapshotsInstalled > 0) snapshotCatchUps++;
          return mine !== undefined && mine.appliedIndex >= target && mine.leader !== 0;
        }, 60_000);
        expect(
          caught,
          `trial ${trial}: node ${leader} did not reach index ${target}:\n${cluster.output(leader).slice(-3000)}`,
        ).toBeGreaterThanOrEqual(0);
      }
    } finally {
      stop = true;
      await Promise.all(writers);
      closeSync(ackFd);
    }
    // Every acknowledged write, from the fsynced log, is on every node.
    const acks = readFileSync(ackFile, "utf8").trim().split("\n");
    expect(acks.length).toBe(acked);
    await cluster.waitReady();
    for (const id of cluster.ids) {
      const data = createClient(DataService, createGrpcTransport({ baseUrl: cluster.url(id) }));
      const byWriter = new Map<string, Set<string>>();
      for (const line of acks) {
        const [w, key] = line.split(" ") as [string, string];
        const s = byWriter.get(w) ?? new Set<string>();
        byWriter.set(w, s);
        s.add(key);
      }
      for (const [w, keys] of byWriter) {
        const found = new Set<string>();
        let cursor: Uint8Array | undefined;
        do {
          const page: { key: string; next?: Uint8Array }[] = [];
          for await (const e of data.listValues({
            clsId: "kv",
            objectIdStr: `obj-${w}`,
            limit: 1000,
            ...(cursor === undefined ? {} : { cursor }),
          })) {
            page.push({
              key: e.key,
              ...(e.nextCursor === undefined ? {} : { next: e.nextCursor }),
            });
          }
          for (const e of page) found.add(e.key);
          cursor = page.at(-1)?.next;
        } while (cursor !== undefined);
        const missing = [...keys].filter((k) => !found.has(k));
        expect(missing, `node ${id}, writer ${w}: acknowledged writes missing`).toEqual([]);
      }
    }
    // Reported in the closing note; bounded here generously (the machine is shared).
    console.log(
      `kill -9 leader: ${TRIALS} trials, ${acked} acknowledged writes, ${failures} failed attempts, ` +
        `new leader after ${Math.min(...electionMs)}–${Math.max(...electionMs)} ms (median ${
          [...electionMs].sort((a, b) => a - b)[Math.floor(electionMs.length / 2)]
        }), ${snapshotCatchUps} catch-up polls saw a snapshot install`,
    );
    expect(Math.max(...electionMs)).toBeLessThan(20 * ELECTION_MS);
    expect(snapshotCatchUps).toBeGreaterThan(0);
  });
});
