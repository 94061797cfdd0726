// oprc.WatchService: streams a shard's durable change log. A watcher keeps only a cursor per
// partition and reads the log from storage at its own pace (catch-up and live alike), so a
// slow watcher costs no memory; it wakes when the shard logs a new head, and sends a progress
// message when idle. If compaction removes records a watcher has not read yet, the watch
// ends with an explicit "fell behind" error instead of skipping them.
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { ChangeLog } from "@oprc/entry-store";
import {
  ChangeAction,
  type ChangeRecord,
  ChangeRecordSchema,
  DataPlaneError,
  toConnectError,
  type WatchRequest,
  type WatchResponse,
  WatchResponseSchema,
  type WatchService,
} from "@oprc/grpc-api";
import { type NormalizeOptions, normalizeEntryKey, normalizeObjectId } from "@oprc/oprc-id";
import type { CollectionRegistry } from "../collections/collection-registry.js";
import type { ShardManager } from "../shards/shard-manager.js";

/** Response header naming the oldest revision still kept, on a compacted start. */
export const OLDEST_REVISION_HEADER = "odgm-oldest-revision";

/** Options of {@link createWatchServiceImpl}. */
export interface WatchServiceOptions {
  readonly shards: ShardManager;
  readonly registry: CollectionRegistry;
  /** Id and key normalization, as the data service's. */
  readonly ids: NormalizeOptions;
  /** Progress interval when the request names none, ms. */
  readonly progressMs: number;
  /** Records read per storage read. Default 256. */
  readonly pageSize?: number;
  /**
   * The nodes holding a replica of a partition this node holds none of (named in the
   * refusal of a watch of it). Default: none known.
   */
  readonly replicasOf?: (cls: string, partition: number) => readonly number[] | undefined;
  /** Told of every watch that starts and ends (for a gauge). */
  readonly onWatchers?: (delta: 1 | -1) => void;
  /** Aborted when the node shuts down: every watch ends with UNAVAILABLE. */
  readonly stop?: AbortSignal;
}

/** One watched partition. */
interface Cursor {
  readonly partition: number;
  readonly log: ChangeLog;
  /** The next revision to read. */
  next: bigint;
}

/** The filters of one watch, normalized. */
interface Filter {
  readonly objectId: string | undefined;
  readonly idPrefix: string | undefined;
  readonly keyPrefix: string | undefined;
  readonly actions: ReadonlySet<ChangeAction> | undefined;
  readonly values: boolean;
}

/** Whether the watcher's object filters (`object_id_str`, `id_prefix`) let `r` through. */
function matchesObject(r: ChangeRecord, f: Filter): boolean {
  return (
    (f.objectId === undefined || r.objectIdStr === f.objectId) &&
    (f.idPrefix === undefined || r.objectIdStr.startsWith(f.idPrefix))
  );
}

/**
 * The record as a watcher whose object filters let it through sees it (only matching keys,
 * values only when asked), or `undefined` when no key of it matches.
 */
function recordView(r: ChangeRecord, f: Filter, partition: number): ChangeRecord | undefined {
  const changes = r.changes
    .filter(
      (c) =>
        (f.keyPrefix === undefined || c.key.startsWith(f.keyPrefix)) &&
        (f.actions === undefined || f.actions.has(c.action)),
    )
    .map((c) => (f.values || c.value === undefined ? c : { ...c, value: undefined }));
  if (changes.length === 0) return undefined;
  // `event` (the trigger configuration kept for at-least-once delivery) is never sent.
  return create(ChangeRecordSchema, { ...r, changes, partitionId: partition, event: undefined });
}

/**
 * The responses watchers share: a record read from the in-memory window is the same object
 * for every watcher of its shard, so watchers whose filters keep whole records (no key or
 * action filter) send one response object per record and values choice — built once, and
 * encoded once on the gRPC fast path.
 */
const shared = new WeakMap<ChangeRecord, [WatchResponse | undefined, WatchResponse | undefined]>();

/** The change response of `r` for a watcher with filter `f`, or `undefined` when it matches nothing. */
function changeResponse(r: ChangeRecord, f: Filter, partition: number): WatchResponse | undefined {
  if (!matchesObject(r, f)) return undefined;
  const whole = f.keyPrefix === undefined && f.actions === undefined;
  const slot = whole ? shared.get(r) : undefined;
  const i = f.values ? 1 : 0;
  const cached = slot?.[i];
  if (cached !== undefined) return cached;
  const out = recordView(r, f, partition);
  if (out === undefined) return undefined;
  const res = create(WatchResponseSchema, { event: { case: "change", value: out } });
  if (whole) {
    const s = slot ?? [undefined, undefined];
    s[i] = res;
    if (slot === undefined) shared.set(r, s);
  }
  return res;
}

