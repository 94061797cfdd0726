import { EventType } from "@oprc/grpc-api/messages";
import { describe, expect, it, vi } from "vitest";
import { fnTarget, mutation, objectEvent, payloadOf, recordingSink } from "../test/fixtures.js";
import type { DispatcherEvent } from "./dispatcher-event.js";
import { createEventDispatcher, type EnqueueResult } from "./event-dispatcher.js";
import { isEventV2Error } from "./event-v2-error.js";
import type { MutationContext } from "./mutation-context.js";
import { TRIGGER_DEPTH_OPTION } from "./trigger-invocation.js";
import type { TriggerSink } from "./trigger-sink.js";

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

function drainSubscription(sub: {
  tryNext(): { event: DispatcherEvent; lost: number } | undefined;
}) {
  const out: { event: DispatcherEvent; lost: number }[] = [];
  for (let item = sub.tryNext(); item !== undefined; item = sub.tryNext()) out.push(item);
  return out;
}

describe("EventDispatcher ordering", () => {
  it("assigns contiguous sequence numbers, keeps FIFO and per-object version order under concurrent producers", async () => {
    const d = createEventDispatcher({ queueBound: 16 });
    const sub = d.subscribe({ bufferSize: 100_000 });
    const results: EnqueueResult[] = [];
    let produced = 0;
    const producer = async (p: number) => {
      for (let v = 1; v <= 300; v++) {
        const ctx = mutation([[`k${v % 5}`, v === 1 ? "create" : "update"]], {
          objectId: `obj-${p}`,
          versionBefore: BigInt(v - 1),
          versionAfter: BigInt(v),
        });
        produced++;
        results.push(d.tryEnqueue(ctx));
        if ((v * (p + 3)) % 7 === 0) await tick();
        else if (v % 3 === 0) await Promise.resolve();
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, p) => producer(p)));
    await d.idle();

    const accepted = results.filter((r) => r.accepted);
    const dropped = results.filter((r) => !r.accepted);
    expect(accepted.length + dropped.length).toBe(produced);
    expect(dropped.length).toBe(d.metrics().queueDrops);
    expect(accepted.length).toBe(d.metrics().accepted);
    expect(dropped.length).toBeGreaterThan(0); // the bound of 16 was hit
    expect(dropped.every((r) => !r.accepted && r.reason === "queue_full")).toBe(true);
    expect(accepted.map((r) => (r.accepted ? r.seq : -1))).toEqual(
      Array.from({ length: accepted.length }, (_, i) => i + 1),
    );

    const seen = drainSubscription(sub).map((i) => i.event);
    expect(seen.map((e) => e.seq)).toEqual(accepted.map((r) => (r.accepted ? r.seq : -1)));
    const lastVersion = new Map<string, bigint>();
    for (const e of seen) {
      if (e.kind !== "mutation") throw new Error("unexpected event kind");
      const prev = lastVersion.get(e.ctx.objectId) ?? 0n;
      expect(e.ctx.versionAfter).toBeGreaterThan(prev);
      lastVersion.set(e.ctx.objectId, e.ctx.versionAfter);
    }
    await d.close();
  });
});

