// The read side of a shard: point reads, whole-object reconstruction and listings, all
// served from storage (durable data only) with the legacy-blob fallback of spec §4.
import {
  afterObject,
  decodeCursor,
  decodeListCursor,
  encodeCursor,
  encodeEventConfigKey,
  encodeLegacyKey,
  encodeListCursor,
  encodeMetadataKey,
  entryRange,
  findRange,
  type KeyRange,
  objectRange,
  objectsRange,
  rangesAfter,
} from "@oprc/granular-key";
import type { ObjData, ObjectEvent, ObjectMetaRecord, ValData } from "@oprc/grpc-api/messages";
import { isCanonicalU64 } from "@oprc/oprc-id";
import { compareBytes, readU64, toHex } from "./bytes.js";
import {
  checkId,
  compareEntryKeys,
  decodeEntryKey,
  decodeStoredKey,
  type KeyInfo,
  keyArg,
  keyInfo,
} from "./entry-keys.js";
import type { KvShard } from "./kv.js";
import { blobEntries, legacyKeyOf } from "./legacy-blobs.js";
import { decodeBlob, decodeEntry, decodeEvent, decodeMeta } from "./records.js";
import { StoreError } from "./store-error.js";
import type {
  GetEntryResult,
  GetObjectOptions,
  ListEntriesOptions,
  ListEntriesResult,
  ListObjectsOptions,
  ListObjectsResult,
  ObjectMetadata,
  ObjectSummary,
  StoredEntry,
  StoredObject,
} from "./types.js";

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1024;

/** Options of {@link StoreReader}. */
export interface StoreReaderOptions {
  /** Entries per storage page when reconstructing an object. */
  readonly prefetchLimit: number;
  /** Ceiling on the entries of a reconstructed object. */
  readonly maxGetEntries: number;
  /** Longest entry key in UTF-8 bytes, bounding prefix scans. */
  readonly maxKeyLength: number;
  /** Read legacy blobs of numeric ids that have no granular metadata. */
  readonly legacyFallback: boolean;
  /** Called for every read served from a legacy blob. */
  readonly onBlobFallbackRead?: ((id: string) => void) | undefined;
}

/** Checks a page size: 0 or absent is the default (100), larger than 1024 is capped. */
export function checkLimit(limit: number | undefined): number {
  if (limit === undefined || limit === 0) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 0) {
    throw new StoreError("invalid_argument", `limit must be a non-negative integer, got ${limit}`);
  }
  return Math.min(limit, MAX_LIMIT);
}

/** Checks a positive integer option. */
export function checkPositive(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 1)
    throw new StoreError("invalid_argument", `${what} must be a positive integer`);
  return n;
}

function metadataOf(id: string, meta: ObjectMetaRecord): ObjectMetadata {
  return {
    id,
    version: meta.objectVersion,
    deleted: meta.tombstone,
    entryCount: meta.entryCount,
    createdAtMs: meta.createdAtMs,
    updatedAtMs: meta.updatedAtMs,
    attributes: { ...meta.attributes },
    legacy: false,
  };
}

/**
 * Reads of one shard. Every read sees durable data only: it goes to storage, never to
 * the planned state of the write path.
 */
export class StoreReader {
  private fallbackReads = 0;
  private readonly prefetchLimit: number;
  private readonly maxGetEntries: number;
  private readonly maxKeyLength: number;

  constructor(
    private readonly kv: KvShard,
    private readonly options: StoreReaderOptions,
  ) {
    this.prefetchLimit = checkPositive(options.prefetchLimit, "prefetchLimit");
    this.maxGetEntries = checkPositive(options.maxGetEntries, "maxGetEntries");
    this.maxKeyLength = checkPositive(options.maxKeyLength, "maxKeyLength");
  }

  /** Reads served from legacy blobs so far. */
  get blobFallbackReads(): number {
    return this.fallbackReads;
  }

