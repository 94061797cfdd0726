// The state machine of the metadata group: the collection registry, the cluster's address
// book, the current replica set of every raft partition whose membership changed since
// its collection was placed, and each node's incarnation, replicated on every node.
// Commands are JSON (the same bytes reach every replica, so JSON's freedom of form does not
// matter); applying one is idempotent, so a replay after a restart (the applied index is
// written after the command) changes nothing.
import { create, fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import type { KvShard } from "@oprc/entry-store";
import {
  type CreateCollectionRequest,
  CreateCollectionRequestSchema,
  DataPlaneError,
} from "@oprc/grpc-api";
import {
  type ConfState,
  type Entry,
  jsonConfChangeCodec,
  type SnapshotBytes,
  snapshotBytes,
} from "@oprc/raft-log";
import type { CollectionRegistry } from "../collections/collection-registry.js";
import { isOdgmError, OdgmError } from "../odgm-error.js";
import { membersOf, type StateMachine } from "./raft-group.js";

/**
 * The members of a raft partition's group as of one of its configurations, as its leader
 * published it to the metadata group: where to route the partition's calls.
 */
export interface ReplicaSet {
  /** Voters (of both halves of a joint configuration). */
  readonly voters: readonly number[];
  readonly learners: readonly number[];
  /** The log index of the group's configuration this describes: a newer one replaces it. */
  readonly confIndex: number;
}

/** A command of the metadata group. */
export type MetaCommand =
  | { readonly createCollection: CreateCollectionRequest }
  | { readonly setMember: { readonly id: number; readonly url: string } }
  | { readonly setReplicas: { readonly group: string; readonly replicas: ReplicaSet } }
  /**
   * Node `id`'s data directory is incarnation `incarnation`. Kept only when none is recorded:
   * a node whose directory was replaced cannot overwrite the record of the old one (refused
   * with the recorded incarnation). The record is dropped when the node, not a member of
   * the metadata group, is added to it as a learner (again).
   */
  | { readonly setIncarnation: { readonly id: number; readonly incarnation: number } };

/** The result of one applied command: `undefined` on success, else the refusal. */
export type MetaResult = OdgmError | undefined;

/** The refusal of a `setIncarnation` whose node is recorded under another incarnation. */
function incarnationRefusal(id: number, recorded: number): OdgmError {
  return new OdgmError("invalid_config", `node ${id} is recorded as incarnation ${recorded}`);
}

/**
 * The incarnation a `setIncarnation` refusal names, from the refusal itself (an OdgmError
 * where it was applied) or its JSON (`{code, message}`, from another node); `undefined` for
 * any other result.
 */
export function refusedForIncarnation(result: unknown): number | undefined {
  const message = (result as { message?: unknown } | null | undefined)?.message;
  const m = typeof message === "string" ? /is recorded as incarnation (\d+)$/.exec(message) : null;
  return m === null ? undefined : Number(m[1]);
}

const APPLIED_KEY = new TextEncoder().encode("meta/applied");
const MEMBER_PREFIX = "member/";
const REPLICAS_PREFIX = "replicas/";
const INCARNATION_PREFIX = "incarnation/";
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Encodes a command for the log. */
export function encodeMetaCommand(cmd: MetaCommand): Uint8Array {
  if ("createCollection" in cmd) {
    return enc.encode(
      JSON.stringify({
        createCollection: toJson(CreateCollectionRequestSchema, cmd.createCollection),
      }),
    );
  }
  return enc.encode(JSON.stringify(cmd));
}

function decodeMetaCommand(data: Uint8Array): MetaCommand {
  const raw = JSON.parse(dec.decode(data)) as Record<string, unknown>;
  if (raw.createCollection !== undefined) {
    return {
      createCollection: fromJson(CreateCollectionRequestSchema, raw.createCollection as JsonValue),
    };
  }
  const m = raw.setMember as { id?: unknown; url?: unknown } | undefined;
  if (m !== undefined && typeof m.id === "number" && typeof m.url === "string") {
    return { setMember: { id: m.id, url: m.url } };
  }
  const r = raw.setReplicas as { group?: unknown; replicas?: unknown } | undefined;
  if (r !== undefined && typeof r.group === "string") {
    return { setReplicas: { group: r.group, replicas: replicaSetOf(r.replicas) } };
  }
  const i = raw.setIncarnation as { id?: unknown; incarnation?: unknown } | undefined;
  if (i !== undefined && isNodeId(i.id) && isNodeId(i.incarnation)) {
    return { setIncarnation: { id: i.id, incarnation: i.incarnation } };
  }
  throw new Error("unknown metadata command");
}

const isNodeId = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) > 0;
const nodeIds = (v: unknown): v is number[] => Array.isArray(v) && v.every(isNodeId);

