import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { create, fromBinary } from "@bufbuild/protobuf";
import {
  createEntryStore,
  createMemoryEngine,
  type EntryStore,
  type KvEngine,
} from "@oprc/entry-store";
import { openRocksEngine } from "@oprc/entry-store/rocksdb";
import {
  EventType,
  type ObjectEvent,
  ObjectEventSchema,
  TriggerPayloadSchema,
  ValDataSchema,
} from "@oprc/grpc-api/messages";
import { afterEach, describe, expect, it } from "vitest";
import {
  BASE_CURSOR,
  type ChangeSource,
  type DurableDelivery,
  type DurableDeliveryOptions,
  startDurableDelivery,
  targetCursorName,
} from "./durable-delivery.js";
import { DEFAULT_EVENT_CONFIG } from "./event-config.js";
import type { TriggerInvocation } from "./trigger-invocation.js";
import type { TriggerSink } from "./trigger-sink.js";

const v = (s: string) => create(ValDataSchema, { data: new TextEncoder().encode(s) });
/** `k` fires fn `a` on create and `a` + `b` on update. */
const EVENT: ObjectEvent = create(ObjectEventSchema, {
  dataTriggerStr: {
    k: {
      onCreate: [{ clsId: "fns", fnId: "a" }],
      onUpdate: [
        { clsId: "fns", fnId: "a" },
        { clsId: "fns", fnId: "b" },
      ],
    },
  },
});

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function openStore(engine: KvEngine = createMemoryEngine()): Promise<EntryStore> {
  const store = await createEntryStore({ engine, shard: "c/0", changeLog: { triggers: true } });
  cleanup.push(() => store.close());
  return store;
}

function logOf(store: EntryStore): ChangeSource {
  if (store.changes === undefined) throw new Error("no change log");
  return store.changes;
}

async function start(
  store: EntryStore,
  sink: TriggerSink,
  extra: Partial<DurableDeliveryOptions> = {},
): Promise<DurableDelivery> {
  const d = await startDurableDelivery({
    source: logOf(store),
    sink,
    clsId: "c",
    partitionId: 0,
    config: { ...DEFAULT_EVENT_CONFIG, triggerTimeoutMs: 1_000 },
    retry: { baseDelayMs: 5, maxDelayMs: 20 },
    saveIntervalMs: 10,
    ...extra,
  });
  cleanup.push(() => d.close());
  return d;
}

/** What a sink saw, as `fn:object:version:eventType`. */
function seen(inv: TriggerInvocation): string {
  const p = fromBinary(TriggerPayloadSchema, inv.request.payload);
  const info = p.eventInfo;
  const id = info?.sourceObjectIdStr ?? String(info?.sourceObjectId);
  return `${inv.request.fnId}:${id}:${info?.context.object_version}:${EventType[info?.eventType ?? 0]}`;
}

function recordingSink(fail?: (inv: TriggerInvocation, attempt: number) => boolean): {
  sink: TriggerSink;
  log: string[];
  attempts: Map<string, number>;
} {
  const log: string[] = [];
  const attempts = new Map<string, number>();
  return {
    log,
    attempts,
    sink: {
      async dispatch(inv) {
        const s = seen(inv);
        const n = (attempts.get(s) ?? 0) + 1;
        attempts.set(s, n);
        if (fail?.(inv, n)) throw new Error(`refused ${s} (attempt ${n})`);
        log.push(s);
      },
    },
  };
}

async function writeObjects(store: EntryStore, ids: string[], versions: number): Promise<void> {
  for (const id of ids) await store.setEventConfig(id, EVENT);
  for (let i = 0; i < versions; i++) for (const id of ids) await store.setEntry(id, "k", v(`${i}`));
}