  private legacyKey(id: string): Uint8Array | undefined {
    return this.options.legacyFallback ? legacyKeyOf(id) : undefined;
  }

  /**
   * After a read found no granular metadata: the legacy blob (counted as a fallback read),
   * `undefined` when the object does not exist, or {@link RETRY} when the blob is gone but
   * metadata now exists — the object was converted between the two reads (conversion
   * writes metadata and deletes the blob atomically), so the caller reads again, once.
   */
  private async blobAfterMiss(
    id: string,
    retried: boolean,
  ): Promise<ObjData | undefined | typeof RETRY> {
    const key = this.legacyKey(id);
    if (key === undefined) return undefined;
    const raw = await this.kv.get("blobs", key);
    if (raw !== undefined) {
      this.fallbackReads++;
      this.options.onBlobFallbackRead?.(id);
      return decodeBlob(raw, key);
    }
    if (retried) return undefined;
    return (await this.kv.get("objects", encodeMetadataKey(id))) === undefined ? undefined : RETRY;
  }

  async getMetadata(id: string): Promise<ObjectMetadata | undefined> {
    checkId(id);
    const metaKey = keyArg(() => encodeMetadataKey(id), "object id");
    let blob: ObjData | undefined | typeof RETRY;
    for (let retried = false; ; retried = true) {
      const raw = await this.kv.get("objects", metaKey);
      if (raw !== undefined) return metadataOf(id, decodeMeta(raw, metaKey));
      blob = await this.blobAfterMiss(id, retried);
      if (blob !== RETRY) break;
    }
    if (blob === undefined) return undefined;
    return {
      id,
      version: 0n,
      deleted: false,
      entryCount: BigInt(blobEntries(id, blob).size),
      createdAtMs: 0n,
      updatedAtMs: 0n,
      attributes: {},
      legacy: true,
    };
  }

  async getEntry(id: string, key: string): Promise<GetEntryResult> {
    checkId(id);
    const metaKey = keyArg(() => encodeMetadataKey(id), "object id");
    const info = keyInfo(id, key);
    let blob: ObjData | undefined | typeof RETRY;
    for (let retried = false; ; retried = true) {
      const [metaRaw, entryRaw] = await this.kv.getMany("objects", [metaKey, info.storageKey]);
      if (metaRaw !== undefined) {
        const meta = decodeMeta(metaRaw, metaKey);
        if (meta.tombstone) return { objectVersion: undefined, entry: undefined };
        if (entryRaw === undefined) return { objectVersion: meta.objectVersion, entry: undefined };
        const rec = decodeEntry(entryRaw, info.storageKey);
        return {
          objectVersion: meta.objectVersion,
          entry: this.storedEntry(info, rec.value, rec.version, rec.updatedAtMs),
        };
      }
      blob = await this.blobAfterMiss(id, retried);
      if (blob !== RETRY) break;
    }
    if (blob === undefined) return { objectVersion: undefined, entry: undefined };
    const value = info.numeric
      ? blob.entries[Number(info.key)]
      : Object.hasOwn(blob.entriesStr, info.key)
        ? blob.entriesStr[info.key]
        : undefined;
    return {
      objectVersion: 0n,
      entry:
        value === undefined
          ? undefined
          : { key: info.key, numeric: info.numeric, value, version: 0n, updatedAtMs: 0n },
    };
  }

  private storedEntry(
    info: KeyInfo,
    value: ValData | undefined,
    version: bigint,
    updatedAtMs: bigint,
  ): StoredEntry {
    if (value === undefined) {
      throw new StoreError("corrupt_record", `entry ${toHex(info.storageKey)} has no value`, {
        key: info.storageKey.slice(),
      });
    }
    return { key: info.key, numeric: info.numeric, value, version, updatedAtMs };
  }

