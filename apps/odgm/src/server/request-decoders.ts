// Hand-written readers of the hottest DataService requests, for the gRPC fast path
// (FastPathService.decoders): each reads what protobuf-es's `fromBinary` reads for its type,
// without walking the schema for every field of every call. Unknown fields are skipped.
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import type { SetKeyRequest, ValData } from "@oprc/grpc-api";
import { EMPTY_BYTES, endAt, endOf, once, skipField } from "./proto-reader.js";

/** A `SetKeyRequest` (SetValue's request) from its protobuf bytes. */
export function decodeSetKeyRequest(bytes: Uint8Array): SetKeyRequest {
  const r = new BinaryReader(bytes);
  const req: SetKeyRequest = {
    $typeName: "oprc.SetKeyRequest",
    clsId: "",
    partitionId: 0,
    objectId: 0n,
    key: 0,
  };
  while (r.pos < r.len) {
    const [field, wt] = r.tag();
    if (field === 1 && wt === WireType.LengthDelimited) req.clsId = r.string(true);
    else if (field === 2 && wt === WireType.Varint) req.partitionId = r.int32();
    else if (field === 3 && wt === WireType.Varint) req.objectId = BigInt(r.uint64());
    else if (field === 4 && wt === WireType.Varint) req.key = r.uint32();
    else if (field === 5 && wt === WireType.LengthDelimited) {
      once(req.value, "a value");
      req.value = valData(r);
    } else if (field === 6 && wt === WireType.LengthDelimited) req.keyStr = r.string(true);
    else if (field === 7 && wt === WireType.LengthDelimited) req.objectIdStr = r.string(true);
    else skipField(r, field, wt, 7);
  }
  return req;
}

function valData(r: BinaryReader): ValData {
  const end = endOf(r);
  const v: ValData = { $typeName: "oprc.ValData", data: EMPTY_BYTES, type: 0 };
  while (r.pos < end) {
    const [field, wt] = r.tag();
    if (field === 1 && wt === WireType.LengthDelimited) v.data = r.bytes();
    else if (field === 2 && wt === WireType.Varint) v.type = r.int32();
    else skipField(r, field, wt, 2);
  }
  return endAt(r, end, v);
}
