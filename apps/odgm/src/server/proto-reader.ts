// Helpers of the hand-written protobuf readers of hot messages (raft-wire's RaftBatch,
// request-decoders' SetKeyRequest): protobuf-es's BinaryReader reads the values; these
// check the structure as strictly as its reflective `fromBinary`, or more.
import type { BinaryReader, WireType } from "@bufbuild/protobuf/wire";

/** Bytes a hand-written reader refuses. */
export class ProtoReadError extends Error {
  override readonly name = "ProtoReadError";
}

/**
 * Skips a field the message does not have. Each message read by hand numbers its fields
 * from 1 to `fields`: one of those met with another wire type is malformed, not unknown.
 */
export function skipField(r: BinaryReader, field: number, wt: WireType, fields: number): void {
  if (field >= 1 && field <= fields) {
    throw new ProtoReadError(`field ${field} has the wrong wire type (${wt})`);
  }
  r.skip(wt, field);
}

/** The end of the length-delimited field whose length comes next. */
export function endOf(r: BinaryReader): number {
  const len = r.uint32();
  const end = r.pos + len;
  if (end > r.len) throw new ProtoReadError("a length runs past the end of the message");
  return end;
}

/** `value` once the reader stands exactly at `end` (a field ran past its message otherwise). */
export function endAt<T>(r: BinaryReader, end: number, value: T): T {
  if (r.pos !== end) throw new ProtoReadError("a field runs past the end of its message");
  return value;
}

/**
 * Refuses a singular message field given twice, which protobuf would merge and no writer
 * of ours sends.
 */
export function once(seen: unknown, what: string): void {
  if (seen !== undefined) throw new ProtoReadError(`${what} given twice`);
}

/** The value of an unset bytes field (shared: nobody writes into it). */
export const EMPTY_BYTES: Uint8Array = new Uint8Array(0);