/** A replica set read back from JSON (the log, a snapshot, the node's shard). */
function replicaSetOf(v: unknown): ReplicaSet {
  const r = v as Partial<Record<keyof ReplicaSet, unknown>> | undefined;
  if (
    r === undefined ||
    !nodeIds(r.voters) ||
    !nodeIds(r.learners) ||
    !Number.isSafeInteger(r.confIndex) ||
    (r.confIndex as number) < 1
  ) {
    throw new Error("malformed replica set");
  }
  return { voters: r.voters, learners: r.learners, confIndex: r.confIndex as number };
}

/** Options of {@link openMetaStateMachine}. */
export interface MetaStateMachineOptions {
  /** The node's own shard (it holds the registry records). */
  readonly shard: KvShard;
  readonly registry: CollectionRegistry;
  /** Cluster addresses learnt from the log (`setMember`), merged over `ODGM_MEMBERS`. */
  readonly addresses: Map<number, string>;
  /** Replica sets learnt from the log (`setReplicas`), by group id. */
  readonly replicaSets: Map<string, ReplicaSet>;
  /** Node incarnations learnt from the log (`setIncarnation`), by node id. */
  readonly incarnations: Map<number, number>;
  /** Told of every incarnation recorded or (`undefined`) dropped, after it is stored. */
  readonly onIncarnation?: (id: number, incarnation: number | undefined) => void;
  /** Told of every replica set that replaced an older one (after it is stored). */
  readonly onReplicaSet?: (group: string, replicas: ReplicaSet) => void;
  /** Opens what a newly applied collection needs on this node. */
  readonly onCollection: (spec: CreateCollectionRequest) => Promise<void>;
  /** Told of an entry that does not decode (applied as a no-op on every replica). */
  readonly onBadEntry: (err: unknown, index: number) => void;
}

