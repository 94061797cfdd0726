import type { KvEngine } from "@oprc/entry-store";
import { BackfillError } from "./backfill-error.js";
import type {
  BatchOutcome,
  Checkpoint,
  ConversionTarget,
  ObjectProblem,
} from "./conversion-target.js";
import { openOfflineTarget } from "./offline-target.js";
import { openOnlineTarget } from "./online-target.js";
import { createThrottle } from "./throttle.js";

/** Options of {@link runBackfill}. Exactly one of `dataDir` and `endpoint` is required. */
export interface BackfillOptions {
  /** What to convert. Only `"entries"` (legacy blobs → per-entry records) exists. Default `"entries"`. */
  mode?: "entries";
  /** The collection whose partition is converted. */
  collection: string;
  /** The partition (shard `<collection>/<partition>`). */
  partition: number;
  /** Offline: the stopped node's data directory (`ODGM_DATA_DIR`). */
  dataDir?: string | undefined;
  /** Online: the running node's gRPC URL (h2c), e.g. `http://127.0.0.1:8080`. */
  endpoint?: string | undefined;
  /**
   * Conversions in flight at once. Default 32. Offline, parallel conversions share one
   * RocksDB write batch (group commit); online, each is a `ConvertLegacyObjects` call.
   */
  parallel?: number | undefined;
  /** Count and report what would be converted; change nothing. Default false. */
  dryRun?: boolean | undefined;
  /**
   * Compare every object converted by this run with its blob read just before converting
   * it, then check that no blob remains and that every object of the shard is readable
   * with entries matching its metadata. Default false.
   */
  verify?: boolean | undefined;
  /** Objects per second at most; 0/undefined: unlimited. Keeps a live node responsive. */
  throttle?: number | undefined;
  /** Online: ids per `ConvertLegacyObjects` call. Default 64. */
  batchSize?: number | undefined;
  /**
   * Online: a checkpoint file (JSON `BackfillCheckpointRecord`). Default none: a rerun
   * resumes by listing the remaining blobs (converted ones are gone). Offline runs keep
   * their checkpoint in the database and reject this option.
   */
  checkpoint?: string | undefined;
  /** Persist the checkpoint at least this often (ms). Default 1000. */
  checkpointIntervalMs?: number | undefined;
  /** Stops the run: in-flight conversions finish, the checkpoint is saved, the summary says `interrupted`. */
  signal?: AbortSignal | undefined;
  /** Progress callback, called after every batch and at every phase change. */
  onProgress?: ((progress: BackfillProgress) => void) | undefined;
  /** Offline: an open engine to use instead of opening `dataDir` (embedding, tests). Left open. */
  engine?: KvEngine | undefined;
  /** Offline: sync the WAL for every object, not only at checkpoints. Default false. */
  syncEachObject?: boolean | undefined;
  /** Offline: clock for record timestamps (ms since the epoch). Default `Date.now`. */
  now?: (() => number) | undefined;
}

/** What a run is doing right now. */
export interface BackfillProgress {
  /** `count` (finding blobs), `convert`, `verify` (consistency check) or `done`. */
  readonly phase: "count" | "convert" | "verify" | "done";
  /** Objects handled so far in this phase (converted + skipped + failed). */
  readonly done: number;
  /** Legacy blobs found at the start. */
  readonly total: number;
  readonly converted: number;
  readonly skipped: number;
  readonly failed: number;
  readonly entries: number;
}

