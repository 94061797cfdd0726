import { create } from "@bufbuild/protobuf";
import { EventType, TriggerTargetSchema } from "@oprc/grpc-api/messages";
import { describe, expect, it } from "vitest";
import { createTriggerFiring } from "./trigger-firing.js";
import type { TriggerMatch } from "./trigger-matching.js";
import type { TriggerSink } from "./trigger-sink.js";

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const match = (fnId: string): TriggerMatch => ({
  kind: "function",
  target: create(TriggerTargetSchema, { clsId: "c", fnId }),
  eventType: EventType.FUNC_COMPLETE,
  fnId: "source",
});
const counters = () => ({
  triggersDispatched: 0,
  triggerFailures: 0,
  triggerTimeouts: 0,
  triggerDepthExceeded: 0,
});

describe("trigger firing per-target hooks", () => {
  it("reports each dispatch's start and outcome, and drops past the lane bound", async () => {
    const events: string[] = [];
    const release: (() => void)[] = [];
    const sink: TriggerSink = {
      dispatch(inv) {
        if (inv.request.fnId === "fail") throw new Error("no");
        if (inv.request.fnId === "sync") return undefined;
        return new Promise<void>((resolve) => release.push(resolve));
      },
    };
    const firing = createTriggerFiring(
      sink,
      { maxTriggerDepth: 8, triggerTimeoutMs: 60_000, laneBound: 1 },
      counters(),
      {
        onTriggerStarted: (inv) => events.push(`start ${inv.request.fnId}`),
        onTriggerSettled: (inv, outcome) => events.push(`${outcome} ${inv.request.fnId}`),
        onTriggerDropped: (m) => events.push(`dropped ${m.target.fnId}`),
      },
    );
    const none = () => new Uint8Array();
    // One object: the first "slow" runs, the second waits (lane bound 1), the third is dropped.
    firing.fire([match("slow"), match("slow"), match("slow")], 0, none, "o");
    firing.fire([match("sync"), match("fail")], 0, none, "p");
    expect(events).toEqual([
      "start slow",
      "dropped slow",
      "start sync",
      "ok sync",
      "start fail",
      "error fail",
    ]);
    release.shift()?.();
    for (let i = 0; i < 5; i++) await tick();
    expect(events.slice(6)).toEqual(["ok slow", "start slow"]);
    firing.abortAll(new Error("closing"));
    expect(events.slice(8)).toEqual(["error slow"]);
  });
});
