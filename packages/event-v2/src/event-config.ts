import { EventV2Error } from "./event-v2-error.js";

/** How trigger payloads (`TriggerPayload`) are encoded into the invocation's `payload` bytes. */
export type PayloadFormat = "protobuf" | "json";

/**
 * Settings of the event pipeline. Every field maps to one `ODGM_*` variable (see
 * {@link eventConfigFromEnv}); {@link DEFAULT_EVENT_CONFIG} holds the defaults.
 */
export interface EventV2Config {
  /** `ODGM_EVENT_PIPELINE_V2`: false turns the pipeline off (nothing is queued). Default `true`. */
  readonly pipelineEnabled: boolean;
  /** `ODGM_EVENT_QUEUE_BOUND`: capacity of the per-shard queue. Default `1024`. */
  readonly queueBound: number;
  /** `ODGM_EVENT_BCAST_BOUND`: buffer size of each subscriber. Default `256`. */
  readonly broadcastBound: number;
  /** `ODGM_MAX_BATCH_TRIGGER_FANOUT`: changed keys of one mutation evaluated for triggers. Default `256`. */
  readonly maxBatchTriggerFanout: number;
  /** `ODGM_EVENT_SUMMARY_KEY_SAMPLE`: skipped keys listed in a truncation summary. Default `32`. */
  readonly summaryKeySample: number;
  /** `ODGM_EVENT_PAYLOAD_FORMAT`: `protobuf` (default, ~4× cheaper per seed 001) or `json` (proto3 JSON). */
  readonly payloadFormat: PayloadFormat;
  /** `ODGM_MAX_TRIGGER_DEPTH`: deepest trigger chain fired; deeper ones are counted and skipped. Default `10`. */
  readonly maxTriggerDepth: number;
  /** `ODGM_TRIGGER_TIMEOUT_MS`: bound of one trigger dispatch, in ms. Default `30000`. */
  readonly triggerTimeoutMs: number;
}

/** The defaults of {@link EventV2Config} (spec §5, seed 001 §3). */
export const DEFAULT_EVENT_CONFIG: Readonly<EventV2Config> = Object.freeze({
  pipelineEnabled: true,
  queueBound: 1024,
  broadcastBound: 256,
  maxBatchTriggerFanout: 256,
  summaryKeySample: 32,
  payloadFormat: "protobuf",
  maxTriggerDepth: 10,
  triggerTimeoutMs: 30_000,
});

const TRUE = new Set(["true", "1", "yes", "on"]);
const FALSE = new Set(["false", "0", "no", "off"]);
// setTimeout clamps delays above 2^31-1 ms to 1 ms, so larger timeouts would fire at once.
const MAX_TIMEOUT_MS = 2_147_483_647;
// A queue or buffer bound beyond this is a typo, not a configuration.
const MAX_BOUND = 1 << 24;

function present(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const t = value.trim();
  return t === "" ? undefined : t;
}

function parseBool(env: Record<string, string | undefined>, name: string, def: boolean): boolean {
  const raw = present(env[name]);
  if (raw === undefined) return def;
  const v = raw.toLowerCase();
  if (TRUE.has(v)) return true;
  if (FALSE.has(v)) return false;
  throw new EventV2Error(
    "invalid_config",
    `${name}=${JSON.stringify(raw)} is not a boolean (use true/false, 1/0, yes/no, on/off)`,
    { variable: name },
  );
}

function parseUint(
  env: Record<string, string | undefined>,
  name: string,
  def: number,
  min: number,
  max: number,
): number {
  const raw = present(env[name]);
  if (raw === undefined) return def;
  if (!/^[0-9]+$/.test(raw)) {
    throw new EventV2Error(
      "invalid_config",
      `${name}=${JSON.stringify(raw)} is not a non-negative decimal integer`,
      { variable: name },
    );
  }
  const n = Number(raw);
  if (n < min || n > max) {
    throw new EventV2Error("invalid_config", `${name}=${raw} is out of range [${min}, ${max}]`, {
      variable: name,
    });
  }
  return n;
}

function parseFormat(env: Record<string, string | undefined>, name: string): PayloadFormat {
  const raw = present(env[name]);
  if (raw === undefined) return DEFAULT_EVENT_CONFIG.payloadFormat;
  const v = raw.toLowerCase();
  if (v === "protobuf" || v === "json") return v;
  throw new EventV2Error(
    "invalid_config",
    `${name}=${JSON.stringify(raw)} is not a payload format (use protobuf or json)`,
    { variable: name },
  );
}