/** The result of a run; the JSON summary of the command line is this object. */
export interface BackfillSummary {
  /** `offline` (data directory) or `online` (endpoint). */
  readonly target: "offline" | "online";
  /** Data directory or endpoint. */
  readonly location: string;
  readonly collection: string;
  readonly partition: number;
  readonly dryRun: boolean;
  readonly verify: boolean;
  /** True when everything asked for was done: no failure, no blob left, no mismatch, not interrupted. */
  readonly ok: boolean;
  /** True when the run was stopped by its signal. */
  readonly interrupted: boolean;
  /** Legacy blobs found at the start. */
  readonly pendingAtStart: number;
  /** Dry run: entries the pending blobs hold. Otherwise entries written by this run. */
  readonly entries: number;
  /** Blobs converted by this run. */
  readonly converted: number;
  /** Ids skipped because their blob was already gone (converted by the service or another run). */
  readonly skipped: number;
  /** Objects whose conversion failed (their blob is kept). */
  readonly failed: number;
  /** Legacy blobs left when the run ended (counted afresh; a dry run reports `pendingAtStart`). */
  readonly remaining: number;
  /** The checkpoint id the run resumed after, in decimal, if any. */
  readonly resumedAfter: string | undefined;
  /** Objects converted over every run recorded in the checkpoint (this run included). */
  readonly convertedAllRuns: number;
  /** `--verify`: objects compared with their blob. */
  readonly verified: number;
  /** `--verify`: objects not compared because a client modified them after conversion (online). */
  readonly modifiedConcurrently: number;
  /** `--verify`: objects checked by the consistency scan. */
  readonly consistencyChecked: number;
  /** `--verify`: objects that differ from their blob or are inconsistent (first 100 listed in `problems`). */
  readonly mismatches: number;
  /** First 100 failures and mismatches. */
  readonly problems: readonly (ObjectProblem & { kind: "failed" | "mismatch" | "inconsistent" })[];
  readonly elapsedMs: number;
  /** Objects converted (or, dry run, counted) per second. */
  readonly objectsPerSecond: number;
  readonly entriesPerSecond: number;
  /** The seed's backfill metrics, as this run observed them. */
  readonly metrics: {
    /** Objects converted (over every run the checkpoint records). */
    readonly odgm_objects_converted_total: number;
    /** Legacy blobs not yet converted. */
    readonly odgm_objects_pending_conversion_total: number;
  };
}

const MAX_PROBLEMS = 100;

function positiveInt(
  value: number | undefined,
  fallback: number,
  what: string,
  max: number,
): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new BackfillError(
      "invalid_argument",
      `${what} must be an integer from 1 to ${max}, got ${value}`,
    );
  }
  return value;
}

async function openTarget(options: BackfillOptions, batchSize: number): Promise<ConversionTarget> {
  const offline = options.dataDir !== undefined || options.engine !== undefined;
  if (offline === (options.endpoint !== undefined)) {
    throw new BackfillError(
      "invalid_argument",
      "give exactly one of dataDir (--data-dir, offline) and endpoint (--endpoint, online)",
    );
  }
  if (offline) {
    if (options.checkpoint !== undefined) {
      throw new BackfillError(
        "invalid_argument",
        "--checkpoint is for online runs; offline runs keep their checkpoint in the database",
      );
    }
    return openOfflineTarget({
      dataDir: options.dataDir ?? "(injected engine)",
      collection: options.collection,
      partition: options.partition,
      dryRun: options.dryRun === true,
      engine: options.engine,
      syncEachObject: options.syncEachObject,
      now: options.now,
    });
  }
  return openOnlineTarget({
    endpoint: options.endpoint as string,
    collection: options.collection,
    partition: options.partition,
    batchSize,
    checkpointFile: options.checkpoint,
  });
}

/** Counts blobs (keys only), optionally in batches handed to `each`. */
async function countIds(
  target: ConversionTarget,
  signal: AbortSignal | undefined,
  each?: (ids: bigint[]) => Promise<void>,
): Promise<number> {
  let n = 0;
  let batch: bigint[] = [];
  for await (const id of target.listIds()) {
    n++;
    if (each !== undefined) {
      batch.push(id);
      if (batch.length >= 256) {
        signal?.throwIfAborted();
        await each(batch);
        batch = [];
      }
    }
  }
  if (each !== undefined && batch.length > 0) await each(batch);
  return n;
}

/**
 * Converts the legacy whole-object blobs of one shard into per-entry records (spec §10),
 * offline against a stopped node's database or online through a running node.
 *
 * Every object converts in one atomic write (entries, metadata with the version carried
 * over, blob removal). Progress is checkpointed (offline in the database's system
 * keyspace, online optionally in a file); a rerun resumes, and a rerun after completion
 * writes nothing. Resolves with a summary; `summary.ok` is true only when no blob is left,
 * nothing failed and (with `verify`) nothing mismatched. Rejects with a {@link BackfillError}
 * when the run cannot start (bad options, locked database, missing shard, unreachable node)
 * or the target fails as a whole.
 *
 * @example
 * ```ts
 * import { runBackfill } from "@oprc/backfill";
 * const summary = await runBackfill({ collection: "orders", partition: 0, dataDir: "./data" });
 * console.log(`${summary.converted} converted, ${summary.remaining} remaining`);
 * ```
 */
