import { isCanonicalU32, isCanonicalU64 } from "@oprc/oprc-id";
import { RaftError } from "../core/raft-error.js";
import { ByteReader } from "./byte-reader.js";
import { ByteWriter } from "./byte-writer.js";
import type { ObjectMutationBase, OdgmOp, ValData } from "./odgm-op.js";

/** Format version written in the first byte of every encoded operation. */
export const ODGM_OP_FORMAT_VERSION = 1;

const TAGS = {
  noop: 0x00,
  set_entry: 0x01,
  delete_entry: 0x02,
  batch: 0x03,
  set_object: 0x04,
  merge_object: 0x05,
  delete_object: 0x06,
  convert_legacy: 0x07,
  set_event_config: 0x08,
} as const satisfies Record<OdgmOp["kind"], number>;

const KIND_BY_TAG: readonly OdgmOp["kind"][] = [
  "noop",
  "set_entry",
  "delete_entry",
  "batch",
  "set_object",
  "merge_object",
  "delete_object",
  "convert_legacy",
  "set_event_config",
];

/** An expected object version (u64 varint) follows the flags (any mutation but conversion). */
const FLAG_EXPECTED_VERSION = 0x01;
/** `set_object`, `merge_object`, `set_event_config`: an event configuration follows. */
const FLAG_EVENT = 0x02;

const ALLOWED_FLAGS: Readonly<Record<OdgmOp["kind"], number>> = {
  noop: 0,
  set_entry: FLAG_EXPECTED_VERSION,
  delete_entry: FLAG_EXPECTED_VERSION,
  batch: FLAG_EXPECTED_VERSION,
  set_object: FLAG_EXPECTED_VERSION | FLAG_EVENT,
  merge_object: FLAG_EXPECTED_VERSION | FLAG_EVENT,
  delete_object: FLAG_EXPECTED_VERSION,
  set_event_config: FLAG_EXPECTED_VERSION | FLAG_EVENT,
  convert_legacy: 0,
};

const VARIANT_NUMERIC = 0;
const VARIANT_STRING = 1;
const U32_MAX = 0xffff_ffff;

/** The u32 a canonical-decimal entry key names, or -1 for a string key. */
function numericKey(s: string): number {
  return isCanonicalU32(s) ? Number(s) : -1;
}

function checkId(what: string, s: string): void {
  if (s.length === 0) throw new RaftError("invalid_value", `${what} is empty`);
  if (s.includes("\u0000")) throw new RaftError("invalid_value", `${what} contains NUL`);
}