describe("EventDispatcher backpressure", () => {
  it("a full queue drops and counts the new event; tryEnqueue is synchronous", () => {
    const drops: number[] = [];
    const d = createEventDispatcher({ queueBound: 4, hooks: { onQueueDrop: () => drops.push(1) } });
    const results = Array.from({ length: 10 }, (_, i) =>
      d.tryEnqueue(mutation([[`k${i}`, "create"]])),
    );
    expect(results.slice(0, 4).map((r) => r.accepted && r.seq)).toEqual([1, 2, 3, 4]);
    expect(results.slice(4).every((r) => !r.accepted && r.reason === "queue_full")).toBe(true);
    expect(d.metrics()).toMatchObject({ accepted: 4, queueDrops: 6, queueLength: 4 });
    expect(d.queueLength).toBe(4);
    expect(drops).toHaveLength(6);
    return d.close();
  });

  it("a stuck sink never blocks tryEnqueue or the consumer; a non-draining close aborts it and drops what waits", async () => {
    let entered: () => void = () => {};
    const inSink = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const signals: AbortSignal[] = [];
    const sink: TriggerSink = {
      dispatch(_inv, { signal }) {
        signals.push(signal);
        entered();
        return new Promise(() => {}); // never settles, ignores the signal
      },
    };
    const config = objectEvent({ dataStr: { a: { onCreate: [fnTarget("slow")] } } });
    const d = createEventDispatcher({ queueBound: 4, sink });
    d.tryEnqueue(mutation([["a", "create"]], { eventConfig: config }));
    await inSink; // the first dispatch is stuck in the sink

    // The consumer is not: every event is taken (one object, so its triggers wait in order
    // in the target's lane behind the stuck one).
    let accepted = 0;
    for (let i = 0; i < 1000; i++) {
      if (d.tryEnqueue(mutation([["a", "create"]], { eventConfig: config })).accepted) accepted++;
      if (i % 3 === 0) await tick();
    }
    await tick();
    expect(accepted).toBeGreaterThan(4);
    expect(signals).toHaveLength(1);

    const report = await d.close({ drain: false });
    expect(report.discarded + accepted).toBeGreaterThanOrEqual(accepted);
    expect(signals[0]?.aborted).toBe(true);
    expect(isEventV2Error(signals[0]?.reason)).toBe(true);
    // The stuck one and every one waiting behind it failed; nothing was delivered.
    expect(d.metrics().triggerFailures + d.metrics().queueDrops + report.discarded).toBe(1001);
    expect(d.metrics().triggersDispatched).toBe(0);
    expect(d.tryEnqueue(mutation([["a", "create"]]))).toEqual({
      accepted: false,
      reason: "closed",
    });
  });
});

describe("EventDispatcher subscribers", () => {
  it("a slow subscriber loses its oldest events and is told how many", async () => {
    const lostHook: number[] = [];
    const d = createEventDispatcher({ hooks: { onSubscriberLost: (n) => lostHook.push(n) } });
    const slow = d.subscribe({ bufferSize: 3 });
    const fast = d.subscribe();
    for (let i = 1; i <= 10; i++) d.tryEnqueue(mutation([[`k${i}`, "create"]]));
    await d.idle();
    const items = drainSubscription(slow);
    expect(items.map((i) => [i.event.seq, i.lost])).toEqual([
      [8, 7],
      [9, 0],
      [10, 0],
    ]);
    expect(slow.lost).toBe(7);
    expect(drainSubscription(fast).map((i) => i.event.seq)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
    ]);
    expect(d.metrics().subscriberLost).toBe(7);
    expect(lostHook).toHaveLength(7);
    await d.close();
  });

  it("delivers through next() and async iteration, and ends on close", async () => {
    const d = createEventDispatcher();
    const sub = d.subscribe();
    const pending = sub.next();
    d.tryEnqueue(mutation([["x", "create"]]));
    const first = await pending;
    expect(first?.event.kind).toBe("mutation");
    d.tryEnqueue(mutation([["y", "update"]]));
    d.tryEnqueue(mutation([["z", "delete"]]));
    const collected: string[] = [];
    const reader = (async () => {
      for await (const { event } of sub) {
        if (event.kind === "mutation") collected.push(event.ctx.changed[0]?.key ?? "");
      }
    })();
    const report = await d.close();
    await reader;
    expect(collected).toEqual(["y", "z"]);
    expect(report.discarded).toBe(0);
    expect(sub.closed).toBe(true);
    expect(await sub.next()).toBeUndefined();
    expect(() => d.subscribe()).toThrow(/^\[closed\]/);
  });

  it("a closed subscription stops receiving", async () => {
    const d = createEventDispatcher();
    const sub = d.subscribe();
    sub.close();
    d.tryEnqueue(mutation([["x", "create"]]));
    await d.idle();
    expect(sub.tryNext()).toBeUndefined();
    await d.close();
  });
});

