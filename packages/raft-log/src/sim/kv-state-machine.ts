import type { KvInput } from "../checker/kv-model.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A client command as carried in a log entry: the operation plus its unique id. */
export interface KvCommand {
  /** Issuing client. */
  readonly clientId: number;
  /** Per-client sequence number; retries of one operation reuse it (dedupe key). */
  readonly seq: number;
  /** The write (`put` or `append`); reads never enter the log (they use ReadIndex). */
  readonly input: Extract<KvInput, { op: "put" | "append" }>;
}

/** Payload of the liveness marker the simulator proposes after healing. */
export const MARKER_PREFIX = "marker|";

/**
 * Encodes a command as `clientId|seq|op|key|value` (UTF-8). Keys and values never contain
 * `|` in the simulator, so the form is unambiguous and canonical.
 */
export function encodeCommand(c: KvCommand): Uint8Array {
  return enc.encode(`${c.clientId}|${c.seq}|${c.input.op}|${c.input.key}|${c.input.value}`);
}

/** Decodes {@link encodeCommand}; undefined for no-ops, markers and foreign payloads. */
export function decodeCommand(data: Uint8Array): KvCommand | undefined {
  if (data.byteLength === 0) return undefined;
  const parts = dec.decode(data).split("|");
  if (parts.length !== 5) return undefined;
  const [c, s, op, key, value] = parts as [string, string, string, string, string];
  if (op !== "put" && op !== "append") return undefined;
  return { clientId: Number(c), seq: Number(s), input: { op, key, value } };
}

/**
 * The simulator's replicated state machine: string registers with `put`/`append`, plus a
 * per-client dedupe table (highest applied sequence number) so that a retried or duplicated
 * command takes effect at most once. Snapshots carry both.
 */
export class KvStateMachine {
  /** Register values (absent = ""). */
  readonly data: Map<string, string> = new Map();
  /** Highest applied sequence number per client. */
  readonly lastSeq: Map<number, number> = new Map();

  /** Applies `c`; false when it is a duplicate (already applied, no effect). */
  apply(c: KvCommand): boolean {
    if ((this.lastSeq.get(c.clientId) ?? 0) >= c.seq) return false;
    this.lastSeq.set(c.clientId, c.seq);
    const old = this.data.get(c.input.key) ?? "";
    this.data.set(c.input.key, c.input.op === "put" ? c.input.value : old + c.input.value);
    return true;
  }

  /** Current value of `key` ("" when never written). */
  get(key: string): string {
    return this.data.get(key) ?? "";
  }

  /** Deterministic snapshot bytes (sorted keys). */
  snapshot(): Uint8Array {
    const kv = [...this.data.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const seqs = [...this.lastSeq.entries()].sort((a, b) => a[0] - b[0]);
    return enc.encode(JSON.stringify({ kv, seqs }));
  }

  /** Replaces the state with a snapshot from {@link snapshot} (empty bytes = empty state). */
  restore(bytes: Uint8Array): void {
    this.data.clear();
    this.lastSeq.clear();
    if (bytes.byteLength === 0) return;
    const v = JSON.parse(dec.decode(bytes)) as { kv: [string, string][]; seqs: [number, number][] };
    for (const [k, x] of v.kv) this.data.set(k, x);
    for (const [c, s] of v.seqs) this.lastSeq.set(c, s);
  }
}