/** Encoded form of an entry key (variant byte + payload); also its sort key. */
function encodeKey(key: string): Uint8Array {
  checkId("entry key", key);
  const n = numericKey(key);
  const w = new ByteWriter();
  if (n >= 0) w.u8(VARIANT_NUMERIC).u32be(n);
  else w.u8(VARIANT_STRING).string(key);
  return w.finish();
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

function sortedKeys<T>(items: Iterable<[string, T]>): [Uint8Array, string, T][] {
  const out = [...items].map(([k, v]): [Uint8Array, string, T] => [encodeKey(k), k, v]);
  out.sort((x, y) => compareBytes(x[0], y[0]));
  for (let i = 1; i < out.length; i++) {
    const prev = out[i - 1] as [Uint8Array, string, T];
    const cur = out[i] as [Uint8Array, string, T];
    if (compareBytes(prev[0], cur[0]) === 0) {
      throw new RaftError("duplicate_key", `entry key ${JSON.stringify(cur[1])} repeats`);
    }
  }
  return out;
}

function writeValue(w: ByteWriter, v: ValData): void {
  if (!Number.isInteger(v.type) || v.type < 0 || v.type > U32_MAX) {
    throw new RaftError("invalid_value", `value type must be a u32: ${v.type}`);
  }
  if (!(v.data instanceof Uint8Array)) {
    throw new RaftError("invalid_value", "value data must be a Uint8Array");
  }
  w.varint(v.type).bytes(v.data);
}

function writeEntries(w: ByteWriter, entries: ReadonlyMap<string, ValData>): void {
  const sorted = sortedKeys(entries);
  w.varint(sorted.length);
  for (const [k, , v] of sorted) {
    w.raw(k);
    writeValue(w, v);
  }
}

/** Writes the flags byte and the optional fields it announces (expected version, event). */
function writeFlags(w: ByteWriter, op: ObjectMutationBase, event?: Uint8Array): void {
  let flags = 0;
  if (op.expectedVersion !== undefined) flags |= FLAG_EXPECTED_VERSION;
  if (event !== undefined) flags |= FLAG_EVENT;
  w.u8(flags);
  if (op.expectedVersion !== undefined) w.varint64(op.expectedVersion);
  if (event !== undefined) {
    if (!(event instanceof Uint8Array)) {
      throw new RaftError("invalid_value", "event must be an encoded ObjectEvent (bytes)");
    }
    w.bytes(event);
  }
}

function writeBase(w: ByteWriter, op: ObjectMutationBase): void {
  if (!Number.isInteger(op.partition) || op.partition < 0 || op.partition > U32_MAX) {
    throw new RaftError("invalid_value", `partition must be a u32: ${op.partition}`);
  }
  checkId("object id", op.objectId);
  w.string(op.cls);
  w.varint(op.partition);
  w.u8(isCanonicalU64(op.objectId) ? VARIANT_NUMERIC : VARIANT_STRING);
  w.string(op.objectId);
  w.varint(op.timestampMs);
}

/**
 * Encodes an ODGM operation into its one canonical byte form (the payload of a Raft log
 * entry). Map entries and delete keys are written sorted by their encoded bytes, so the
 * result does not depend on insertion order.
 *
 * Layout (all varints are minimal unsigned LEB128; strings are varint length + UTF-8):
 * `version(1) tag [cls partition identity timestampMs flags [optional fields] body]`
 * where identity = variant byte (0 numeric: canonical u64 decimal, 1 string) + string,
 * an entry key = `00 <u32 BE>` (canonical u32 decimal key) or `01 <string>`, a value =
 * `varint type, varint length, bytes`. See the package README for every operation.
 *
 * @throws RaftError `invalid_value` (out-of-range number, empty id or key, NUL in an id,
 * a numeric-only operation on a string id), `duplicate_key` (a key repeated, or in both
 * sets and deletes), `invalid_utf8` (a lone surrogate).
 * @example
 * ```ts
 * const bytes = encodeOdgmOp({ kind: "delete_entry", cls: "c", partition: 7,
 *   objectId: "42", timestampMs: 1000, key: "k" });
 * decodeOdgmOp(bytes); // the same operation
 * ```
 */
export function encodeOdgmOp(op: OdgmOp): Uint8Array {
  const w = new ByteWriter();
  w.u8(ODGM_OP_FORMAT_VERSION);
  const tag = TAGS[op.kind];
  if (tag === undefined) throw new RaftError("invalid_value", `unknown operation kind`);
  w.u8(tag);
  switch (op.kind) {
    case "noop":
      break;
    case "set_entry":
      writeBase(w, op);
      writeFlags(w, op);
      w.raw(encodeKey(op.key));
      writeValue(w, op.value);
      break;
    case "delete_entry":
      writeBase(w, op);
      writeFlags(w, op);
      w.raw(encodeKey(op.key));
      break;
    case "batch": {
      writeBase(w, op);
      const sets = sortedKeys(op.sets);
      const deletes = sortedKeys(op.deletes.map((k): [string, null] => [k, null]));
      const setKeys = new Set(sets.map(([, k]) => k));
      for (const [, k] of deletes) {
        if (setKeys.has(k)) {
          throw new RaftError("duplicate_key", `key ${JSON.stringify(k)} is set and deleted`);
        }
      }
      writeFlags(w, op);
      w.varint(sets.length);
      for (const [k, , v] of sets) {
        w.raw(k);
        writeValue(w, v);
      }
      w.varint(deletes.length);
      for (const [k] of deletes) w.raw(k);
      break;
    }
    case "set_object":
    case "merge_object":
      writeBase(w, op);
      writeFlags(w, op, op.event);
      writeEntries(w, op.entries);
      break;
    case "set_event_config":
      writeBase(w, op);
      writeFlags(w, op, op.event);
      break;
    case "delete_object":
      writeBase(w, op);
      writeFlags(w, op);
      break;
    case "convert_legacy":
      if (!isCanonicalU64(op.objectId)) {
        throw new RaftError("invalid_value", "convert_legacy needs a numeric object id");
      }
      if (op.expectedVersion !== undefined) {
        throw new RaftError("invalid_value", "convert_legacy takes no expected version");
      }
      writeBase(w, op);
      w.u8(0);
      break;
  }
  return w.finish();
}

function readIdString(r: ByteReader, what: string): string {
  const at = r.pos;
  const s = r.string();
  if (s.length === 0) throw new RaftError("non_canonical", `${what} is empty`, { offset: at });
  if (s.includes("\u0000")) {
    throw new RaftError("non_canonical", `${what} contains NUL`, { offset: at });
  }
  return s;
}

/** Reads an entry key and returns [key, its encoded bytes] for order checks. */
function readKey(r: ByteReader): [string, Uint8Array] {
  const start = r.pos;
  const variant = r.u8();
  let key: string;
  if (variant === VARIANT_NUMERIC) key = String(r.u32be());
  else if (variant === VARIANT_STRING) {
    key = readIdString(r, "entry key");
    if (numericKey(key) >= 0) {
      throw new RaftError("non_canonical", `string key ${key} must use the numeric variant`, {
        offset: start,
      });
    }
  } else {
    throw new RaftError("unknown_tag", `unknown entry key variant ${variant}`, { offset: start });
  }
  return [key, r.input.subarray(start, r.pos)];
}

function readValue(r: ByteReader): ValData {
  const type = r.varint(U32_MAX);
  const data = new Uint8Array(r.bytes()); // a copy, never a view of the input
  return { data, type };
}

/** Reads `count` keys (and values) in strictly increasing encoded order. */
function readKeyed<T>(r: ByteReader, read: () => T): Map<string, T> {
  const count = r.varint();
  const out = new Map<string, T>();
  let prev: Uint8Array | undefined;
  for (let i = 0; i < count; i++) {
    const at = r.pos;
    const [key, enc] = readKey(r);
    if (prev !== undefined) {
      const c = compareBytes(prev, enc);
      if (c === 0) throw new RaftError("duplicate_key", `key ${key} repeats`, { offset: at });
      if (c > 0) throw new RaftError("unsorted_keys", "keys are not sorted", { offset: at });
    }
    prev = enc;
    out.set(key, read());
  }
  return out;
}

function readFlags(r: ByteReader, kind: OdgmOp["kind"]): number {
  const at = r.pos;
  const flags = r.u8();
  if ((flags & ~ALLOWED_FLAGS[kind]) !== 0) {
    throw new RaftError("unknown_flags", `flags 0x${flags.toString(16)} not defined for ${kind}`, {
      offset: at,
    });
  }
  return flags;
}

/**
 * Decodes a log-entry payload produced by {@link encodeOdgmOp}. Accepts exactly the
 * canonical encodings: for every accepted input `encodeOdgmOp(decodeOdgmOp(b))` equals `b`.
 * @throws RaftError for anything else: unknown version, tag, variant or flag bits;
 * truncated input; bad or non-minimal varints; invalid UTF-8; unsorted or duplicate keys;
 * a canonical decimal id or key under the string variant (or a non-canonical one under
 * the numeric variant); empty ids; trailing bytes.
 */
export function decodeOdgmOp(bytes: Uint8Array): OdgmOp {
  const r = new ByteReader(bytes);
  const version = r.u8();
  if (version !== ODGM_OP_FORMAT_VERSION) {
    throw new RaftError("unknown_version", `unknown format version ${version}`, { offset: 0 });
  }
  const tag = r.u8();
  const kind = KIND_BY_TAG[tag];
  if (kind === undefined) {
    throw new RaftError("unknown_tag", `unknown operation tag ${tag}`, { offset: 1 });
  }
  if (kind === "noop") {
    r.end();
    return { kind };
  }
  const cls = r.string();
  const partition = r.varint(U32_MAX);
  const idAt = r.pos;
  const variant = r.u8();
  if (variant !== VARIANT_NUMERIC && variant !== VARIANT_STRING) {
    throw new RaftError("unknown_tag", `unknown identity variant ${variant}`, { offset: idAt });
  }
  const objectId = readIdString(r, "object id");
  if (isCanonicalU64(objectId) !== (variant === VARIANT_NUMERIC)) {
    throw new RaftError(
      "non_canonical",
      variant === VARIANT_NUMERIC
        ? `numeric identity ${JSON.stringify(objectId)} is not canonical u64 decimal`
        : `string identity ${objectId} must use the numeric variant`,
      { offset: idAt },
    );
  }
  const timestampMs = r.varint();
  const flags = readFlags(r, kind);
  const expectedVersion = flags & FLAG_EXPECTED_VERSION ? r.varint64() : undefined;
  const event = flags & FLAG_EVENT ? new Uint8Array(r.bytes()) : undefined;
  const base = {
    cls,
    partition,
    objectId,
    timestampMs,
    ...(expectedVersion === undefined ? {} : { expectedVersion }),
  };
  const withEvent = event === undefined ? {} : { event };
  let op: OdgmOp;
  switch (kind) {
    case "set_entry": {
      const [key] = readKey(r);
      op = { kind, ...base, key, value: readValue(r) };
      break;
    }
    case "delete_entry":
      op = { kind, ...base, key: readKey(r)[0] };
      break;
    case "batch": {
      const sets = readKeyed(r, () => readValue(r));
      const at = r.pos;
      const deletes = [...readKeyed(r, () => null).keys()];
      for (const k of deletes) {
        if (sets.has(k)) {
          throw new RaftError("duplicate_key", `key ${k} is set and deleted`, { offset: at });
        }
      }
      op = { kind, ...base, sets, deletes };
      break;
    }
    case "set_object":
    case "merge_object":
      op = { kind, ...base, entries: readKeyed(r, () => readValue(r)), ...withEvent };
      break;
    case "set_event_config":
      op = { kind, ...base, ...withEvent };
      break;
    case "delete_object":
      op = { kind, ...base };
      break;
    case "convert_legacy":
      if (variant !== VARIANT_NUMERIC) {
        throw new RaftError("non_canonical", "convert_legacy needs a numeric object id", {
          offset: idAt,
        });
      }
      op = { kind, ...base };
      break;
  }
  r.end();
  return op;
}
