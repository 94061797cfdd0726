import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_EVENT_CONFIG, eventConfigFromEnv } from "./event-config.js";
import { isEventV2Error } from "./event-v2-error.js";

function errorOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a throw");
}

describe("eventConfigFromEnv", () => {
  it("returns the documented defaults for an empty environment", () => {
    expect(eventConfigFromEnv({})).toEqual({
      pipelineEnabled: true,
      queueBound: 1024,
      broadcastBound: 256,
      maxBatchTriggerFanout: 256,
      summaryKeySample: 32,
      payloadFormat: "protobuf",
      maxTriggerDepth: 10,
      triggerTimeoutMs: 30000,
    });
    expect(eventConfigFromEnv({})).toEqual(DEFAULT_EVENT_CONFIG);
  });

  it("reads every variable", () => {
    expect(
      eventConfigFromEnv({
        ODGM_EVENT_PIPELINE_V2: "false",
        ODGM_EVENT_QUEUE_BOUND: "8",
        ODGM_EVENT_BCAST_BOUND: "4",
        ODGM_MAX_BATCH_TRIGGER_FANOUT: "1",
        ODGM_EVENT_SUMMARY_KEY_SAMPLE: "0",
        ODGM_EVENT_PAYLOAD_FORMAT: "JSON",
        ODGM_MAX_TRIGGER_DEPTH: "3",
        ODGM_TRIGGER_TIMEOUT_MS: "250",
      }),
    ).toEqual({
      pipelineEnabled: false,
      queueBound: 8,
      broadcastBound: 4,
      maxBatchTriggerFanout: 1,
      summaryKeySample: 0,
      payloadFormat: "json",
      maxTriggerDepth: 3,
      triggerTimeoutMs: 250,
    });
  });

  it("treats unset and blank values as the default and accepts boolean spellings", () => {
    expect(
      eventConfigFromEnv({ ODGM_EVENT_QUEUE_BOUND: "  ", ODGM_EVENT_PIPELINE_V2: undefined }),
    ).toEqual(DEFAULT_EVENT_CONFIG);
    for (const v of ["0", "no", "OFF", "False"]) {
      expect(eventConfigFromEnv({ ODGM_EVENT_PIPELINE_V2: v }).pipelineEnabled).toBe(false);
    }
    for (const v of ["1", "yes", "on", "TRUE"]) {
      expect(eventConfigFromEnv({ ODGM_EVENT_PIPELINE_V2: v }).pipelineEnabled).toBe(true);
    }
  });

  it.each([
    ["ODGM_EVENT_PIPELINE_V2", "maybe"],
    ["ODGM_EVENT_QUEUE_BOUND", "0"],
    ["ODGM_EVENT_QUEUE_BOUND", "-1"],
    ["ODGM_EVENT_QUEUE_BOUND", "1e3"],
    ["ODGM_EVENT_QUEUE_BOUND", "99999999999"],
    ["ODGM_EVENT_BCAST_BOUND", "0"],
    ["ODGM_MAX_BATCH_TRIGGER_FANOUT", "ten"],
    ["ODGM_EVENT_SUMMARY_KEY_SAMPLE", "3.5"],
    ["ODGM_EVENT_PAYLOAD_FORMAT", "xml"],
    ["ODGM_MAX_TRIGGER_DEPTH", "-2"],
    ["ODGM_TRIGGER_TIMEOUT_MS", "0"],
    ["ODGM_TRIGGER_TIMEOUT_MS", "4294967296"],
  ])("rejects %s=%s with a typed error naming the variable", (name, value) => {
    const err = errorOf(() => eventConfigFromEnv({ [name]: value }));
    expect(isEventV2Error(err)).toBe(true);
    if (!isEventV2Error(err)) return;
    expect(err.code).toBe("invalid_config");
    expect(err.variable).toBe(name);
    expect(err.message).toMatch(/^\[invalid_config\] /);
    expect(err.message).toContain(name);
  });

  it("parses any in-range decimal queue bound exactly (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1 << 24 }), (n) => {
        expect(eventConfigFromEnv({ ODGM_EVENT_QUEUE_BOUND: String(n) }).queueBound).toBe(n);
      }),
    );
  });

  it("rejects any value with a non-digit character (property)", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }).filter((s) => s.trim() !== "" && !/^[0-9]+$/.test(s.trim())),
        (s) => {
          expect(() => eventConfigFromEnv({ ODGM_MAX_TRIGGER_DEPTH: s })).toThrow(
            /ODGM_MAX_TRIGGER_DEPTH/,
          );
        },
      ),
    );
  });
});