/** Opens the metadata state machine, loading its applied index and address book. */
export async function openMetaStateMachine(
  o: MetaStateMachineOptions,
): Promise<StateMachine<MetaResult>> {
  const { shard } = o;
  const raw = await shard.get("system", APPLIED_KEY);
  let applied = raw === undefined ? 0 : Number(dec.decode(raw));
  const memberKey = (id: number) => enc.encode(`${MEMBER_PREFIX}${id}`);
  const replicasKey = (group: string) => enc.encode(`${REPLICAS_PREFIX}${group}`);
  const incarnationKey = (id: number) => enc.encode(`${INCARNATION_PREFIX}${id}`);
  const load = async (prefix: string, each: (name: string, value: string) => void) => {
    const lo = enc.encode(prefix);
    const hi = lo.slice();
    hi[hi.length - 1] = (hi[hi.length - 1] ?? 0) + 1;
    const it = shard.iterator("system", { gte: lo, lt: hi });
    try {
      for (let rows = await it.next(256); rows.length > 0; rows = await it.next(256)) {
        for (const [k, v] of rows) each(dec.decode(k).slice(prefix.length), dec.decode(v));
      }
    } finally {
      await it.close();
    }
  };
  await load(MEMBER_PREFIX, (id, url) => o.addresses.set(Number(id), url));
  await load(REPLICAS_PREFIX, (group, json) =>
    o.replicaSets.set(group, replicaSetOf(JSON.parse(json))),
  );
  await load(INCARNATION_PREFIX, (id, incarnation) =>
    o.incarnations.set(Number(id), Number(incarnation)),
  );
  /** Records (or, with `undefined`, drops) node `id`'s incarnation. */
  const recordIncarnation = async (id: number, incarnation: number | undefined) => {
    if (o.incarnations.get(id) === incarnation) return;
    await shard.write(
      [
        incarnation === undefined
          ? { type: "del", keyspace: "system", key: incarnationKey(id) }
          : {
              type: "put",
              keyspace: "system",
              key: incarnationKey(id),
              value: enc.encode(String(incarnation)),
            },
      ],
      { sync: true },
    );
    if (incarnation === undefined) o.incarnations.delete(id);
    else o.incarnations.set(id, incarnation);
    o.onIncarnation?.(id, incarnation);
  };
  /**
   * A node added as a learner that was not in the metadata group joins (again) with whatever
   * data directory it has now, which records its incarnation anew. A node that was (an add
   * asked twice at once, a voter made a learner) keeps its directory, and its record.
   */
  const forgetAddedLearners = async (e: Entry, confAt: (index: number) => ConfState) => {
    let added: number[];
    try {
      added = jsonConfChangeCodec
        .decode(e.data)
        .changes.filter((c) => c.type === "add_learner")
        .map((c) => c.nodeId);
    } catch {
      return; // refused by the core as well: a no-op
    }
    if (added.length === 0) return;
    const members = membersOf(confAt(e.index - 1));
    for (const id of added) if (!members.has(id)) await recordIncarnation(id, undefined);
  };
  const saveApplied = (index: number) =>
    shard.write(
      [{ type: "put", keyspace: "system", key: APPLIED_KEY, value: enc.encode(String(index)) }],
      {
        sync: true,
      },
    );
  const applyOne = async (cmd: MetaCommand): Promise<MetaResult> => {
    if ("setIncarnation" in cmd) {
      const { id, incarnation } = cmd.setIncarnation;
      const recorded = o.incarnations.get(id);
      if (recorded === undefined) await recordIncarnation(id, incarnation);
      else if (recorded !== incarnation) return incarnationRefusal(id, recorded);
      return undefined;
    }
    if ("setReplicas" in cmd) {
      const { group, replicas } = cmd.setReplicas;
      // Published by whichever node led the group at the time: an older configuration
      // arriving late changes nothing.
      if ((o.replicaSets.get(group)?.confIndex ?? 0) >= replicas.confIndex) return undefined;
      await shard.write(
        [
          {
            type: "put",
            keyspace: "system",
            key: replicasKey(group),
            value: enc.encode(JSON.stringify(replicas)),
          },
        ],
        { sync: true },
      );
      o.replicaSets.set(group, replicas);
      o.onReplicaSet?.(group, replicas);
      return undefined;
    }
    if ("setMember" in cmd) {
      o.addresses.set(cmd.setMember.id, cmd.setMember.url);
      await shard.write(
        [
          {
            type: "put",
            keyspace: "system",
            key: memberKey(cmd.setMember.id),
            value: enc.encode(cmd.setMember.url),
          },
        ],
        { sync: true },
      );
      return undefined;
    }
    try {
      const { spec } = await o.registry.create(cmd.createCollection);
      await o.onCollection(spec);
      return undefined;
    } catch (err) {
      if (isOdgmError(err)) return err;
      throw err;
    }
  };
  return {
    appliedIndex: () => applied,
    async apply(entries: readonly Entry[], confAt: (index: number) => ConfState) {
      const out: MetaResult[] = [];
      for (const e of entries) {
        let result: MetaResult;
        if (e.type === "normal" && e.data.byteLength > 0) {
          let cmd: MetaCommand | undefined;
          try {
            cmd = decodeMetaCommand(e.data);
          } catch (err) {
            o.onBadEntry(err, e.index);
          }
          if (cmd !== undefined) result = await applyOne(cmd);
        } else if (e.type === "conf_change") {
          await forgetAddedLearners(e, confAt);
        }
        out.push(result);
        applied = e.index;
      }
      await saveApplied(applied);
      return out;
    },
    // Every apply is synced already.
    persist: () => saveApplied(applied),
    async snapshot() {
      const bytes = enc.encode(
        JSON.stringify({
          applied,
          collections: o.registry.list().map((c) => toJson(CreateCollectionRequestSchema, c)),
          members: [...o.addresses],
          replicas: [...o.replicaSets],
          incarnations: [...o.incarnations],
        }),
      );
      return async function* () {
        yield bytes;
      };
    },
    async restore(data: SnapshotBytes, index: number) {
      if (data.byteLength > 0) {
        // The registry is small: read whole.
        let snap: {
          collections: JsonValue[];
          members: [number, string][];
          replicas?: [string, unknown][];
          incarnations?: [unknown, unknown][];
        };
        let replicas: [string, ReplicaSet][];
        let incarnations: Map<number, number>;
        try {
          snap = JSON.parse(dec.decode(snapshotBytes(data)));
          // Snapshots of versions before replica sets (incarnations) were recorded have none.
          replicas = (snap.replicas ?? []).map(([g, r]) => [g, replicaSetOf(r)]);
          incarnations = new Map(
            (snap.incarnations ?? []).map(([id, n]) => {
              if (!isNodeId(id) || !isNodeId(n)) throw new Error("malformed incarnation");
              return [id, n];
            }),
          );
        } catch (err) {
          throw new DataPlaneError("invalid_argument", `metadata snapshot is malformed: ${err}`);
        }
        for (const [id, url] of snap.members) await applyOne({ setMember: { id, url } });
        for (const [group, r] of replicas) await applyOne({ setReplicas: { group, replicas: r } });
        // The snapshot's records replace this node's, which may be older or newer.
        for (const id of [...o.incarnations.keys()]) {
          if (!incarnations.has(id)) await recordIncarnation(id, undefined);
        }
        for (const [id, n] of incarnations) await recordIncarnation(id, n);
        for (const c of snap.collections) {
          const result = await applyOne({
            createCollection: fromJson(CreateCollectionRequestSchema, c),
          });
          if (result !== undefined) {
            throw new OdgmError(
              "invalid_config",
              `metadata snapshot conflicts with this node's registry: ${result.message}`,
            );
          }
        }
      }
      applied = index;
      await saveApplied(index);
    },
  };
}

/** A create-collection command as the log carries it. */
export function createCollectionCommand(spec: CreateCollectionRequest): MetaCommand {
  return { createCollection: create(CreateCollectionRequestSchema, spec) };
}