/** Creates the WatchService implementation. */
export function createWatchServiceImpl(o: WatchServiceOptions): ServiceImpl<typeof WatchService> {
  const pageSize = o.pageSize ?? 256;

  const filterOf = (req: WatchRequest, values: boolean): Filter => {
    const actions = req.actions.filter((a) => a !== ChangeAction.UNSPECIFIED);
    for (const a of actions) {
      if (ChangeAction[a] === undefined) {
        throw new DataPlaneError("invalid_argument", `unknown action ${a}`);
      }
    }
    return {
      objectId:
        req.objectIdStr === undefined ? undefined : normalizeObjectId(req.objectIdStr, o.ids),
      idPrefix:
        req.idPrefix === undefined || req.idPrefix === ""
          ? undefined
          : normalizeObjectId(req.idPrefix, o.ids),
      keyPrefix:
        req.keyPrefix === undefined || req.keyPrefix === ""
          ? undefined
          : normalizeEntryKey(req.keyPrefix, o.ids),
      actions: actions.length === 0 ? undefined : new Set(actions),
      values,
    };
  };

  const cursorsOf = async (req: WatchRequest, ctx: HandlerContext): Promise<Cursor[]> => {
    const spec = o.registry.get(req.clsId);
    if (spec === undefined) {
      throw new DataPlaneError(
        "not_found",
        `collection ${JSON.stringify(req.clsId)} does not exist`,
      );
    }
    const partitions = req.partitionIds.length === 0 ? [0] : [...new Set(req.partitionIds)];
    const cursors: Cursor[] = [];
    for (const partition of partitions) {
      if (partition >= spec.partitionCount) {
        throw new DataPlaneError(
          "not_found",
          `collection ${req.clsId} has no partition ${partition} (partitions 0..${spec.partitionCount - 1})`,
        );
      }
      const shard = o.shards.get(req.clsId, partition);
      if (shard === undefined) {
        const nodes = o.replicasOf?.(req.clsId, partition) ?? [];
        throw new DataPlaneError(
          "failed_precondition",
          `this node holds no replica of ${req.clsId}/${partition}: watch a node that does${nodes.length === 0 ? "" : ` (node ${nodes.join(", node ")})`}; GET /api/cluster lists the members' addresses`,
        );
      }
      const log = shard.store.changes;
      if (log === undefined) {
        throw new DataPlaneError(
          "failed_precondition",
          "the change feed is off on this node (ODGM_CHANGEFEED=false)",
        );
      }
      const head = log.head();
      let next = req.startRevision === 0n ? head + 1n : req.startRevision;
      if (next <= head) {
        const oldest = (await log.oldest()) ?? head + 1n;
        if (next < oldest) {
          ctx.responseHeader.set(OLDEST_REVISION_HEADER, String(oldest));
          throw new DataPlaneError(
            "failed_precondition",
            `start_revision ${next} of ${req.clsId}/${partition} is compacted; the oldest available revision is ${oldest}`,
          );
        }
      }
      if (next < 1n) next = 1n;
      cursors.push({ partition, log, next });
    }
    return cursors;
  };

  /** Resolves when a cursor's log moved past it, `ms` passed, or `signal` aborted. */
  const wake = (cursors: readonly Cursor[], ms: number, signal: AbortSignal): Promise<void> =>
    new Promise((resolve) => {
      const offs: (() => void)[] = [];
      const done = (): void => {
        for (const off of offs) off();
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
      for (const c of cursors) {
        offs.push(
          c.log.subscribe((head) => {
            if (head >= c.next) done();
          }),
        );
        if (c.log.head() >= c.next) {
          done();
          return;
        }
      }
    });

  return {
    async *watch(req, ctx): AsyncGenerator<WatchResponse> {
      let cursors: Cursor[];
      let filter: Filter;
      try {
        cursors = await cursorsOf(req, ctx);
        const values = req.includeValues;
        if (values && cursors.some((c) => !c.log.values)) {
          throw new DataPlaneError(
            "failed_precondition",
            "include_values needs a node that records values (ODGM_CHANGEFEED_VALUES=true)",
          );
        }
        filter = filterOf(req, values);
      } catch (err) {
        throw toConnectError(err);
      }
      const progressMs = req.progressIntervalMs > 0 ? req.progressIntervalMs : o.progressMs;
      const stop = o.stop;
      const signal = stop === undefined ? ctx.signal : AbortSignal.any([ctx.signal, stop]);
      o.onWatchers?.(1);
      try {
        // The first messages confirm the watch: where each partition starts.
        for (const c of cursors) {
          yield create(WatchResponseSchema, {
            event: { case: "progress", value: { partitionId: c.partition, revision: c.next - 1n } },
          });
        }
        let lastSent = Date.now();
        while (!ctx.signal.aborted) {
          if (stop?.aborted) {
            throw toConnectError(
              new DataPlaneError(
                "unavailable",
                `the node is shutting down; resume from ${cursors.map((c) => `revision ${c.next} of partition ${c.partition}`).join(", ")}`,
              ),
            );
          }
          let moved = false;
          for (const c of cursors) {
            if (c.log.head() < c.next) continue;
            const page = await c.log.read(c.next, pageSize);
            const first = page[0];
            if (first === undefined || first.revision > c.next) {
              throw toConnectError(
                new DataPlaneError(
                  "failed_precondition",
                  `fell behind: revisions from ${c.next} of ${req.clsId}/${c.partition} were compacted before this watch read them; resume from the oldest available revision (${first?.revision ?? (await c.log.oldest()) ?? "none"}) and reconcile`,
                ),
              );
            }
            for (const r of page) {
              c.next = r.revision + 1n;
              const out = changeResponse(r, filter, c.partition);
              if (out !== undefined) {
                lastSent = Date.now();
                yield out;
              }
            }
            moved = true;
          }
          if (moved) continue;
          const idleFor = Date.now() - lastSent;
          if (idleFor >= progressMs) {
            for (const c of cursors) {
              yield create(WatchResponseSchema, {
                event: {
                  case: "progress",
                  value: { partitionId: c.partition, revision: c.next - 1n },
                },
              });
            }
            lastSent = Date.now();
            continue;
          }
          await wake(cursors, progressMs - idleFor, signal);
        }
      } finally {
        o.onWatchers?.(-1);
      }
    },
  };
}