describe("EventDispatcher shutdown", () => {
  it("a draining close processes everything queued and every trigger", async () => {
    const { sink, calls } = recordingSink();
    const config = objectEvent({ dataStr: { a: { onUpdate: [fnTarget("f")] } } });
    const d = createEventDispatcher({ sink });
    for (let i = 0; i < 5; i++) d.tryEnqueue(mutation([["a", "update"]], { eventConfig: config }));
    const report = await d.close();
    expect(report).toEqual({ drained: 5, discarded: 0, queueDrops: 0 });
    expect(calls).toHaveLength(5);
    expect(await d.close()).toBe(report); // idempotent
  });

  it("an aborted drain discards the rest", async () => {
    const release: (() => void)[] = [];
    const sink: TriggerSink = {
      dispatch: () => new Promise<void>((resolve) => release.push(resolve)),
    };
    const config = objectEvent({ dataStr: { a: { onUpdate: [fnTarget("f")] } } });
    const d = createEventDispatcher({ sink });
    for (let i = 0; i < 3; i++) d.tryEnqueue(mutation([["a", "update"]], { eventConfig: config }));
    await tick();
    const ac = new AbortController();
    const closing = d.close({ signal: ac.signal });
    ac.abort();
    const report = await closing;
    // The consumer fired all three at once: one in flight, two waiting in the lane (one
    // object, one at a time); aborting fails all three.
    expect(report.discarded).toBe(0);
    expect(d.metrics().triggerFailures).toBe(3);
    expect(d.metrics().triggersDispatched).toBe(0);
  });
});

describe("EventDispatcher trigger lanes", () => {
  it("a hung target delays only its own deliveries", async () => {
    const delivered: string[] = [];
    const sink: TriggerSink = {
      dispatch(inv) {
        if (inv.request.fnId === "hung") return new Promise(() => {});
        delivered.push(inv.request.fnId);
        return Promise.resolve();
      },
    };
    const d = createEventDispatcher({ sink, triggerTimeoutMs: 60_000 });
    const config = objectEvent({
      dataStr: { a: { onUpdate: [fnTarget("hung"), fnTarget("fast")] } },
    });
    for (let i = 0; i < 20; i++) {
      d.tryEnqueue(mutation([["a", "update"]], { eventConfig: config, objectId: `o${i % 4}` }));
    }
    for (let i = 0; i < 50 && delivered.length < 20; i++) await tick();
    // Every "fast" delivery arrived while four "hung" ones sit in flight.
    expect(delivered).toEqual(Array.from({ length: 20 }, () => "fast"));
    await d.close({ drain: false });
  });

  it("keeps one object's deliveries to a target in order while objects run in parallel", async () => {
    const log: string[] = [];
    const release = new Map<string, () => void>();
    const sink: TriggerSink = {
      dispatch(inv) {
        const payload = payloadOf(inv);
        const name = `${inv.request.clsId}:${String(payload.eventInfo?.sourceObjectIdStr ?? "")}:${String(payload.eventInfo?.timestamp ?? "")}`;
        log.push(`start ${name}`);
        return new Promise<void>((resolve) =>
          release.set(name, () => {
            log.push(`end ${name}`);
            resolve();
          }),
        );
      },
    };
    let t = 0;
    const d = createEventDispatcher({ sink, now: () => ++t });
    const config = objectEvent({ dataStr: { a: { onUpdate: [fnTarget("f")] } } });
    for (const id of ["x", "y", "x", "y"]) {
      d.tryEnqueue(mutation([["a", "update"]], { eventConfig: config, objectId: id }));
    }
    for (let i = 0; i < 10; i++) await tick();
    // x#1 and y#2 run at once; x#3 and y#4 wait for their object's previous delivery.
    expect([...release.keys()].length).toBe(2);
    for (const name of [...release.keys()]) release.get(name)?.();
    for (let i = 0; i < 10; i++) await tick();
    expect([...release.keys()].length).toBe(4);
    for (const name of [...release.keys()].slice(2)) release.get(name)?.();
    await d.idle();
    const starts = log.filter((l) => l.startsWith("start"));
    const xs = starts.filter((l) => l.includes(":x:"));
    expect(xs).toHaveLength(2);
    expect(log.indexOf(`end ${xs[0]?.slice(6)}`)).toBeLessThan(log.indexOf(xs[1] as string));
    await d.close();
  });
});

