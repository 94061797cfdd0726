import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { create } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import {
  ConvertLegacyObjectsRequestSchema,
  DataService,
  ListLegacyObjectsRequestSchema,
  ListObjectsRequestSchema,
  ListValuesRequestSchema,
  MaintenanceService,
  type ObjData,
  SingleObjectRequestSchema,
} from "@oprc/grpc-api/messages";
import { BackfillError } from "./backfill-error.js";
import { checkpointFromJson, checkpointToJson } from "./checkpoint-record.js";
import {
  type BatchOutcome,
  type Checkpoint,
  type ConsistencyReport,
  type ConversionTarget,
  emptyOutcome,
  messageOf,
} from "./conversion-target.js";
import {
  blobEntryCount,
  blobToComparable,
  compareObjects,
  objectToComparable,
} from "./object-compare.js";

/** Ids fetched per `ListLegacyObjects` call. */
const LIST_PAGE = 4096;

/** Options of {@link openOnlineTarget}. */
export interface OnlineTargetOptions {
  /** The node's gRPC URL (h2c), e.g. `http://127.0.0.1:8080`. */
  readonly endpoint: string;
  readonly collection: string;
  readonly partition: number;
  /** Ids per `ConvertLegacyObjects` call. */
  readonly batchSize: number;
  /** Checkpoint file; undefined: resume by listing the remaining blobs only. */
  readonly checkpointFile?: string | undefined;
  /** Per-call deadline in ms. Default 60 000. */
  readonly timeoutMs?: number | undefined;
  /** Ids fetched per `ListLegacyObjects` call. Default 4096. */
  readonly listPageSize?: number | undefined;
}

function rpcError(err: unknown, endpoint: string, what: string): BackfillError {
  const e = ConnectError.from(err);
  if (e.code === Code.NotFound) return new BackfillError("not_found", `${what}: ${e.rawMessage}`);
  if (e.code === Code.Unimplemented) {
    return new BackfillError(
      "unavailable",
      `${what}: the node at ${endpoint} does not serve oprc.MaintenanceService (${e.rawMessage})`,
    );
  }
  return new BackfillError("unavailable", `${what} at ${endpoint}: ${e.message}`, { cause: err });
}

/**
 * Connects to a running node's maintenance API (spec §10, online mode). Fails with
 * `unavailable` when the node cannot be reached and `not_found` when it has no such shard.
 */
export async function openOnlineTarget(options: OnlineTargetOptions): Promise<ConversionTarget> {
  let url: URL;
  try {
    url = new URL(options.endpoint);
  } catch {
    throw new BackfillError("invalid_argument", `--endpoint ${options.endpoint} is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new BackfillError(
      "invalid_argument",
      `--endpoint must be an http:// (h2c) or https:// URL, got ${options.endpoint}`,
    );
  }
  const sessions = new Http2SessionManager(url);
  const transport = createGrpcTransport({
    baseUrl: url.toString(),
    sessionManager: sessions,
    defaultTimeoutMs: options.timeoutMs ?? 60_000,
  });
  const target = new OnlineTarget(
    createClient(MaintenanceService, transport),
    createClient(DataService, transport),
    sessions,
    options,
  );
  try {
    // Probe: the node is reachable and has the shard.
    for await (const _ of target.maintenance.listLegacyObjects(
      create(ListLegacyObjectsRequestSchema, {
        clsId: options.collection,
        partitionId: options.partition,
        limit: 1n,
      }),
    )) {
      // drain
    }
  } catch (err) {
    sessions.abort();
    throw rpcError(
      err,
      options.endpoint,
      `shard ${options.collection}/${options.partition} on ${options.endpoint}`,
    );
  }
  return target;
}

class OnlineTarget implements ConversionTarget {
  readonly kind = "online" as const;
  readonly location: string;
  readonly batchSize: number;

  constructor(
    readonly maintenance: Client<typeof MaintenanceService>,
    private readonly data: Client<typeof DataService>,
    private readonly sessions: Http2SessionManager,
    private readonly options: OnlineTargetOptions,
  ) {
    this.location = options.endpoint;
    this.batchSize = options.batchSize;
  }

  private get shard(): { clsId: string; partitionId: number } {
    return { clsId: this.options.collection, partitionId: this.options.partition };
  }