  async getEventConfig(id: string): Promise<ObjectEvent | undefined> {
    checkId(id);
    const metaKey = keyArg(() => encodeMetadataKey(id), "object id");
    const eventKey = encodeEventConfigKey(id);
    for (let retried = false; ; retried = true) {
      const [metaRaw, eventRaw] = await this.kv.getMany("objects", [metaKey, eventKey]);
      if (metaRaw !== undefined) {
        const meta = decodeMeta(metaRaw, metaKey);
        if (meta.tombstone || eventRaw === undefined) return undefined;
        return decodeEvent(eventRaw, eventKey);
      }
      const blob = await this.blobAfterMiss(id, retried);
      if (blob !== RETRY) return blob?.event;
    }
  }

  async getObject(id: string, options: GetObjectOptions = {}): Promise<StoredObject | undefined> {
    checkId(id);
    const page = checkPositive(options.prefetchLimit ?? this.prefetchLimit, "prefetchLimit");
    const max = checkPositive(options.maxEntries ?? this.maxGetEntries, "maxEntries");
    const range = keyArg(() => objectRange(id), "object id");
    for (let retried = false; ; retried = true) {
      const found = await this.readObject(id, range, page, max);
      if (found !== MISSING) return found;
      const blob = await this.blobAfterMiss(id, retried);
      if (blob === RETRY) continue;
      if (blob === undefined) return undefined;
      const entries = new Map<number, ValData>();
      const entriesStr = new Map<string, ValData>();
      const all = blobEntries(id, blob);
      if (all.size > max) throw tooLarge(id, BigInt(all.size), max);
      for (const { info, value } of all.values()) {
        if (info.numeric) entries.set(Number(info.key), value);
        else entriesStr.set(info.key, value);
      }
      return {
        id,
        version: 0n,
        entries,
        entriesStr,
        event: blob.event,
        createdAtMs: 0n,
        updatedAtMs: 0n,
        attributes: {},
        legacy: true,
      };
    }
  }

  /** The granular part of {@link getObject}: one snapshot iterator over the object's range. */
  private async readObject(
    id: string,
    range: KeyRange,
    page: number,
    max: number,
  ): Promise<StoredObject | undefined | typeof MISSING> {
    const it = this.kv.iterator("objects", { gte: range.gte, lt: range.lt });
    let meta: ObjectMetaRecord | undefined;
    let event: ObjectEvent | undefined;
    const entries = new Map<number, ValData>();
    const entriesStr = new Map<string, ValData>();
    let count = 0;
    try {
      let first = true;
      for (;;) {
        // The first page also carries the metadata and event config records.
        const rows = await it.next(first ? page + 2 : page);
        if (rows.length === 0) break;
        for (const [key, value] of rows) {
          const decoded = decodeStoredKey(key);
          if (first) {
            first = false;
            if (decoded.record !== "metadata") break;
            meta = decodeMeta(value, key);
            if (meta.tombstone) return undefined;
            if (meta.entryCount > BigInt(max)) throw tooLarge(id, meta.entryCount, max);
            continue;
          }
          switch (decoded.record) {
            case "event_config":
              event = decodeEvent(value, key);
              break;
            case "numeric_entry": {
              if (++count > max) throw tooLarge(id, BigInt(count), max);
              const rec = decodeEntry(value, key);
              entries.set(decoded.key.numeric, this.entryValue(rec.value, key));
              break;
            }
            case "string_entry": {
              if (++count > max) throw tooLarge(id, BigInt(count), max);
              const rec = decodeEntry(value, key);
              entriesStr.set(decoded.key.str, this.entryValue(rec.value, key));
              break;
            }
            default:
              // view blobs and extension records are not part of the object's data.
              break;
          }
        }
        if (meta === undefined) break;
      }
    } finally {
      await it.close();
    }
    if (meta !== undefined) {
      return {
        id,
        version: meta.objectVersion,
        entries,
        entriesStr,
        event,
        createdAtMs: meta.createdAtMs,
        updatedAtMs: meta.updatedAtMs,
        attributes: { ...meta.attributes },
        legacy: false,
      };
    }
    return MISSING;
  }