export async function runBackfill(options: BackfillOptions): Promise<BackfillSummary> {
  if ((options.mode ?? "entries") !== "entries") {
    throw new BackfillError(
      "invalid_argument",
      `unknown mode ${String(options.mode)} (only "entries")`,
    );
  }
  if (typeof options.collection !== "string" || options.collection.length === 0) {
    throw new BackfillError("invalid_argument", "collection is required");
  }
  if (
    !Number.isInteger(options.partition) ||
    options.partition < 0 ||
    options.partition > 0xffff_ffff
  ) {
    throw new BackfillError(
      "invalid_argument",
      `partition must be a u32, got ${options.partition}`,
    );
  }
  const parallel = positiveInt(options.parallel, 32, "parallel", 1024);
  const batchSize = positiveInt(options.batchSize, 64, "batchSize", 10_000);
  const interval = positiveInt(
    options.checkpointIntervalMs,
    1000,
    "checkpointIntervalMs",
    3_600_000,
  );
  if (
    options.throttle !== undefined &&
    !(options.throttle >= 0 && Number.isFinite(options.throttle))
  ) {
    throw new BackfillError(
      "invalid_argument",
      `throttle must be a non-negative number, got ${options.throttle}`,
    );
  }
  const dryRun = options.dryRun === true;
  const verify = options.verify === true;
  if (dryRun && verify) {
    throw new BackfillError("invalid_argument", "dryRun and verify exclude each other");
  }
  const signal = options.signal;
  const started = performance.now();
  const target = await openTarget(options, batchSize);
  try {
    return await run(target, options, { parallel, interval, dryRun, verify, signal, started });
  } finally {
    await target.close();
  }
}

interface RunSettings {
  parallel: number;
  interval: number;
  dryRun: boolean;
  verify: boolean;
  signal: AbortSignal | undefined;
  started: number;
}

