import { clone, create } from "@bufbuild/protobuf";
import {
  type CreateCollectionRequest,
  CreateCollectionRequestSchema,
  ShardAssignmentSchema,
} from "@oprc/grpc-api";
import { hashId } from "@oprc/oprc-id";
import { OdgmError } from "../odgm-error.js";

/** Raft group id of a collection partition. */
export function groupIdOf(collection: string, partition: number): string {
  return `${collection}/${partition}`;
}

/** The collection and partition of a group id ({@link groupIdOf}); `undefined` for others ("meta"). */
export function parseGroupId(id: string): { collection: string; partition: number } | undefined {
  const slash = id.lastIndexOf("/");
  const partition = Number(id.slice(slash + 1));
  if (slash <= 0 || id.length === slash + 1 || !Number.isSafeInteger(partition) || partition < 0) {
    return undefined;
  }
  return { collection: id.slice(0, slash), partition };
}

/**
 * The replicas (node ids, primary first) of partition `partition` of a placed raft
 * collection; `[]` past its last partition.
 */
export function replicasOf(spec: CreateCollectionRequest, partition: number): number[] {
  const a = spec.shardAssignments[partition];
  if (a === undefined) return [];
  const nodes = a.replica.map(Number);
  if (a.primary !== undefined) nodes.unshift(Number(a.primary));
  return nodes;
}

/**
 * Places a raft collection on `members`: every partition gets `replica_count` distinct
 * nodes. Given `shard_assignments` are kept (checked against the members); missing ones
 * are chosen deterministically — consecutive members, in id order, from a start that
 * hashes the partition's group id — so every node computes the same placement and
 * partitions spread over the cluster. Returns the spec with every assignment filled in.
 */
export function placeCollection(
  spec: CreateCollectionRequest,
  members: readonly number[],
): CreateCollectionRequest {
  const ids = [...new Set(members)].sort((a, b) => a - b);
  const n = spec.replicaCount;
  if (n > ids.length) {
    throw new OdgmError(
      "invalid_collection",
      `collection ${spec.name}: replica_count ${n} exceeds the ${ids.length} member(s) of the cluster`,
    );
  }
  // A copy: `create` would return `spec` itself, and clearing its assignments here would
  // lose the given ones read below.
  const out = clone(CreateCollectionRequestSchema, spec);
  out.shardAssignments = [];
  for (let p = 0; p < spec.partitionCount; p++) {
    const given = spec.shardAssignments[p];
    let replicas: number[];
    if (given !== undefined && (given.primary !== undefined || given.replica.length > 0)) {
      replicas = [
        ...(given.primary === undefined ? [] : [Number(given.primary)]),
        ...given.replica.map(Number),
      ];
      const unique = new Set(replicas);
      if (unique.size !== replicas.length || replicas.length !== n) {
        throw new OdgmError(
          "invalid_collection",
          `collection ${spec.name} partition ${p}: shard_assignments must name ${n} distinct nodes`,
        );
      }
      for (const r of replicas) {
        if (!ids.includes(r)) {
          throw new OdgmError(
            "invalid_collection",
            `collection ${spec.name} partition ${p}: node ${r} is not a member of the cluster`,
          );
        }
      }
    } else {
      const start = Number(hashId(groupIdOf(spec.name, p)) % BigInt(ids.length));
      replicas = Array.from({ length: n }, (_, i) => ids[(start + i) % ids.length] as number);
    }
    out.shardAssignments.push(
      create(ShardAssignmentSchema, {
        primary: BigInt(replicas[0] as number),
        replica: replicas.slice(1).map(BigInt),
        shardIds: given?.shardIds ?? [],
      }),
    );
  }
  return out;
}