  async *listIds(after?: bigint): AsyncIterable<bigint> {
    // One short call per page of ids, each read to its end before converting: a stream
    // held open for a whole run would outlive its deadline and pin the HTTP/2 session.
    const pageSize = this.options.listPageSize ?? LIST_PAGE;
    let cursor = after;
    for (;;) {
      const req = create(ListLegacyObjectsRequestSchema, {
        ...this.shard,
        pageSize,
        limit: BigInt(pageSize),
        ...(cursor === undefined ? {} : { afterObjectId: cursor }),
      });
      const ids: bigint[] = [];
      try {
        for await (const page of this.maintenance.listLegacyObjects(req))
          ids.push(...page.objectIds);
      } catch (err) {
        throw rpcError(err, this.options.endpoint, "listing legacy objects");
      }
      yield* ids;
      if (ids.length < pageSize) return;
      cursor = ids[ids.length - 1];
    }
  }

  /** The object through the service's read path, or `undefined` when it does not exist. */
  private async getObject(id: string | bigint): Promise<ObjData | undefined> {
    try {
      const res = await this.data.get(
        create(SingleObjectRequestSchema, {
          ...this.shard,
          ...(typeof id === "bigint" ? { objectId: id } : { objectIdStr: id }),
        }),
      );
      return res.obj;
    } catch (err) {
      if (ConnectError.from(err).code === Code.NotFound) return undefined;
      throw err;
    }
  }

  /** The object's version from ListObjects, or `undefined` when it does not exist. */
  private async versionOf(id: string): Promise<bigint | undefined> {
    const req = create(ListObjectsRequestSchema, { ...this.shard, objectIdPrefix: id, limit: 1 });
    let version: bigint | undefined;
    // Read the stream to its end (one item): leaving an HTTP/2 stream half-read keeps the
    // session, and with it the process, alive.
    for await (const o of this.data.listObjects(req)) {
      if (o.objectId === id) version = o.version;
    }
    return version;
  }

  async countEntries(ids: readonly bigint[]): Promise<number> {
    let n = 0;
    // Reads in waves of 32 concurrent Gets (a dry run only reads).
    for (let i = 0; i < ids.length; i += 32) {
      const objs = await Promise.all(
        ids.slice(i, i + 32).map((id) =>
          this.getObject(id).catch((err: unknown) => {
            throw rpcError(err, this.options.endpoint, `reading object ${id}`);
          }),
        ),
      );
      for (const obj of objs) if (obj !== undefined) n += blobEntryCount(obj);
    }
    return n;
  }

  private async convertCall(ids: readonly bigint[]): Promise<BatchOutcome> {
    const res = await this.maintenance.convertLegacyObjects(
      create(ConvertLegacyObjectsRequestSchema, { ...this.shard, objectIds: [...ids] }),
    );
    const out = emptyOutcome();
    out.converted = Number(res.converted);
    out.skipped = Number(res.skipped);
    out.entries = Number(res.entries);
    return out;
  }

  async convert(ids: readonly bigint[], verify: boolean): Promise<BatchOutcome> {
    const originals = new Map<bigint, ObjData>();
    const out = emptyOutcome();
    if (verify) {
      for (const id of ids) {
        try {
          const obj = await this.getObject(id);
          if (obj !== undefined) originals.set(id, obj);
        } catch (err) {
          out.failures.push({
            id: id.toString(),
            message: `reading before conversion: ${messageOf(err)}`,
          });
        }
      }
    }
    const failedBefore = new Set(out.failures.map((f) => f.id));
    const todo = ids.filter((id) => !failedBefore.has(id.toString()));
    try {
      const r = await this.convertCall(todo);
      out.converted += r.converted;
      out.skipped += r.skipped;
      out.entries += r.entries;
    } catch (batchErr) {
      if (ConnectError.from(batchErr).code === Code.Unavailable && todo.length > 0) {
        // The node went away: report it rather than failing every object.
        throw rpcError(batchErr, this.options.endpoint, "converting legacy objects");
      }
      // Isolate the failing object(s): the call converts in order and stops at the first
      // error, so retrying one by one converts the rest and names the culprits.
      for (const id of todo) {
        try {
          const r = await this.convertCall([id]);
          out.converted += r.converted;
          out.skipped += r.skipped;
          out.entries += r.entries;
        } catch (err) {
          out.failures.push({ id: id.toString(), message: ConnectError.from(err).rawMessage });
        }
      }
    }
    if (verify) await this.verifyConverted(originals, out);
    return out;
  }