async function run(
  target: ConversionTarget,
  options: BackfillOptions,
  s: RunSettings,
): Promise<BackfillSummary> {
  const { signal } = s;
  const totals = { converted: 0, skipped: 0, failed: 0, entries: 0, verified: 0, modified: 0 };
  const problems: BackfillSummary["problems"][number][] = [];
  let mismatches = 0;
  let total = 0;
  let phase: BackfillProgress["phase"] = "count";
  const progress = (): void =>
    options.onProgress?.({
      phase,
      done: phase === "count" ? total : totals.converted + totals.skipped + totals.failed,
      total,
      converted: totals.converted,
      skipped: totals.skipped,
      failed: totals.failed,
      entries: totals.entries,
    });
  const note = (kind: "failed" | "mismatch" | "inconsistent", p: ObjectProblem): void => {
    if (problems.length < MAX_PROBLEMS) problems.push({ ...p, kind });
  };
  let interrupted = false;

  const summary = (remaining: number, checkpoint: Checkpoint | undefined): BackfillSummary => {
    const elapsedMs = performance.now() - s.started;
    const perSecond = (n: number): number =>
      elapsedMs > 0 ? Math.round((n * 1000) / elapsedMs) : 0;
    const convertedAllRuns = Number(checkpoint?.converted ?? BigInt(totals.converted));
    return {
      target: target.kind,
      location: target.location,
      collection: options.collection,
      partition: options.partition,
      dryRun: s.dryRun,
      verify: s.verify,
      ok: !interrupted && totals.failed === 0 && mismatches === 0 && (s.dryRun || remaining === 0),
      interrupted,
      pendingAtStart: total,
      entries: totals.entries,
      converted: totals.converted,
      skipped: totals.skipped,
      failed: totals.failed,
      remaining,
      resumedAfter: undefined,
      convertedAllRuns,
      verified: totals.verified,
      modifiedConcurrently: totals.modified,
      consistencyChecked: 0,
      mismatches,
      problems,
      elapsedMs: Math.round(elapsedMs),
      objectsPerSecond: perSecond(s.dryRun ? total : totals.converted),
      entriesPerSecond: perSecond(totals.entries),
      metrics: {
        odgm_objects_converted_total: convertedAllRuns,
        odgm_objects_pending_conversion_total: remaining,
      },
    };
  };

  progress();
  if (s.dryRun) {
    try {
      total = await countIds(target, signal, async (ids) => {
        totals.entries += await target.countEntries(ids);
        total += ids.length;
        progress();
      });
    } catch (err) {
      if (!signal?.aborted) throw err;
      interrupted = true;
    }
    phase = "done";
    progress();
    return summary(total, undefined);
  }

  const stored = await target.loadCheckpoint();
  // A complete checkpoint is history: start from the beginning (normally nothing is left).
  const resumeAfter = stored?.complete === true ? undefined : stored?.lastId;
  total = await countIds(target, signal);
  phase = "convert";
  progress();

  const base = {
    converted: stored?.converted ?? 0n,
    skipped: stored?.skipped ?? 0n,
    failed: stored?.failed ?? 0n,
  };
  let watermark = resumeAfter;
  let lastSaved = performance.now();
  const checkpointNow = (complete: boolean): Checkpoint => ({
    lastId: watermark,
    converted: base.converted + BigInt(totals.converted),
    skipped: base.skipped + BigInt(totals.skipped),
    failed: base.failed + BigInt(totals.failed),
    complete,
    updatedAtMs: BigInt(Date.now()),
  });
  let saving: Promise<void> = Promise.resolve();
  const save = (complete: boolean): Promise<void> => {
    const cp = checkpointNow(complete);
    lastSaved = performance.now();
    saving = saving.then(() => target.saveCheckpoint(cp));
    return saving;
  };

  const throttle = createThrottle({ perSecond: options.throttle });
  const failedIds = new Set<bigint>();
  let fatal: unknown;

  /** Converts every id `source` yields, `parallel` batches at a time, advancing the watermark. */
  const pass = async (source: AsyncIterable<bigint>, advance: boolean): Promise<void> => {
    // Batches in dispatch order; the watermark moves past a batch once it and every
    // batch before it finished, so the checkpoint never skips an unfinished id.
    const order: { last: bigint; done: boolean }[] = [];
    const running = new Set<Promise<void>>();
    const settle = (): void => {
      while (order.length > 0 && order[0]?.done === true) {
        const head = order.shift();
        if (advance && head !== undefined) watermark = head.last;
      }
    };
    const dispatch = (ids: bigint[]): void => {
      const slot = { last: ids[ids.length - 1] as bigint, done: false };
      order.push(slot);
      const p = (async () => {
        try {
          const r: BatchOutcome = await target.convert(ids, s.verify);
          totals.converted += r.converted;
          totals.skipped += r.skipped;
          totals.entries += r.entries;
          totals.verified += r.verified;
          totals.modified += r.modifiedConcurrently;
          totals.failed += r.failures.length;
          for (const f of r.failures) {
            failedIds.add(BigInt(f.id));
            note("failed", f);
          }
          mismatches += r.mismatches.length;
          for (const m of r.mismatches) note("mismatch", m);
          slot.done = true;
          settle();
          progress();
          if (performance.now() - lastSaved >= s.interval) await save(false);
        } catch (err) {
          fatal ??= err;
        }
      })();
      running.add(p);
      void p.finally(() => running.delete(p));
    };
    let batch: bigint[] = [];
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      await throttle.acquire(batch.length, signal).catch(() => {});
      if (signal?.aborted || fatal !== undefined) return;
      dispatch(batch);
      batch = [];
      while (running.size >= s.parallel) await Promise.race(running);
    };
    for await (const id of source) {
      if (signal?.aborted || fatal !== undefined) break;
      if (failedIds.has(id)) continue;
      batch.push(id);
      if (batch.length >= target.batchSize) await flush();
    }
    if (!signal?.aborted && fatal === undefined) await flush();
    await Promise.all(running);
  };

  try {
    await pass(target.listIds(resumeAfter), true);
    // Ids at or below the checkpoint: blobs an earlier run failed on, or written since.
    if (resumeAfter !== undefined && !signal?.aborted && fatal === undefined) {
      await pass(below(target.listIds(), resumeAfter), false);
    }
  } catch (err) {
    fatal ??= err;
  }
  interrupted = signal?.aborted === true;
  const wrote = totals.converted + totals.skipped + totals.failed > 0;
  if (fatal !== undefined) {
    if (wrote) await save(false).catch(() => {});
    throw BackfillError.from(fatal);
  }

  let remaining: number;
  let consistencyChecked = 0;
  try {
    remaining = await countIds(target, undefined);
    if (s.verify && !interrupted) {
      phase = "verify";
      progress();
      const report = await target.checkConsistency(signal);
      consistencyChecked = report.objects;
      mismatches += report.problems.length;
      for (const p of report.problems) note("inconsistent", p);
    }
  } catch (err) {
    if (wrote) await save(false).catch(() => {});
    throw BackfillError.from(err);
  }
  interrupted = signal?.aborted === true;
  const complete = !interrupted && remaining === 0 && totals.failed === 0;
  // A rerun with nothing to do leaves the database untouched (checkpoint included).
  if (wrote || (stored !== undefined && stored.complete !== complete)) {
    if (complete) watermark = undefined;
    await save(complete);
  }
  phase = "done";
  progress();
  const cp = checkpointNow(complete);
  return {
    ...summary(remaining, cp),
    resumedAfter: resumeAfter?.toString(),
    consistencyChecked,
  };
}

async function* below(source: AsyncIterable<bigint>, limit: bigint): AsyncIterable<bigint> {
  for await (const id of source) {
    if (id > limit) return;
    yield id;
  }
}
