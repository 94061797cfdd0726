// Request bodies for the C load generators (h2load, grpc-load): gRPC frames of the
// messages the writes benchmark sends, encoded once before anything is timed.
import { writeFileSync } from "node:fs";
import { create, toBinary } from "@bufbuild/protobuf";
import { SetKeyRequestSchema, ValDataSchema, ValType } from "@oprc/grpc-api";

/**
 * One gRPC length-prefixed message: flag byte 0 (not compressed), 4-byte big-endian
 * length, the message bytes. A unary request body is exactly one such frame.
 *
 * @example
 * grpcFrame(new Uint8Array([8, 1])); // 00 00 00 00 02 08 01
 */
export function grpcFrame(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + message.length);
  new DataView(out.buffer).setUint32(1, message.length);
  out.set(message, 5);
  return out;
}

/** Concatenates frames into one buffer: the file format grpc-load reads (request i sends frame i mod N). */
export function concatFrames(frames: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const f of frames) n += f.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const f of frames) {
    out.set(f, off);
    off += f.length;
  }
  return out;
}

/** Splits a buffer of concatenated gRPC frames back into messages (the inverse of {@link concatFrames} of {@link grpcFrame}s). */
export function splitFrames(buf: Uint8Array): Uint8Array[] {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const out: Uint8Array[] = [];
  let off = 0;
  while (off < buf.length) {
    if (buf.length - off < 5) throw new Error(`truncated gRPC frame prefix at byte ${off}`);
    if (buf[off] !== 0) throw new Error(`compressed gRPC frame at byte ${off}`);
    const n = view.getUint32(off + 1);
    if (buf.length - off - 5 < n) throw new Error(`truncated gRPC frame at byte ${off}`);
    out.push(buf.subarray(off + 5, off + 5 + n));
    off += 5 + n;
  }
  return out;
}

/** What an odgm `SetValue` of the writes benchmark addresses. */
export interface SetValueTarget {
  readonly collection: string;
  readonly partition: number;
  /** Numeric object id (`object_id`). */
  readonly objectId: bigint;
  /** String entry key (`key_str`). */
  readonly key: string;
  /** Value bytes (`VAL_TYPE_BYTE`). */
  readonly value: Uint8Array;
}

/** `oprc.SetKeyRequest` for `target`, encoded with the repo's generated protobuf-es code. */
export function encodeSetKeyRequest(target: SetValueTarget): Uint8Array {
  return toBinary(
    SetKeyRequestSchema,
    create(SetKeyRequestSchema, {
      clsId: target.collection,
      partitionId: target.partition,
      objectId: target.objectId,
      keyStr: target.key,
      value: create(ValDataSchema, { data: target.value, type: ValType.BYTE }),
    }),
  );
}

function varint(n: number): number[] {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`varint of ${n}`);
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

/**
 * etcd `etcdserverpb.PutRequest{key = 1 bytes, value = 2 bytes}`, encoded by hand (two
 * length-delimited fields; the repo has no etcd protos): `0a len key 12 len value`.
 */
export function encodeEtcdPut(key: Uint8Array, value: Uint8Array): Uint8Array {
  return Uint8Array.from([
    0x0a,
    ...varint(key.length),
    ...key,
    0x12,
    ...varint(value.length),
    ...value,
  ]);
}

/** Writes `frames` to `file` in the grpc-load/h2load body format; returns the byte count. */
export function writeBodyFile(file: string, frames: readonly Uint8Array[]): number {
  const buf = concatFrames(frames);
  writeFileSync(file, buf);
  return buf.length;
}
