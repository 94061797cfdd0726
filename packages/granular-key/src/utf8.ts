// Internal: UTF-8 length, write and strict read, with an ASCII fast path for the short
// strings that dominate (ids and entry keys are mostly a few ASCII characters).

import { alloc, commit, fitsPool, reserve, reservedOffset } from "./byte-pool.js";
import { KeyError } from "./key-error.js";

const SHORT = 24;
const SHORT_DECODE = 16;
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

type WellFormed = { isWellFormed(): boolean };

/**
 * UTF-8 byte length of an object id, after checking what the byte layout needs: a
 * string, non-empty, no U+0000, no lone surrogate. `what` names it in error messages.
 */
export function idByteLength(id: string, what = "object id"): number {
  if (typeof id !== "string") {
    throw new KeyError("invalid_argument", `${what} must be a string, got ${typeof id}`);
  }
  const n = id.length;
  if (n === 0) throw new KeyError("empty_id", `${what} is empty`);
  if (n <= SHORT) {
    let i = 0;
    for (; i < n; i++) {
      const c = id.charCodeAt(i);
      if (c === 0) throw nulError(what, i);
      if (c >= 0x80) break;
    }
    if (i === n) return n;
  }
  const nul = id.indexOf("\0");
  if (nul !== -1) throw nulError(what, nul);
  return wellFormedByteLength(id, what);
}

/** UTF-8 byte length of any string (entry keys may be empty or contain U+0000). */
export function strByteLength(s: string, what: string): number {
  if (typeof s !== "string") {
    throw new KeyError("invalid_argument", `${what} must be a string, got ${typeof s}`);
  }
  const n = s.length;
  if (n <= SHORT) {
    let i = 0;
    while (i < n && s.charCodeAt(i) < 0x80) i++;
    if (i === n) return n;
  }
  return wellFormedByteLength(s, what);
}

function wellFormedByteLength(s: string, what: string): number {
  if (!(s as unknown as WellFormed).isWellFormed()) {
    throw new KeyError("invalid_utf8", `${what} contains a lone surrogate (no UTF-8 form)`);
  }
  return Buffer.byteLength(s, "utf8");
}

function nulError(what: string, index: number): KeyError {
  return new KeyError("nul_in_id", `${what} contains U+0000 at index ${index}`);
}

/** Writes `s` (already measured as `byteLength` UTF-8 bytes) into `out` at `pos`. */
export function writeStr(s: string, out: Uint8Array, pos: number, byteLength: number): void {
  if (byteLength === s.length && byteLength <= SHORT) {
    for (let i = 0; i < byteLength; i++) out[pos + i] = s.charCodeAt(i);
  } else if (byteLength > 0) {
    encoder.encodeInto(s, out.subarray(pos, pos + byteLength));
  }
}

/** Reads `bytes[start, end)` as strict UTF-8 (no BOM stripping); `invalid_utf8` otherwise. */
export function readStr(bytes: Uint8Array, start: number, end: number, what: string): string {
  const n = end - start;
  if (n <= SHORT_DECODE) {
    let s = "";
    let i = start;
    for (; i < end; i++) {
      const b = bytes[i] as number;
      if (b >= 0x80) break;
      s += String.fromCharCode(b);
    }
    if (i === end) return s;
  }
  try {
    return decoder.decode(bytes.subarray(start, end));
  } catch (cause) {
    throw new KeyError("invalid_utf8", `${what} is not well-formed UTF-8`, { cause });
  }
}

/**
 * Encodes `<id> 00` followed by `tail` zero bytes in one pooled array (the caller fills the
 * tail, which starts at `out.length - tail`). Validates the id like {@link idByteLength}.
 * Long ids are encoded straight into the slab (no separate length pass).
 */
export function encodeIdKey(id: string, tail: number): Uint8Array {
  if (typeof id !== "string") {
    throw new KeyError("invalid_argument", `object id must be a string, got ${typeof id}`);
  }
  const n = id.length;
  if (n === 0) throw new KeyError("empty_id", "object id is empty");
  if (n <= SHORT) {
    const out = alloc(n + 1 + tail);
    let i = 0;
    for (; i < n; i++) {
      const c = id.charCodeAt(i);
      if (c === 0) throw nulError("object id", i);
      if (c >= 0x80) break;
      out[i] = c;
    }
    if (i === n) {
      out[n] = 0x00;
      return out;
    }
  }
  const nul = id.indexOf("\0");
  if (nul !== -1) throw nulError("object id", nul);
  if (!(id as unknown as WellFormed).isWellFormed()) {
    throw new KeyError("invalid_utf8", "object id contains a lone surrogate (no UTF-8 form)");
  }
  const max = 3 * n;
  if (!fitsPool(max + 1 + tail)) {
    const length = Buffer.byteLength(id, "utf8");
    const out = new Uint8Array(length + 1 + tail);
    encoder.encodeInto(id, out);
    return out;
  }
  const slab = reserve(max + 1 + tail);
  const offset = reservedOffset();
  const { written } = encoder.encodeInto(id, slab.subarray(offset, offset + max));
  // encodeInto wrote exactly `written` bytes; the rest of the reservation is still zero.
  const out = commit(written + 1 + tail);
  out[written] = 0x00;
  return out;
}
