import { randomInt } from "node:crypto";
import { IdError } from "./id-error.js";

/**
 * The base32-sortable alphabet of TIDs: its characters are in ascending code-point order, so
 * comparing TIDs as strings compares their 64-bit values.
 */
export const TID_ALPHABET = "234567abcdefghijklmnopqrstuvwxyz";

/** Length of every TID: 13 characters. */
export const TID_LENGTH = 13;

/** The two fields of a TID. */
export interface TidParts {
  /** Microseconds since the Unix epoch, 0..2^53-1. */
  timestampUs: bigint;
  /** Clock identifier, 0..1023. */
  clockId: number;
}

/** Options for {@link createTidClock}. */
export interface TidClockOptions {
  /**
   * Current time in microseconds since the Unix epoch. Default: `Date.now() * 1000` (the wall
   * clock at millisecond resolution; TIDs within one millisecond are told apart by the
   * strictly-increasing rule). Injectable for tests and for a finer clock.
   */
  now?: () => bigint;
  /**
   * Clock identifier written in the low 10 bits, 0..1023. Default: random, so two processes
   * that create TIDs in the same microsecond most likely still differ.
   */
  clockId?: number;
}

/** A TID generator; see {@link createTidClock}. */
export interface TidClock {
  /** The clock identifier this clock writes into every TID. */
  readonly clockId: number;
  /** Returns a new TID, strictly greater than every TID this clock returned before. */
  next(): string;
}

const TS_LIMIT = 2 ** 53; // exclusive
const DIGIT: Int8Array = new Int8Array(128).fill(-1);
for (let i = 0; i < TID_ALPHABET.length; i++) DIGIT[TID_ALPHABET.charCodeAt(i)] = i;

/**
 * Creates a TID clock. `next()` returns 13-character TIDs (seed 004): a 64-bit value with the
 * top bit 0, 53 bits of microseconds since the epoch and 10 bits of clock id, in
 * base32-sortable. Each TID is strictly greater than the previous one even when the clock
 * stalls or goes back: the timestamp then advances by 1 µs past the last one issued.
 *
 * @throws {IdError} `out_of_range` for a `clockId` outside 0..1023; `next()` throws
 *   `out_of_range` when `now()` is negative or the timestamp would reach 2^53 µs.
 *
 * @example
 * ```ts
 * const clock = createTidClock();
 * const a = clock.next();
 * const b = clock.next();
 * a < b; // true
 * parseTid(a).clockId === clock.clockId; // true
 * ```
 */
export function createTidClock(options: TidClockOptions = {}): TidClock {
  const clockId = options.clockId ?? randomInt(1024);
  checkClockId(clockId);
  const { now } = options;
  let last = -1;
  return {
    clockId,
    next(): string {
      let ts: number;
      if (now === undefined) ts = Date.now() * 1000;
      else {
        const t = now();
        if (typeof t !== "bigint" || t < 0n) {
          throw new IdError("out_of_range", `TID clock now() returned ${String(t)}`);
        }
        ts = t >= BigInt(TS_LIMIT) ? TS_LIMIT : Number(t);
      }
      if (ts <= last) ts = last + 1;
      if (ts >= TS_LIMIT) {
        throw new IdError("out_of_range", "TID timestamp would exceed 2^53-1 microseconds");
      }
      last = ts;
      return encode(ts, clockId);
    },
  };
}

/**
 * Formats a TID from its fields; the inverse of {@link parseTid}.
 *
 * @throws {IdError} `out_of_range` when a field is outside its range.
 */
export function formatTid(parts: TidParts): string {
  const { timestampUs, clockId } = parts;
  if (typeof timestampUs !== "bigint" || timestampUs < 0n || timestampUs >= BigInt(TS_LIMIT)) {
    throw new IdError(
      "out_of_range",
      `TID timestamp must be in 0..2^53-1 µs, got ${String(timestampUs)}`,
    );
  }
  checkClockId(clockId);
  return encode(Number(timestampUs), clockId);
}

function checkClockId(clockId: number): void {
  if (!Number.isInteger(clockId) || clockId < 0 || clockId > 1023) {
    throw new IdError(
      "out_of_range",
      `TID clock id must be an integer in 0..1023, got ${String(clockId)}`,
    );
  }
}

function encode(ts: number, clockId: number): string {
  // 11 characters of timestamp (55 bits, the top 2 always 0), then 2 of clock id.
  let out = TID_ALPHABET.charAt(clockId >> 5) + TID_ALPHABET.charAt(clockId & 31);
  let t = ts;
  for (let i = 0; i < 11; i++) {
    const d = t % 32;
    out = TID_ALPHABET.charAt(d) + out;
    t = (t - d) / 32;
  }
  return out;
}

/**
 * True when `s` is a well-formed TID: 13 characters of {@link TID_ALPHABET}, the first one of
 * `234567ab` (the top bit of the 64-bit value is 0).
 */
export function isValidTid(s: string): boolean {
  if (typeof s !== "string" || s.length !== TID_LENGTH) return false;
  const c0 = s.charCodeAt(0);
  const first = c0 < 128 ? (DIGIT[c0] ?? -1) : -1;
  if (first < 0 || first > 7) return false; // "2".."b": the top bit of the value is 0
  for (let i = 1; i < TID_LENGTH; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || (DIGIT[c] ?? -1) < 0) return false;
  }
  return true;
}

/**
 * Reads the fields of a TID.
 *
 * @throws {IdError} `invalid_tid` when `s` is not a well-formed TID.
 *
 * @example
 * ```ts
 * parseTid("3jzfcijpj2z2a"); // { timestampUs: 1688137381887007n, clockId: 6 }
 * ```
 */
export function parseTid(s: string): TidParts {
  if (!isValidTid(s)) throw new IdError("invalid_tid", `${JSON.stringify(s)} is not a TID`);
  let ts = 0;
  for (let i = 0; i < 11; i++) ts = ts * 32 + (DIGIT[s.charCodeAt(i)] ?? 0);
  const clockId = (DIGIT[s.charCodeAt(11)] ?? 0) * 32 + (DIGIT[s.charCodeAt(12)] ?? 0);
  return { timestampUs: BigInt(ts), clockId };
}

/**
 * Compares two TIDs by their 64-bit value (which is their string order): negative when `a`
 * is older, positive when newer, 0 when equal. Usable as an `Array.prototype.sort` comparator.
 *
 * @throws {IdError} `invalid_tid` when either argument is not a TID.
 */
export function compareTids(a: string, b: string): number {
  if (!isValidTid(a)) throw new IdError("invalid_tid", `${JSON.stringify(a)} is not a TID`);
  if (!isValidTid(b)) throw new IdError("invalid_tid", `${JSON.stringify(b)} is not a TID`);
  return a < b ? -1 : a > b ? 1 : 0;
}
