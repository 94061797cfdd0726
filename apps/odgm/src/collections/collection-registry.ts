import { clone, create, equals, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { KvShard } from "@oprc/entry-store";
import {
  COLLECTION_NAME_RULE,
  CollectionRecordSchema,
  type CreateCollectionRequest,
  CreateCollectionRequestSchema,
  isCollectionName,
  quoteInput,
} from "@oprc/grpc-api";
import { OdgmError } from "../odgm-error.js";

/** Basic shard types; `none` and `single` are aliases of `basic`. The other type is `raft`. */
const BASIC_SHARD_TYPES = new Set(["", "basic", "none", "single"]);
const PREFIX = new TextEncoder().encode("collection/");

/** The collections a node serves, persisted in the node's system keyspace. */
export interface CollectionRegistry {
  /** Every collection, sorted by name. */
  list(): CreateCollectionRequest[];
  /** One collection by name. */
  get(name: string): CreateCollectionRequest | undefined;
  /**
   * Validates, normalizes (partition_count ≥ 1, shard type `basic`) and persists a
   * collection. Creating an existing collection with an equal spec is a no-op
   * (`created: false`); a different spec is refused.
   */
  create(
    spec: CreateCollectionRequest,
  ): Promise<{ created: boolean; spec: CreateCollectionRequest }>;
}

/** Checks and normalizes a spec without storing it. */
export function normalizeCollectionSpec(spec: CreateCollectionRequest): CreateCollectionRequest {
  if (!isCollectionName(spec.name)) {
    throw new OdgmError(
      "invalid_collection",
      `collection name ${quoteInput(spec.name)} must be ${COLLECTION_NAME_RULE}`,
    );
  }
  const partitions = spec.partitionCount === 0 ? 1 : spec.partitionCount;
  if (!Number.isInteger(partitions) || partitions < 1 || partitions > 65_536) {
    throw new OdgmError(
      "invalid_collection",
      `partition_count of ${spec.name} must be 1..65536, got ${spec.partitionCount}`,
    );
  }
  const shardType = spec.shardType.toLowerCase();
  const raft = shardType === "raft";
  if (!raft && !BASIC_SHARD_TYPES.has(shardType)) {
    throw new OdgmError(
      "invalid_collection",
      `collection ${spec.name}: unknown shard_type ${JSON.stringify(spec.shardType)} (basic, none, single or raft)`,
    );
  }
  for (const [fn, route] of Object.entries(spec.invocations?.fnRoutes ?? {})) {
    let url: URL | undefined;
    try {
      url = new URL(route.url);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
      throw new OdgmError(
        "invalid_collection",
        `collection ${spec.name}: route of function ${fn} needs an http:// or https:// url, got ${JSON.stringify(route.url)}`,
      );
    }
  }
  const replicas = spec.replicaCount === 0 ? 1 : spec.replicaCount;
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 15) {
    throw new OdgmError(
      "invalid_collection",
      `collection ${spec.name}: replica_count must be 1..15, got ${spec.replicaCount}`,
    );
  }
  if (!raft && replicas > 1) {
    throw new OdgmError(
      "invalid_collection",
      `collection ${spec.name}: replica_count ${replicas} needs shard_type "raft" (a basic shard has one replica)`,
    );
  }
  // A copy (`create` would return `spec` itself): the caller's request stays as it was.
  const normalized = clone(CreateCollectionRequestSchema, spec);
  normalized.partitionCount = partitions;
  normalized.replicaCount = replicas;
  normalized.shardType = raft ? "raft" : "basic";
  return normalized;
}

/** Loads the registry from `shard` (the node's system shard). */
export async function openCollectionRegistry(shard: KvShard): Promise<CollectionRegistry> {
  const byName = new Map<string, CreateCollectionRequest>();
  const upper = PREFIX.slice();
  upper[upper.length - 1] = (upper[upper.length - 1] ?? 0) + 1;
  const it = shard.iterator("system", { gte: PREFIX, lt: upper });
  try {
    for (let page = await it.next(256); page.length > 0; page = await it.next(256)) {
      for (const [, value] of page) {
        const record = fromBinary(CollectionRecordSchema, value);
        if (record.spec !== undefined) byName.set(record.spec.name, record.spec);
      }
    }
  } finally {
    await it.close();
  }
  const keyOf = (name: string): Uint8Array => {
    const n = new TextEncoder().encode(name);
    const key = new Uint8Array(PREFIX.length + n.length);
    key.set(PREFIX);
    key.set(n, PREFIX.length);
    return key;
  };
  return {
    list: () =>
      [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    get: (name) => byName.get(name),
    async create(input) {
      const spec = normalizeCollectionSpec(input);
      const existing = byName.get(spec.name);
      if (existing !== undefined) {
        if (equals(CreateCollectionRequestSchema, existing, spec))
          return { created: false, spec: existing };
        throw new OdgmError(
          "collection_exists",
          `collection ${spec.name} already exists with a different spec`,
        );
      }
      const record = create(CollectionRecordSchema, { spec, createdAtMs: BigInt(Date.now()) });
      await shard.write(
        [
          {
            type: "put",
            keyspace: "system",
            key: keyOf(spec.name),
            value: toBinary(CollectionRecordSchema, record),
          },
        ],
        {
          sync: true,
        },
      );
      byName.set(spec.name, spec);
      return { created: true, spec };
    },
  };
}
