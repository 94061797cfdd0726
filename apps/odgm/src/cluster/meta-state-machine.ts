// The state machine of the metadata group: the collection registry and the cluster's
// address book, replicated on every node. Commands are JSON (the same bytes reach every
// replica, so JSON's freedom of form does not matter); applying one is idempotent, so a
// replay after a restart (the applied index is written after the command) changes nothing.
import { create, fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import type { KvShard } from "@oprc/entry-store";
import {
  type CreateCollectionRequest,
  CreateCollectionRequestSchema,
  DataPlaneError,
} from "@oprc/grpc-api";
import { type Entry, type SnapshotBytes, snapshotBytes } from "@oprc/raft-log";
import type { CollectionRegistry } from "../collections/collection-registry.js";
import { isOdgmError, OdgmError } from "../odgm-error.js";
import type { StateMachine } from "./raft-group.js";

/** A command of the metadata group. */
export type MetaCommand =
  | { readonly createCollection: CreateCollectionRequest }
  | { readonly setMember: { readonly id: number; readonly url: string } };

/** The result of one applied command: `undefined` on success, else the refusal. */
export type MetaResult = OdgmError | undefined;

const APPLIED_KEY = new TextEncoder().encode("meta/applied");
const MEMBER_PREFIX = "member/";
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
  throw new Error("unknown metadata command");
}

/** Options of {@link openMetaStateMachine}. */
export interface MetaStateMachineOptions {
  /** The node's own shard (it holds the registry records). */
  readonly shard: KvShard;
  readonly registry: CollectionRegistry;
  /** Cluster addresses learnt from the log (`setMember`), merged over `ODGM_MEMBERS`. */
  readonly addresses: Map<number, string>;
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
  {
    const lo = enc.encode(MEMBER_PREFIX);
    const hi = lo.slice();
    hi[hi.length - 1] = (hi[hi.length - 1] ?? 0) + 1;
    const it = shard.iterator("system", { gte: lo, lt: hi });
    try {
      for (let rows = await it.next(256); rows.length > 0; rows = await it.next(256)) {
        for (const [k, v] of rows) {
          o.addresses.set(Number(dec.decode(k).slice(MEMBER_PREFIX.length)), dec.decode(v));
        }
      }
    } finally {
      await it.close();
    }
  }
  const saveApplied = (index: number) =>
    shard.write(
      [{ type: "put", keyspace: "system", key: APPLIED_KEY, value: enc.encode(String(index)) }],
      {
        sync: true,
      },
    );
  const applyOne = async (cmd: MetaCommand): Promise<MetaResult> => {
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
    async apply(entries: readonly Entry[]) {
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
        }),
      );
      return async function* () {
        yield bytes;
      };
    },
    async restore(data: SnapshotBytes, index: number) {
      if (data.byteLength > 0) {
        // The registry is small: read whole.
        let snap: { collections: JsonValue[]; members: [number, string][] };
        try {
          snap = JSON.parse(dec.decode(snapshotBytes(data)));
        } catch (err) {
          throw new DataPlaneError("invalid_argument", `metadata snapshot is malformed: ${err}`);
        }
        for (const [id, url] of snap.members) await applyOne({ setMember: { id, url } });
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
