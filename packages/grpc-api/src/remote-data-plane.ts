// An ObjectDataPlane served by another node: every call becomes the DataService RPC that
// asks for the same thing, so a host can hand a request for data it does not hold to one
// that does, whatever protocol the request arrived on.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { type CallOptions, type Client, ConnectError } from "@connectrpc/connect";
import type { EntryKey } from "@oprc/oprc-id";
import type {
  DataPlaneCall,
  EntryBatch,
  EntryRead,
  EntryWrite,
  ListedEntry,
  ListedObject,
  ObjectDataPlane,
  ObjectRef,
  ObjectWrite,
  StoredEntry,
  StoredObject,
} from "./data-plane.js";
import {
  DataPlaneError,
  type DataPlaneErrorOptions,
  isDataPlaneErrorCode,
} from "./data-plane-error.js";
import type { DataService, ObjData, ObjDataSchema, ValDataSchema } from "./gen/oprc-data_pb.js";
import { LEADER_HINT_HEADER } from "./to-connect-error.js";

/** Options of {@link createRemoteDataPlane}. */
export interface RemoteDataPlaneOptions {
  /** Headers added to every call (e.g. a marker that the call was forwarded). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Request headers of the original call passed on when present (e.g. a read consistency). */
  readonly passHeaders?: readonly string[];
}

/** The object operations of {@link ObjectDataPlane} a remote node can serve. */
export type RemoteDataPlane = Omit<ObjectDataPlane, "capabilities" | "stats">;

const U32_MAX = 0xffff_ffff;

/** An entry key as the wire names it (`"42"` is numeric key 42). */
function keyOf(key: string): EntryKey {
  if (/^(0|[1-9][0-9]{0,9})$/.test(key)) {
    const n = Number(key);
    if (n <= U32_MAX) return { kind: "numeric", key, numeric: n };
  }
  return { kind: "string", key };
}

/** The id fields of a request, in the form the client used. */
function idFields(ref: ObjectRef): { objectId?: bigint; objectIdStr?: string } {
  return ref.id.kind === "numeric" ? { objectId: ref.id.numeric } : { objectIdStr: ref.id.id };
}

function keyFields(key: EntryKey): { key?: number; keyStr?: string } {
  return key.kind === "numeric" ? { key: key.numeric } : { keyStr: key.key };
}

function objData(write: ObjectWrite): MessageInitShape<typeof ObjDataSchema> {
  const entries: Record<number, MessageInitShape<typeof ValDataSchema>> = {};
  const entriesStr: Record<string, MessageInitShape<typeof ValDataSchema>> = {};
  for (const e of write.entries) {
    if (e.key.kind === "numeric") entries[e.key.numeric] = e.value;
    else entriesStr[e.key.key] = e.value;
  }
  return { entries, entriesStr, ...(write.event === undefined ? {} : { event: write.event }) };
}

/**
 * The error a remote odgm answered, as this side's handlers would have raised it: a
 * `[code] message` of a {@link DataPlaneError} code becomes that DataPlaneError again (with
 * a CAS mismatch's versions and a leader hint), so it is answered with the same status,
 * message and odgm trailers; anything else is a ConnectError with the same code and message.
 */
export function fromRemoteError(err: unknown): Error {
  const ce = ConnectError.from(err);
  const m = /^\[([a-z_]+)\] ([\s\S]*)$/.exec(ce.rawMessage);
  const code = m?.[1];
  if (m !== null && code !== undefined && isDataPlaneErrorCode(code)) {
    const options: DataPlaneErrorOptions = { cause: err };
    const versions = /expected object version (\d+), actual (\d+)/.exec(m[2] ?? "");
    if (code === "version_mismatch" && versions !== null) {
      options.expected = BigInt(versions[1] as string);
      options.actual = BigInt(versions[2] as string);
    }
    const hint = ce.metadata.get(LEADER_HINT_HEADER);
    if (code === "not_leader" && hint !== null) options.leaderHint = hint;
    return new DataPlaneError(code, m[2] ?? "", options);
  }
  return new ConnectError(ce.rawMessage, ce.code, undefined, undefined, err);
}

/** Get does not carry the object's version; entries report 0 (DataService drops it too). */
function storedObject(obj: ObjData | undefined): StoredObject {
  const entries: StoredEntry[] = [];
  if (obj !== undefined) {
    for (const [k, v] of Object.entries(obj.entries)) {
      entries.push({ key: keyOf(k), value: { data: v.data, type: v.type }, version: 0n });
    }
    for (const [k, v] of Object.entries(obj.entriesStr)) {
      entries.push({ key: keyOf(k), value: { data: v.data, type: v.type }, version: 0n });
    }
  }
  return { version: 0n, entries, event: obj?.event };
}

/**
 * Creates a data plane whose object operations are DataService calls through `client`.
 * Failures come back as the errors that give the same status, message and odgm trailers
 * (a missing object on Get too: NOT_FOUND with the remote's message).
 *
 * @example
 * ```ts
 * import { createClient } from "@connectrpc/connect";
 * import { createGrpcTransport } from "@connectrpc/connect-node";
 * import { createRemoteDataPlane, DataService } from "@oprc/grpc-api";
 *
 * const remote = createRemoteDataPlane(
 *   createClient(DataService, createGrpcTransport({ baseUrl: "http://10.0.0.2:8080" })),
 * );
 * ```
 */