/**
 * Reads the event pipeline settings from environment variables. Pure: pass `process.env`
 * or any record. Unset or blank variables take their default; invalid values throw an
 * {@link EventV2Error} with code `invalid_config` whose `variable` names the culprit.
 *
 * | variable | field | default | accepted |
 * |---|---|---|---|
 * | `ODGM_EVENT_PIPELINE_V2` | pipelineEnabled | true | true/false, 1/0, yes/no, on/off |
 * | `ODGM_EVENT_QUEUE_BOUND` | queueBound | 1024 | 1 … 2^24 |
 * | `ODGM_EVENT_BCAST_BOUND` | broadcastBound | 256 | 1 … 2^24 |
 * | `ODGM_MAX_BATCH_TRIGGER_FANOUT` | maxBatchTriggerFanout | 256 | 0 … 2^24 |
 * | `ODGM_EVENT_SUMMARY_KEY_SAMPLE` | summaryKeySample | 32 | 0 … 2^24 |
 * | `ODGM_EVENT_PAYLOAD_FORMAT` | payloadFormat | protobuf | protobuf, json |
 * | `ODGM_MAX_TRIGGER_DEPTH` | maxTriggerDepth | 10 | 0 … 2^24 |
 * | `ODGM_TRIGGER_TIMEOUT_MS` | triggerTimeoutMs | 30000 | 1 … 2^31-1 |
 *
 * @example
 * ```ts
 * const config = eventConfigFromEnv(process.env);
 * const dispatcher = createEventDispatcher({ ...config, sink });
 * ```
 */
export function eventConfigFromEnv(env: Record<string, string | undefined>): EventV2Config {
  const d = DEFAULT_EVENT_CONFIG;
  return {
    pipelineEnabled: parseBool(env, "ODGM_EVENT_PIPELINE_V2", d.pipelineEnabled),
    queueBound: parseUint(env, "ODGM_EVENT_QUEUE_BOUND", d.queueBound, 1, MAX_BOUND),
    broadcastBound: parseUint(env, "ODGM_EVENT_BCAST_BOUND", d.broadcastBound, 1, MAX_BOUND),
    maxBatchTriggerFanout: parseUint(
      env,
      "ODGM_MAX_BATCH_TRIGGER_FANOUT",
      d.maxBatchTriggerFanout,
      0,
      MAX_BOUND,
    ),
    summaryKeySample: parseUint(
      env,
      "ODGM_EVENT_SUMMARY_KEY_SAMPLE",
      d.summaryKeySample,
      0,
      MAX_BOUND,
    ),
    payloadFormat: parseFormat(env, "ODGM_EVENT_PAYLOAD_FORMAT"),
    maxTriggerDepth: parseUint(env, "ODGM_MAX_TRIGGER_DEPTH", d.maxTriggerDepth, 0, MAX_BOUND),
    triggerTimeoutMs: parseUint(
      env,
      "ODGM_TRIGGER_TIMEOUT_MS",
      d.triggerTimeoutMs,
      1,
      MAX_TIMEOUT_MS,
    ),
  };
}

/** Validates an option the same way the environment parser does (used by the dispatcher). */
export function checkBound(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new EventV2Error("invalid_config", `${name}=${value} is out of range [${min}, ${max}]`, {
      variable: name,
    });
  }
  return value;
}

/** Upper limits applied by {@link eventConfigFromEnv} and the dispatcher options. */
export const CONFIG_LIMITS: Readonly<{ maxBound: number; maxTimeoutMs: number }> = Object.freeze({
  maxBound: MAX_BOUND,
  maxTimeoutMs: MAX_TIMEOUT_MS,
});

/**
 * The effective configuration of a dispatcher: every field of `options` checked against the
 * same bounds as {@link eventConfigFromEnv}, every missing one defaulted.
 */
export function resolveEventConfig(options: Partial<EventV2Config>): EventV2Config {
  const d = DEFAULT_EVENT_CONFIG;
  const bound = (name: keyof EventV2Config, min: number, max: number = MAX_BOUND): number =>
    checkBound(name, (options[name] as number | undefined) ?? (d[name] as number), min, max);
  const config: EventV2Config = Object.freeze({
    pipelineEnabled: options.pipelineEnabled ?? d.pipelineEnabled,
    queueBound: bound("queueBound", 1),
    broadcastBound: bound("broadcastBound", 1),
    maxBatchTriggerFanout: bound("maxBatchTriggerFanout", 0),
    summaryKeySample: bound("summaryKeySample", 0),
    payloadFormat: options.payloadFormat ?? d.payloadFormat,
    maxTriggerDepth: bound("maxTriggerDepth", 0),
    triggerTimeoutMs: bound("triggerTimeoutMs", 1, MAX_TIMEOUT_MS),
  });
  if (config.payloadFormat !== "protobuf" && config.payloadFormat !== "json") {
    throw new EventV2Error("invalid_config", `payloadFormat=${String(config.payloadFormat)}`, {
      variable: "payloadFormat",
    });
  }
  return config;
}