  private async verifyConverted(originals: Map<bigint, ObjData>, out: BatchOutcome): Promise<void> {
    const failed = new Set(out.failures.map((f) => f.id));
    for (const [id, original] of originals) {
      const sid = id.toString();
      if (failed.has(sid)) continue;
      try {
        // Version 0 before and after the read means nothing wrote the object since its
        // conversion, so it must hold exactly the blob read before converting; a client
        // write converts first and bumps the version, and is not compared.
        const v1 = await this.versionOf(sid);
        if (v1 === undefined) {
          out.verified++;
          out.mismatches.push({ id: sid, message: "object is missing after conversion" });
          continue;
        }
        if (v1 !== 0n) {
          out.modifiedConcurrently++;
          continue;
        }
        const now = await this.getObject(sid);
        const v2 = await this.versionOf(sid);
        if (v2 !== 0n) {
          out.modifiedConcurrently++;
          continue;
        }
        out.verified++;
        const diff =
          now === undefined
            ? "object is missing after conversion"
            : compareObjects(blobToComparable(original), objectToComparable(now));
        if (diff !== undefined) out.mismatches.push({ id: sid, message: diff });
      } catch (err) {
        out.verified++;
        out.mismatches.push({ id: sid, message: `unreadable: ${messageOf(err)}` });
      }
    }
  }

  async checkConsistency(signal?: AbortSignal): Promise<ConsistencyReport> {
    const report: ConsistencyReport = { objects: 0, entries: 0, problems: [] };
    let cursor: Uint8Array | undefined;
    do {
      signal?.throwIfAborted();
      const req = create(ListObjectsRequestSchema, {
        ...this.shard,
        limit: 1000,
        ...(cursor === undefined ? {} : { cursor }),
      });
      const page: { id: string; version: bigint; entryCount: bigint }[] = [];
      cursor = undefined;
      for await (const o of this.data.listObjects(req)) {
        page.push({ id: o.objectId, version: o.version, entryCount: o.entryCount });
        cursor = o.nextCursor;
      }
      for (const o of page) {
        report.objects++;
        try {
          let count = 0n;
          let bad: string | undefined;
          let entryCursor: Uint8Array | undefined;
          do {
            const lreq = create(ListValuesRequestSchema, {
              ...this.shard,
              objectIdStr: o.id,
              limit: 1000,
              ...(entryCursor === undefined ? {} : { cursor: entryCursor }),
            });
            entryCursor = undefined;
            for await (const e of this.data.listValues(lreq)) {
              count++;
              if (e.version > o.version) {
                bad ??= `entry ${JSON.stringify(e.key)} has version ${e.version} above the object's ${o.version}`;
              }
              entryCursor = e.nextCursor;
            }
          } while (entryCursor !== undefined);
          report.entries += Number(count);
          if (count !== o.entryCount) {
            bad ??= `metadata counts ${o.entryCount} entries, ${count} are stored`;
          }
          // A client write between the listing and this read changes versions and counts:
          // only an object whose version is still the listed one can be inconsistent.
          if (bad !== undefined && (await this.versionOf(o.id)) === o.version) {
            report.problems.push({ id: o.id, message: bad });
          }
        } catch (err) {
          report.problems.push({ id: o.id, message: `unreadable: ${messageOf(err)}` });
        }
      }
    } while (cursor !== undefined);
    return report;
  }

  async loadCheckpoint(): Promise<Checkpoint | undefined> {
    const file = this.options.checkpointFile;
    if (file === undefined) return undefined;
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw new BackfillError("io", `cannot read checkpoint file ${file}: ${messageOf(err)}`, {
        cause: err,
      });
    }
    return checkpointFromJson(text, this.options.collection, this.options.partition, file);
  }

  async saveCheckpoint(checkpoint: Checkpoint): Promise<void> {
    const file = this.options.checkpointFile;
    if (file === undefined) return;
    const tmp = `${file}.${randomBytes(4).toString("hex")}.tmp`;
    try {
      await mkdir(dirname(file), { recursive: true });
      await writeFile(
        tmp,
        checkpointToJson(this.options.collection, this.options.partition, checkpoint),
        { flush: true },
      );
      await rename(tmp, file);
    } catch (err) {
      throw new BackfillError("io", `cannot write checkpoint file ${file}: ${messageOf(err)}`, {
        cause: err,
      });
    }
  }

  async close(): Promise<void> {
    this.sessions.abort();
  }
}