export function createRemoteDataPlane(
  client: Client<typeof DataService>,
  options: RemoteDataPlaneOptions = {},
): RemoteDataPlane {
  const callOptions = (call: DataPlaneCall): CallOptions => {
    const headers = new Headers(options.headers);
    for (const name of options.passHeaders ?? []) {
      const v = call.headers.get(name);
      if (v !== null) headers.set(name, v);
    }
    return { signal: call.signal, headers };
  };
  const base = (ref: ObjectRef) => ({
    clsId: ref.cls,
    partitionId: ref.partition,
    ...idFields(ref),
  });

  const plane: RemoteDataPlane = {
    async getObject(ref, call) {
      // A missing object is answered NOT_FOUND with the message this side would give.
      const res = await client.get(base(ref), callOptions(call));
      return storedObject(res.obj);
    },

    async deleteObject(ref, call) {
      await client.delete(base(ref), callOptions(call));
    },

    async setObject(ref, write, call) {
      await client.set({ ...base(ref), object: objData(write) }, callOptions(call));
    },

    async mergeObject(ref, write, call) {
      const res = await client.merge({ ...base(ref), object: objData(write) }, callOptions(call));
      return storedObject(res.obj);
    },

    async getEntry(ref, key, call): Promise<EntryRead> {
      const res = await client.getValue({ ...base(ref), ...keyFields(key) }, callOptions(call));
      const version = res.objectVersion;
      return {
        objectVersion: version,
        entry:
          res.value === undefined
            ? undefined
            : {
                key,
                value: { data: res.value.data, type: res.value.type },
                version: version ?? 0n,
              },
      };
    },

    async setEntry(ref, entry: EntryWrite, call) {
      await client.setValue(
        { ...base(ref), ...keyFields(entry.key), value: entry.value },
        callOptions(call),
      );
    },

    async deleteEntry(ref, key, call) {
      await client.deleteValue({ ...base(ref), ...keyFields(key) }, callOptions(call));
    },

    async batchEntries(ref, batch: EntryBatch, call) {
      const values: Record<string, MessageInitShape<typeof ValDataSchema>> = {};
      for (const e of batch.set) values[e.key.key] = e.value;
      await client.batchSetValues(
        {
          ...base(ref),
          values,
          deleteKeys: batch.delete.map((k) => k.key),
          ...(batch.expectedVersion === undefined
            ? {}
            : { expectedObjectVersion: batch.expectedVersion }),
        },
        callOptions(call),
      );
    },

    async *listEntries(ref, query, call): AsyncIterable<ListedEntry> {
      const stream = client.listValues(
        {
          ...base(ref),
          limit: query.limit,
          ...(query.keyPrefix === undefined ? {} : { keyPrefix: query.keyPrefix }),
          ...(query.cursor === undefined ? {} : { cursor: query.cursor }),
        },
        callOptions(call),
      );
      for await (const e of stream) {
        yield {
          key: keyOf(e.key),
          value: { data: e.value?.data ?? new Uint8Array(0), type: e.value?.type ?? 0 },
          version: e.version,
          nextCursor: e.nextCursor,
        };
      }
    },

    async *listObjects(partition, query, call): AsyncIterable<ListedObject> {
      const stream = client.listObjects(
        {
          clsId: partition.cls,
          partitionId: partition.partition,
          limit: query.limit,
          ...(query.idPrefix === undefined ? {} : { objectIdPrefix: query.idPrefix }),
          ...(query.cursor === undefined ? {} : { cursor: query.cursor }),
        },
        callOptions(call),
      );
      for await (const o of stream) {
        yield {
          id: o.objectId,
          version: o.version,
          entryCount: o.entryCount,
          nextCursor: o.nextCursor,
        };
      }
    },
  };
  return withRemoteErrors(plane);
}

/** Every method of `plane` with its failures passed through {@link fromRemote}. */
function withRemoteErrors(plane: RemoteDataPlane): RemoteDataPlane {
  const unary =
    <A extends unknown[], T>(fn: (...a: A) => Promise<T>) =>
    (...a: A): Promise<T> =>
      fn(...a).catch((err: unknown) => {
        throw fromRemoteError(err);
      });
  const stream = <A extends unknown[], T>(fn: (...a: A) => AsyncIterable<T>) =>
    async function* (...a: A): AsyncIterable<T> {
      try {
        yield* fn(...a);
      } catch (err) {
        throw fromRemoteError(err);
      }
    };
  return {
    getObject: unary(plane.getObject),
    deleteObject: unary(plane.deleteObject),
    setObject: unary(plane.setObject),
    mergeObject: unary(plane.mergeObject),
    getEntry: unary(plane.getEntry),
    setEntry: unary(plane.setEntry),
    deleteEntry: unary(plane.deleteEntry),
    batchEntries: unary(plane.batchEntries),
    listEntries: stream(plane.listEntries),
    listObjects: stream(plane.listObjects),
  };
}