describe("at-least-once trigger delivery from the change log", () => {
  it("delivers every data trigger of every record once, in per-object order", async () => {
    const store = await openStore();
    const { sink: recording, log } = recordingSink();
    // Each object's first delivery is slow: later versions would overtake it if one
    // object's deliveries to a target ran side by side.
    const sink: TriggerSink = {
      async dispatch(inv, options) {
        if (seen(inv).endsWith(":2:DATA_CREATE")) await sleep(50);
        return recording.dispatch(inv, options);
      },
    };
    const d = await start(store, sink);
    await writeObjects(store, ["o1", "o2", "7"], 3);
    await d.caughtUp();
    // Per object: version 2 creates k (fn a), versions 3 and 4 update it (fns a and b).
    for (const id of ["o1", "o2", "7"]) {
      expect(log.filter((s) => s.startsWith(`a:${id}:`))).toEqual([
        `a:${id}:2:DATA_CREATE`,
        `a:${id}:3:DATA_UPDATE`,
        `a:${id}:4:DATA_UPDATE`,
      ]);
      expect(log.filter((s) => s.startsWith(`b:${id}:`))).toEqual([
        `b:${id}:3:DATA_UPDATE`,
        `b:${id}:4:DATA_UPDATE`,
      ]);
    }
    expect(log).toHaveLength(15);
    expect(d.pending).toBe(0);
    expect(d.holdFrom).toBe(logOf(store).head() + 1n);
  });

  it("retries a failing delivery with backoff until it succeeds, and dead-letters one that never does", async () => {
    const store = await openStore();
    const retries: number[] = [];
    const dead: bigint[] = [];
    // fn a fails twice then succeeds; fn b always fails.
    const { sink, log, attempts } = recordingSink((inv, n) => inv.request.fnId === "b" || n <= 2);
    const d = await start(store, sink, {
      retry: { maxAttempts: 4, baseDelayMs: 5, maxDelayMs: 20 },
      hooks: {
        onTriggerRetry: (_inv, _attempt, _err, delay) => {
          retries.push(delay);
        },
        onTriggerDeadLetter: (_inv, rev) => dead.push(rev),
      },
    });
    await writeObjects(store, ["o"], 2);
    await d.caughtUp();
    expect(log).toEqual(["a:o:2:DATA_CREATE", "a:o:3:DATA_UPDATE"]);
    expect(attempts.get("a:o:2:DATA_CREATE")).toBe(3);
    expect(attempts.get("b:o:3:DATA_UPDATE")).toBe(4);
    expect(d.deadLetters).toBe(1);
    expect(dead).toEqual([3n]);
    // 2 + 2 retries of fn a, 3 of fn b; delays within the backoff bounds.
    expect(retries).toHaveLength(7);
    for (const ms of retries) expect(ms).toBeGreaterThanOrEqual(2);
    for (const ms of retries) expect(ms).toBeLessThanOrEqual(20);
  });

  it("times out a hung attempt and retries it", async () => {
    const store = await openStore();
    let calls = 0;
    const outcomes: string[] = [];
    const d = await start(
      store,
      {
        dispatch: (_inv, { signal }) => {
          calls++;
          if (calls > 1) return undefined;
          // Hangs until aborted by the timeout.
          return new Promise((_, reject) =>
            signal.addEventListener("abort", () => reject(signal.reason)),
          );
        },
      },
      {
        config: { ...DEFAULT_EVENT_CONFIG, triggerTimeoutMs: 30 },
        hooks: { onTriggerSettled: (_inv, outcome) => outcomes.push(outcome) },
      },
    );
    await store.setEventConfig("o", EVENT);
    await store.setEntry("o", "k", v("x"));
    await d.caughtUp();
    expect(outcomes).toEqual(["timeout", "ok"]);
  });

  it("a hung target delays only itself, and catches up from the log once it recovers", async () => {
    const store = await openStore();
    let release: (() => void) | undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const got: string[] = [];
    const sink: TriggerSink = {
      async dispatch(inv) {
        if (inv.request.fnId === "b") await gate;
        got.push(seen(inv));
      },
    };
    // Lane bound 3: fn b's lane fills at once and must read the log on its own later.
    const d = await start(store, sink, {
      laneBound: 3,
      perTargetConcurrency: 2,
      config: { ...DEFAULT_EVENT_CONFIG, triggerTimeoutMs: 60_000 },
    });
    const ids = Array.from({ length: 10 }, (_, i) => `o${i}`);
    await writeObjects(store, ids, 5);
    // fn a (50 deliveries) finishes while fn b is stuck.
    for (let i = 0; i < 200 && got.filter((s) => s.startsWith("a:")).length < 50; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(got.filter((s) => s.startsWith("a:"))).toHaveLength(50);
    expect(got.filter((s) => s.startsWith("b:"))).toHaveLength(0);
    // The log must keep what fn b has not had.
    expect(d.holdFrom).toBeLessThan(logOf(store).head());
    release?.();
    await d.caughtUp();
    for (const id of ids) {
      expect(got.filter((s) => s.startsWith(`b:${id}:`))).toEqual(
        [3, 4, 5, 6].map((ver) => `b:${id}:${ver}:DATA_UPDATE`),
      );
    }
    expect(got.filter((s) => s.startsWith("b:"))).toHaveLength(40);
  });

  it("resumes after a restart: what was unfinished is delivered, what was finished is not repeated (RocksDB)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-delivery-"));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    let engine = await openRocksEngine({ location: dir });
    let store = await createEntryStore({ engine, shard: "c/0", changeLog: { triggers: true } });
    // fn b hangs in the first life: its deliveries stay unfinished.
    const first: string[] = [];
    const d1 = await startDurableDelivery({
      source: logOf(store),
      sink: {
        dispatch: (inv, { signal }) => {
          if (inv.request.fnId === "b")
            return new Promise((_, reject) =>
              signal.addEventListener("abort", () => reject(signal.reason)),
            );
          first.push(seen(inv));
          return undefined;
        },
      },
      clsId: "c",
      partitionId: 0,
      config: { ...DEFAULT_EVENT_CONFIG, triggerTimeoutMs: 60_000 },
    });
    await writeObjects(store, ["x", "y"], 3);
    for (let i = 0; i < 200 && first.length < 6; i++) await new Promise((r) => setTimeout(r, 10));
    expect(first).toHaveLength(6);
    await d1.close();
    const cursors = await logOf(store).cursors();
    expect(cursors.get(targetCursorName("fns", "a"))).toBe(logOf(store).head());
    expect(cursors.get(BASE_CURSOR)).toBeLessThan(logOf(store).head());
    await store.close();
    await engine.close();

    engine = await openRocksEngine({ location: dir });
    cleanup.push(() => engine.close());
    store = await createEntryStore({ engine, shard: "c/0", changeLog: { triggers: true } });
    cleanup.push(() => store.close());
    const { sink, log } = recordingSink();
    const d2 = await start(store, sink);
    await d2.caughtUp();
    // Only fn b's four deliveries, none of fn a's again.
    expect([...log].sort()).toEqual(
      ["x", "y"].flatMap((id) => [3, 4].map((ver) => `b:${id}:${ver}:DATA_UPDATE`)).sort(),
    );
    // And new writes flow on.
    await store.setEntry("x", "k", v("later"));
    await d2.caughtUp();
    expect(log.slice(-2).sort()).toEqual(["a:x:5:DATA_UPDATE", "b:x:5:DATA_UPDATE"]);
  });

  it("starts at the head the first time, without replaying older changes", async () => {
    const store = await openStore();
    await writeObjects(store, ["old"], 2);
    const { sink, log } = recordingSink();
    const d = await start(store, sink);
    await store.setEventConfig("new", EVENT);
    await store.setEntry("new", "k", v("1"));
    await d.caughtUp();
    expect(log).toEqual(["a:new:2:DATA_CREATE"]);
  });

  it("reports records compacted away before they were read", async () => {
    const store = await openStore();
    const { sink, log } = recordingSink();
    const d1 = await start(store, sink);
    await d1.close();
    await writeObjects(store, ["o"], 3);
    // The stored base cursor is 0; revisions 1–3 go before the delivery starts again.
    await store.changes?.compact({ maxRecords: 1, maxAgeMs: 1e12 });
    const missing: [bigint, bigint][] = [];
    const d2 = await start(store, sink, {
      hooks: { onRecordsMissing: (from, to) => missing.push([from, to]) },
    });
    await d2.caughtUp();
    expect(missing).toEqual([[1n, 3n]]);
    expect(log).toEqual(["a:o:4:DATA_UPDATE", "b:o:4:DATA_UPDATE"]);
  });
});
