import { fromBinary } from "@bufbuild/protobuf";
import { SetKeyRequestSchema, ValType } from "@oprc/grpc-api";
import { describe, expect, it } from "vitest";
import {
  concatFrames,
  encodeEtcdPut,
  encodeSetKeyRequest,
  grpcFrame,
  splitFrames,
} from "./body-files.js";

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

describe("grpcFrame", () => {
  it("prefixes flag 0 and the big-endian length", () => {
    expect(hex(grpcFrame(Uint8Array.of(8, 1)))).toBe("00000000020801");
    expect(hex(grpcFrame(new Uint8Array(0)))).toBe("0000000000");
    expect(hex(grpcFrame(new Uint8Array(300)).subarray(0, 5))).toBe("000000012c");
  });
  it("round-trips through concatFrames and splitFrames", () => {
    const msgs = [Uint8Array.of(1), new Uint8Array(0), new Uint8Array(200).fill(7)];
    const back = splitFrames(concatFrames(msgs.map(grpcFrame)));
    expect(back.map(hex)).toEqual(msgs.map(hex));
  });
  it("rejects truncated or compressed frames", () => {
    expect(() => splitFrames(Uint8Array.of(0, 0, 0))).toThrow(/truncated gRPC frame prefix/);
    expect(() => splitFrames(Uint8Array.of(0, 0, 0, 0, 2, 1))).toThrow(/truncated gRPC frame/);
    expect(() => splitFrames(Uint8Array.of(1, 0, 0, 0, 0))).toThrow(/compressed/);
  });
});

describe("encodeSetKeyRequest", () => {
  it("encodes the SetValue the benchmark sends, decodable by the generated schema", () => {
    const value = bytes("abcdefghijklmnop");
    const msg = encodeSetKeyRequest({
      collection: "bench",
      partition: 0,
      objectId: 1_000_001n,
      key: "f0",
      value,
    });
    const r = fromBinary(SetKeyRequestSchema, msg);
    expect(r.clsId).toBe("bench");
    expect(r.partitionId).toBe(0);
    expect(r.objectId).toBe(1_000_001n);
    expect(r.keyStr).toBe("f0");
    expect(r.objectIdStr).toBeUndefined();
    expect(r.value?.type).toBe(ValType.BYTE);
    expect(hex(r.value?.data ?? new Uint8Array())).toBe(hex(value));
  });
  it("gives distinct bodies to distinct objects", () => {
    const t = { collection: "bench", partition: 0, key: "f0", value: bytes("v") };
    const a = hex(encodeSetKeyRequest({ ...t, objectId: 1n }));
    const b = hex(encodeSetKeyRequest({ ...t, objectId: 2n }));
    expect(a).not.toBe(b);
  });
});

describe("encodeEtcdPut", () => {
  it("writes key (field 1) and value (field 2) as length-delimited bytes", () => {
    expect(hex(encodeEtcdPut(bytes("k"), bytes("abc")))).toBe("0a016b1203616263");
  });
  it("uses multi-byte varint lengths past 127 bytes", () => {
    const out = encodeEtcdPut(bytes("k"), new Uint8Array(200));
    expect(hex(out.subarray(0, 6))).toBe("0a016b12c801");
    expect(out.length).toBe(6 + 200);
  });
});