  private entryValue(value: ValData | undefined, key: Uint8Array): ValData {
    if (value === undefined) {
      throw new StoreError("corrupt_record", `entry ${toHex(key)} has no value`, {
        key: key.slice(),
      });
    }
    return value;
  }

  async listEntries(id: string, options: ListEntriesOptions = {}): Promise<ListEntriesResult> {
    checkId(id);
    const limit = checkLimit(options.limit);
    const prefix = options.prefix;
    if (prefix !== undefined && typeof prefix !== "string") {
      throw new StoreError("invalid_argument", "prefix must be a string");
    }
    let ranges = keyArg(
      () =>
        entryRange(
          id,
          prefix === undefined || prefix === ""
            ? {}
            : { stringPrefix: prefix, maxKeyLength: this.maxKeyLength },
        ),
      "list entries",
    );
    if (options.cursor !== undefined) {
      const cursor = options.cursor;
      let lastKey: Uint8Array;
      try {
        lastKey = decodeCursor(id, cursor);
      } catch (err) {
        throw new StoreError("invalid_cursor", err instanceof Error ? err.message : String(err), {
          cause: err,
        });
      }
      ranges = rangesAfter(ranges, lastKey);
    }
    const metaKey = encodeMetadataKey(id);
    let metaRaw: Uint8Array | undefined;
    for (let retried = false; ; retried = true) {
      metaRaw = await this.kv.get("objects", metaKey);
      if (metaRaw !== undefined) break;
      const blob = await this.blobAfterMiss(id, retried);
      if (blob === RETRY) continue;
      if (blob === undefined) return { entries: [], nextCursor: undefined };
      return this.listBlobEntries(id, blob, ranges, limit);
    }
    if (decodeMeta(metaRaw, metaKey).tombstone || ranges.length === 0) {
      return { entries: [], nextCursor: undefined };
    }
    const out: StoredEntry[] = [];
    const first = ranges[0] as KeyRange;
    const last = ranges[ranges.length - 1] as KeyRange;
    const it = this.kv.iterator("objects", { gte: first.gte, lt: last.lt });
    let more = false;
    try {
      scan: for (;;) {
        const rows = await it.next(limit + 1 - out.length);
        if (rows.length === 0) break;
        for (const [key, value] of rows) {
          // One range (no prefix): the iterator's bounds already are the range.
          if (ranges.length > 1) {
            const i = findRange(ranges, key);
            if (i >= ranges.length) break scan;
            const r = ranges[i] as KeyRange;
            if (compareBytes(key, r.gte) < 0) {
              // Between two prefix ranges: skip the gap in one seek and read again.
              it.seek(r.gte);
              continue scan;
            }
          }
          if (out.length === limit) {
            more = true;
            break scan;
          }
          // Engines hand out keys they never mutate, so no copy is needed.
          const info = decodeEntryKey(id, key);
          const rec = decodeEntry(value, key);
          out.push(this.storedEntry(info, rec.value, rec.version, rec.updatedAtMs));
        }
      }
    } finally {
      await it.close();
    }
    const tail = out[out.length - 1];
    return {
      entries: out,
      nextCursor:
        more && tail !== undefined ? encodeCursor(id, keyInfo(id, tail.key).storageKey) : undefined,
    };
  }

  private listBlobEntries(
    id: string,
    blob: ObjData,
    ranges: readonly KeyRange[],
    limit: number,
  ): ListEntriesResult {
    const all = [...blobEntries(id, blob).values()]
      .filter(({ info }) => {
        const i = findRange(ranges, info.storageKey);
        return i < ranges.length && compareBytes(info.storageKey, (ranges[i] as KeyRange).gte) >= 0;
      })
      .sort((a, b) => compareEntryKeys(a.info, b.info));
    const page = all.slice(0, limit);
    const tail = page[page.length - 1];
    return {
      entries: page.map(({ info, value }) => ({
        key: info.key,
        numeric: info.numeric,
        value,
        version: 0n,
        updatedAtMs: 0n,
      })),
      nextCursor:
        all.length > limit && tail !== undefined
          ? encodeCursor(id, tail.info.storageKey)
          : undefined,
    };
  }