describe("EventDispatcher triggers", () => {
  it("fires matching triggers with the encoded payload and counts emitted events per action", async () => {
    const { sink, calls } = recordingSink();
    const emitted: [string, number][] = [];
    const d = createEventDispatcher({
      sink,
      now: () => 1234,
      hooks: { onEmitted: (action, n) => emitted.push([action, n]) },
    });
    const config = objectEvent({
      data: { 42: { onCreate: [fnTarget("num")] } },
      dataStr: { "042": { onCreate: [fnTarget("str")] } },
    });
    d.tryEnqueue(
      mutation(
        [
          ["42", "create"],
          ["042", "create"],
          ["x", "update"],
          ["y", "delete"],
        ],
        { eventConfig: config },
      ),
    );
    await d.idle();
    expect(calls.map((c) => c.request.fnId)).toEqual(["num", "str"]);
    const p0 = payloadOf(calls[0] as never).eventInfo;
    const p1 = payloadOf(calls[1] as never).eventInfo;
    expect([p0?.key, p0?.keyStr, p0?.timestamp]).toEqual([42, undefined, 1234n]);
    expect([p1?.key, p1?.keyStr, p1?.context.key_str]).toEqual([undefined, "042", "042"]);
    expect(calls[0]?.request.options[TRIGGER_DEPTH_OPTION]).toBe("1");
    expect(d.metrics()).toMatchObject({
      emittedTotal: 4,
      emittedCreate: 2,
      emittedUpdate: 1,
      emittedDelete: 1,
      triggersDispatched: 2,
      triggerFailures: 0,
    });
    expect(emitted).toEqual([
      ["create", 2],
      ["update", 1],
      ["delete", 1],
    ]);
    await d.close();
  });

  it("encodes JSON payloads when configured", async () => {
    const { sink, calls } = recordingSink();
    const d = createEventDispatcher({ sink, payloadFormat: "json" });
    const config = objectEvent({ dataStr: { a: { onCreate: [fnTarget("f")] } } });
    d.tryEnqueue(mutation([["a", "create"]], { eventConfig: config }));
    await d.idle();
    const json = JSON.parse(new TextDecoder().decode(calls[0]?.request.payload));
    expect(json.eventInfo.eventType).toBe("EVENT_TYPE_DATA_CREATE");
    expect(json.eventInfo.keyStr).toBe("a");
    await d.close();
  });

  it("counts sink failures (throw, rejection, timeout) and keeps consuming", async () => {
    let n = 0;
    const failures: [string, boolean][] = [];
    const timeoutSignals: AbortSignal[] = [];
    const sink: TriggerSink = {
      dispatch(inv, { signal }) {
        n++;
        if (inv.request.fnId === "throw") throw new Error("sync boom");
        if (inv.request.fnId === "reject") return Promise.reject(new Error("async boom"));
        if (inv.request.fnId === "hang") {
          timeoutSignals.push(signal);
          return new Promise(() => {});
        }
        return undefined;
      },
    };
    const d = createEventDispatcher({
      sink,
      triggerTimeoutMs: 5,
      hooks: {
        onTriggerFailure: (m, _e, timedOut) => failures.push([m.target.fnId, timedOut]),
        onTriggerDispatched: () => {
          throw new Error("a throwing hook is ignored");
        },
      },
    });
    const config = objectEvent({
      dataStr: {
        a: { onCreate: [fnTarget("throw")] },
        b: { onCreate: [fnTarget("reject")] },
        c: { onCreate: [fnTarget("hang")] },
        d: { onCreate: [fnTarget("ok")] },
      },
    });
    for (const k of ["a", "b", "c", "d"]) {
      d.tryEnqueue(mutation([[k, "create"]], { eventConfig: config }));
    }
    await d.idle();
    expect(n).toBe(4);
    expect(failures).toEqual([
      ["throw", false],
      ["reject", false],
      ["hang", true],
    ]);
    expect(timeoutSignals[0]?.aborted).toBe(true);
    expect((timeoutSignals[0]?.reason as DOMException | undefined)?.name).toBe("TimeoutError");
    expect(d.metrics()).toMatchObject({
      triggerFailures: 3,
      triggerTimeouts: 1,
      triggersDispatched: 1,
    });
    await d.close();
  });

  it("async sinks: resolved promises count as dispatched, every stuck dispatch times out", async () => {
    const signals: AbortSignal[] = [];
    const sink: TriggerSink = {
      dispatch(inv, { signal }) {
        if (inv.request.fnId === "stuck") {
          signals.push(signal);
          return new Promise(() => {});
        }
        return new Promise<void>((resolve) => setImmediate(resolve));
      },
    };
    const d = createEventDispatcher({ sink, triggerTimeoutMs: 3 });
    const config = objectEvent({
      dataStr: {
        a: { onCreate: [fnTarget("stuck"), fnTarget("ok")] },
        b: { onCreate: [fnTarget("ok")] },
      },
    });
    for (const k of ["a", "b", "a", "a", "b"]) {
      d.tryEnqueue(mutation([[k, "create"]], { eventConfig: config }));
    }
    await d.idle();
    expect(d.metrics()).toMatchObject({
      triggersDispatched: 5,
      triggerFailures: 3,
      triggerTimeouts: 3,
    });
    expect(signals).toHaveLength(3);
    expect(signals.every((s) => s.aborted)).toBe(true);
    await d.close();
  });

  it("holds no timer once every asynchronous dispatch has settled", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      let release: () => void = () => {};
      const sink: TriggerSink = {
        dispatch: () =>
          new Promise<void>((resolve) => {
            release = resolve;
          }),
      };
      const d = createEventDispatcher({ sink });
      const config = objectEvent({ dataStr: { a: { onCreate: [fnTarget("f")] } } });
      d.tryEnqueue(mutation([["a", "create"]], { eventConfig: config }));
      await vi.waitFor(() => expect(vi.getTimerCount()).toBe(1));
      release();
      await d.idle();
      expect(vi.getTimerCount()).toBe(0);
      expect(d.metrics().triggersDispatched).toBe(1);
      await d.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("stops trigger chains past the depth limit and counts them", async () => {
    const { sink, calls } = recordingSink();
    const exceeded: number[] = [];
    const d = createEventDispatcher({
      sink,
      maxTriggerDepth: 2,
      hooks: { onDepthExceeded: (_m, depth) => exceeded.push(depth) },
    });
    const config = objectEvent({ dataStr: { a: { onUpdate: [fnTarget("f")] } } });
    const ctx = mutation([["a", "update"]], { eventConfig: config });
    d.tryEnqueue(ctx, { triggerDepth: 1 });
    d.tryEnqueue(ctx, { triggerDepth: 2 });
    await d.idle();
    expect(calls.map((c) => c.request.options[TRIGGER_DEPTH_OPTION])).toEqual(["2"]);
    expect(d.metrics().triggerDepthExceeded).toBe(1);
    expect(exceeded).toEqual([3]);
    expect(() => d.tryEnqueue(ctx, { triggerDepth: -1 })).toThrow(/^\[invalid_argument\]/);
    await d.close();
  });

  it("does nothing when the pipeline is disabled", async () => {
    const d = createEventDispatcher({ pipelineEnabled: false });
    expect(d.tryEnqueue(mutation([["a", "create"]]))).toEqual({
      accepted: false,
      reason: "disabled",
    });
    expect(d.metrics()).toMatchObject({ accepted: 0, queueDrops: 0 });
    await d.close();
  });

  it("rejects invalid options with invalid_config", () => {
    expect(() => createEventDispatcher({ queueBound: 0 })).toThrow(
      /^\[invalid_config\] queueBound/,
    );
    expect(() => createEventDispatcher({ triggerTimeoutMs: 1.5 })).toThrow(/triggerTimeoutMs/);
  });
});

describe("EventDispatcher fan-out cap", () => {
  function wide(n: number, config = objectEvent({})): MutationContext {
    const keys: [string, "create"][] = [];
    for (let i = 0; i < n; i++) keys.push([`k${i}`, "create"]);
    return mutation(keys, { eventConfig: config });
  }

  function allTriggered(n: number) {
    const dataStr: Record<string, { onCreate: ReturnType<typeof fnTarget>[] }> = {};
    for (let i = 0; i < n; i++) dataStr[`k${i}`] = { onCreate: [fnTarget(`f${i}`)] };
    return objectEvent({ dataStr });
  }

  it("with cap 1: evaluates one key, counts the truncation and publishes a summary", async () => {
    const { sink, calls } = recordingSink();
    const d = createEventDispatcher({ sink, maxBatchTriggerFanout: 1 });
    const sub = d.subscribe();
    d.tryEnqueue(wide(3, allTriggered(3)));
    await d.idle();
    expect(calls.map((c) => c.request.fnId)).toEqual(["f0"]);
    const events = drainSubscription(sub).map((i) => i.event);
    expect(events.map((e) => e.kind)).toEqual(["mutation", "truncated"]);
    const t = events[1];
    expect(t?.kind === "truncated" && t.summary).toMatchObject({
      totalChanged: 3,
      emitted: 1,
      skipped: 2,
      sampleSkippedKeys: ["k1", "k2"],
    });
    expect(t?.seq).toBe(1);
    expect(d.metrics()).toMatchObject({ truncatedBatches: 1, emittedTotal: 3 });
    await d.close();
  });

  it("with the default cap (256) and sample (32)", async () => {
    const { sink, calls } = recordingSink();
    const d = createEventDispatcher({ sink });
    const sub = d.subscribe();
    d.tryEnqueue(wide(300, allTriggered(300)));
    d.tryEnqueue(wide(256, allTriggered(256)));
    await d.idle();
    expect(calls).toHaveLength(256 + 256);
    const events = drainSubscription(sub).map((i) => i.event);
    expect(events.map((e) => e.kind)).toEqual(["mutation", "truncated", "mutation"]);
    const t = events[1];
    if (t?.kind !== "truncated") throw new Error("expected a summary");
    expect(t.summary.sampleSkippedKeys).toHaveLength(32);
    expect(t.summary.skipped).toBe(44);
    expect(d.metrics().truncatedBatches).toBe(1);
    await d.close();
  });
});

describe("EventDispatcher function triggers", () => {
  const config = objectEvent({
    func: { resize: { onComplete: [fnTarget("done")], onError: [fnTarget("alert")] } },
  });

  it("fires on_complete with FUNC_COMPLETE, fn_id and the original payload", async () => {
    const { sink, calls } = recordingSink();
    const d = createEventDispatcher({ sink });
    const sub = d.subscribe();
    const r = d.tryEnqueueFunctionOutcome({
      objectId: "photo-1",
      clsId: "photos",
      partitionId: 0,
      fnId: "resize",
      outcome: "complete",
      eventConfig: config,
      payload: new Uint8Array([7]),
      triggerDepth: 3,
    });
    expect(r).toEqual({ accepted: true, seq: 1 });
    await d.idle();
    expect(calls.map((c) => c.request.fnId)).toEqual(["done"]);
    const p = payloadOf(calls[0] as never);
    expect(p.eventInfo?.eventType).toBe(EventType.FUNC_COMPLETE);
    expect(p.eventInfo?.fnId).toBe("resize");
    expect(p.eventInfo?.sourceObjectIdStr).toBe("photo-1");
    expect(p.eventInfo?.sourceClsId).toBe("photos");
    expect(p.originalPayload).toEqual(new Uint8Array([7]));
    expect(calls[0]?.request.options[TRIGGER_DEPTH_OPTION]).toBe("4");
    expect(drainSubscription(sub)[0]?.event.kind).toBe("function");
    expect(d.metrics().functionOutcomes).toBe(1);
    await d.close();
  });

  it("fires on_error with FUNC_ERROR and the error message", async () => {
    const { sink, calls } = recordingSink();
    const d = createEventDispatcher({ sink });
    d.tryEnqueueFunctionOutcome({
      objectId: "42",
      clsId: "photos",
      partitionId: 0,
      fnId: "resize",
      outcome: "error",
      eventConfig: config,
      error: "bad image",
    });
    await d.idle();
    expect(calls.map((c) => c.request.fnId)).toEqual(["alert"]);
    const p = payloadOf(calls[0] as never);
    expect(p.eventInfo?.eventType).toBe(EventType.FUNC_ERROR);
    expect(p.eventInfo?.sourceObjectId).toBe(42n);
    expect(p.eventInfo?.context.error).toBe("bad image");
    await d.close();
  });
});
