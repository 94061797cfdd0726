/**
 * The record-type byte that follows an object id's `0x00` terminator (spec §3).
 *
 * Allocated: `0x00` metadata, `0x01` event config, `0x02` view blob (reserved, never
 * written), `0x10` numeric entry, `0x11` string entry. Any byte with bit `0x80` set is an
 * extension record followed by a varint extension header. Every other value is
 * unallocated and rejected by {@link decodeKey} as `unknown_record`.
 */
export const RecordType: {
  /** `<id> 00 00` — the object's metadata (`ObjectMetaRecord`). */
  readonly Metadata: 0x00;
  /** `<id> 00 01` — the object's event config (`ObjectEvent`). */
  readonly EventConfig: 0x01;
  /** `<id> 00 02` — reserved for a materialized view blob; never written today. */
  readonly ViewBlob: 0x02;
  /** `<id> 00 10 <u32 BE>` — an entry with a numeric key. */
  readonly NumericEntry: 0x10;
  /** `<id> 00 11 <varint length> <utf8>` — an entry with a string key. */
  readonly StringEntry: 0x11;
  /** Bit marking an extension record type (`0x80`–`0xff`). */
  readonly ExtensionBit: 0x80;
} = {
  Metadata: 0x00,
  EventConfig: 0x01,
  ViewBlob: 0x02,
  NumericEntry: 0x10,
  StringEntry: 0x11,
  ExtensionBit: 0x80,
};