  async listObjects(options: ListObjectsOptions = {}): Promise<ListObjectsResult> {
    const limit = checkLimit(options.limit);
    const prefix = options.prefix === "" ? undefined : options.prefix;
    const range = keyArg(
      () => objectsRange(prefix === undefined ? undefined : { idPrefix: prefix }),
      "object id prefix",
    );
    let gte = range.gte;
    if (options.cursor !== undefined) {
      let lastKey: Uint8Array;
      try {
        lastKey = decodeListCursor(prefix, options.cursor);
      } catch (err) {
        throw new StoreError("invalid_cursor", err instanceof Error ? err.message : String(err), {
          cause: err,
        });
      }
      gte = afterObject(lastKey);
    }
    const objects: ObjectSummary[] = [];
    let lastKey: Uint8Array | undefined;
    let more = false;
    const it = this.kv.iterator("objects", { gte, lt: range.lt });
    try {
      for (;;) {
        const [row] = await it.next(1);
        if (row === undefined) break;
        const [key, value] = row;
        const decoded = decodeStoredKey(key);
        if (
          decoded.record === "metadata" &&
          !(options.numericIdsOnly === true && !isCanonicalU64(decoded.id))
        ) {
          const meta = decodeMeta(value, key);
          if (!meta.tombstone) {
            if (objects.length === limit) {
              more = true;
              break;
            }
            objects.push({
              id: decoded.id,
              version: meta.objectVersion,
              entryCount: meta.entryCount,
              createdAtMs: meta.createdAtMs,
              updatedAtMs: meta.updatedAtMs,
            });
            lastKey = key.slice();
          }
        }
        it.seek(afterObject(key));
      }
    } finally {
      await it.close();
    }
    return {
      objects,
      nextCursor: more && lastKey !== undefined ? encodeListCursor(prefix, lastKey) : undefined,
    };
  }

  async *legacyBlobIds(
    options: { after?: bigint; batchSize?: number } = {},
  ): AsyncIterable<bigint> {
    const size = checkPositive(options.batchSize ?? 256, "batchSize");
    const it = this.kv.iterator(
      "blobs",
      options.after === undefined
        ? { keysOnly: true }
        : { gt: keyArg(() => encodeLegacyKey(options.after as bigint), "after"), keysOnly: true },
    );
    try {
      for (;;) {
        const rows = await it.next(size);
        if (rows.length === 0) return;
        for (const [key] of rows) {
          if (key.length !== 8) {
            throw new StoreError("corrupt_record", `legacy blob key ${toHex(key)} is not 8 bytes`, {
              key: key.slice(),
            });
          }
          yield readU64(key, 0);
        }
      }
    } finally {
      await it.close();
    }
  }

  async getLegacyBlob(id: bigint): Promise<ObjData | undefined> {
    const key = keyArg(() => encodeLegacyKey(id), "legacy id");
    const raw = await this.kv.get("blobs", key);
    return raw === undefined ? undefined : decodeBlob(raw, key);
  }
}

/** Returned by a granular read that found no metadata. */
const MISSING: unique symbol = Symbol("missing");
/** Returned by `blobAfterMiss` when the object was converted between two reads. */
const RETRY: unique symbol = Symbol("retry");

function tooLarge(id: string, count: bigint, max: number): StoreError {
  return new StoreError(
    "too_large",
    `object ${id} has ${count} entries, more than the ${max} a whole-object read returns; use ListValues to page through its entries`,
  );
}
