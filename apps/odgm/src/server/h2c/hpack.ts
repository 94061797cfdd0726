// HPACK (RFC 7541), the header compression of HTTP/2, for the h2c engine.
//
// The decoder keeps the dynamic table the peer's encoder fills (a ring of entries, evicted by
// size) and decodes every representation, Huffman strings included. It runs once per request,
// so it allocates little: an indexed field pushes the strings already held by the static or
// dynamic table, a literal string is one latin1 slice, and Huffman strings go through an
// 4-bit-at-a-time state machine (built on first use from the RFC 7541 Appendix B code) into a
// shared scratch buffer.
//
// The encoder writes only fully indexed static fields and literals without indexing, without
// Huffman, so it keeps no state and the peer's SETTINGS_HEADER_TABLE_SIZE does not matter.

import { HUFFMAN_CODE_TABLE, HUFFMAN_EOS, HUFFMAN_SYMBOLS } from "./hpack-huffman.js";

/** Malformed header block: the connection must end with COMPRESSION_ERROR (RFC 9113 §4.3). */
export class HpackError extends Error {
  override readonly name = "HpackError";

  /** @param message What is wrong; the message gets the prefix `[compression_error] `. */
  constructor(message: string) {
    super(`[compression_error] ${message}`);
  }
}

/**
 * The decoded header list is larger than the caller's limit (RFC 9113 §6.5.2). The block was
 * decoded to its end first, so the dynamic table stays in step with the peer's encoder: only
 * the stream needs refusing (a 431-like stream error), not the connection.
 */
export class HeaderListTooLargeError extends Error {
  override readonly name = "HeaderListTooLargeError";
}

/** Options of {@link HpackDecoder}. */
export interface HpackDecoderOptions {
  /**
   * SETTINGS_HEADER_TABLE_SIZE this endpoint advertises: the largest dynamic table the peer
   * may use. Default 4096.
   */
  readonly maxTableSize?: number;
}

// ---------------------------------------------------------------------------------------------
// Static table (RFC 7541 Appendix A)

/** Static table entries, index 1 to 61 (index 0 unused). */
const STATIC_TABLE: readonly (readonly [string, string])[] = [
  ["", ""],
  [":authority", ""],
  [":method", "GET"],
  [":method", "POST"],
  [":path", "/"],
  [":path", "/index.html"],
  [":scheme", "http"],
  [":scheme", "https"],
  [":status", "200"],
  [":status", "204"],
  [":status", "206"],
  [":status", "304"],
  [":status", "400"],
  [":status", "404"],
  [":status", "500"],
  ["accept-charset", ""],
  ["accept-encoding", "gzip, deflate"],
  ["accept-language", ""],
  ["accept-ranges", ""],
  ["accept", ""],
  ["access-control-allow-origin", ""],
  ["age", ""],
  ["allow", ""],
  ["authorization", ""],
  ["cache-control", ""],
  ["content-disposition", ""],
  ["content-encoding", ""],
  ["content-language", ""],
  ["content-length", ""],
  ["content-location", ""],
  ["content-range", ""],
  ["content-type", ""],
  ["cookie", ""],
  ["date", ""],
  ["etag", ""],
  ["expect", ""],
  ["expires", ""],
  ["from", ""],
  ["host", ""],
  ["if-match", ""],
  ["if-modified-since", ""],
  ["if-none-match", ""],
  ["if-range", ""],
  ["if-unmodified-since", ""],
  ["last-modified", ""],
  ["link", ""],
  ["location", ""],
  ["max-forwards", ""],
  ["proxy-authenticate", ""],
  ["proxy-authorization", ""],
  ["range", ""],
  ["referer", ""],
  ["refresh", ""],
  ["retry-after", ""],
  ["server", ""],
  ["set-cookie", ""],
  ["strict-transport-security", ""],
  ["transfer-encoding", ""],
  ["user-agent", ""],
  ["vary", ""],
  ["via", ""],
  ["www-authenticate", ""],
];

/** Number of static entries (61); dynamic indexes start after it. */
const STATIC_COUNT = STATIC_TABLE.length - 1;
const STATIC_NAMES: readonly string[] = STATIC_TABLE.map((e) => e[0]);
const STATIC_VALUES: readonly string[] = STATIC_TABLE.map((e) => e[1]);

/** Per-entry overhead of the table size accounting (RFC 7541 §4.1), also of RFC 9113 §6.5.2. */
const ENTRY_OVERHEAD = 32;

// ---------------------------------------------------------------------------------------------
// Huffman decoding (RFC 7541 §5.2, Appendix B)
//
// The code tree has 257 leaves and so 256 inner nodes, numbered 0 (the root) to 255. The state
// machine reads 4 bits at a time: `transitions[state << 4 | nibble]` packs the node after the
// nibble, the symbol completed on the way (at most one, as codes are 5 bits or longer) and a
// failure bit (EOS was completed). A string may end only in the root or in a node reached
// from the root by at most 7 one bits (the padding, a prefix of EOS): `accepting`. (The 4-bit
// table builds in about 2 ms on a cold process; an 8-bit one took 6 to 35 ms and decoded
// typical gRPC headers no faster.)

/** Mask of the next node in a transition. */
const T_NODE = 0xff;
/** A transition's symbol + 1 (0: none) is at bits 8 to 16. */
const T_SYM_SHIFT = 8;
/** Transitions at or above this completed a symbol, or EOS. */
const T_SYM_SHIFT_ONE = 1 << T_SYM_SHIFT;
/** The transition completed EOS. */
const T_FAIL = 1 << 17;

interface HuffmanMachine {
  readonly transitions: Int32Array;
  readonly accepting: Uint8Array;
}

let machine: HuffmanMachine | undefined;

/** Builds the Huffman state machine from the Appendix B code table (once, on first use). */
function huffmanMachine(): HuffmanMachine {
  if (machine !== undefined) return machine;
  // children[2 * node + bit]: an inner node (> 0), a leaf -(symbol + 1), or 0 (absent).
  const children = new Int32Array(2 * 256);
  let nodes = 1;
  for (let sym = 0; sym < HUFFMAN_SYMBOLS; sym++) {
    const code = HUFFMAN_CODE_TABLE[2 * sym] as number;
    const length = HUFFMAN_CODE_TABLE[2 * sym + 1] as number;
    let node = 0;
    for (let i = length - 1; i >= 0; i--) {
      const slot = 2 * node + (Math.floor(code / 2 ** i) & 1);
      if (i === 0) {
        if (children[slot] !== 0) throw new Error("HPACK Huffman table: not a prefix code");
        children[slot] = -(sym + 1);
      } else {
        if (children[slot] === 0) {
          if (nodes === 256) throw new Error("HPACK Huffman table: too many nodes");
          children[slot] = nodes++;
        }
        node = children[slot] as number;
        if (node < 0) throw new Error("HPACK Huffman table: not a prefix code");
      }
    }
  }
  if (nodes !== 256 || children.includes(0)) {
    throw new Error("HPACK Huffman table: not a complete code");
  }
  const accepting = new Uint8Array(256);
  for (let node = 0, depth = 0; depth <= 7; depth++) {
    accepting[node] = 1;
    node = children[2 * node + 1] as number;
  }
  const transitions = new Int32Array(256 * 16);
  for (let state = 0; state < 256; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state;
      let entry = 0;
      for (let bit = 3; bit >= 0; bit--) {
        const next = children[2 * node + ((nibble >> bit) & 1)] as number;
        if (next >= 0) {
          node = next;
        } else if (-next - 1 === HUFFMAN_EOS) {
          entry = T_FAIL;
          break;
        } else {
          entry = -next << T_SYM_SHIFT; // symbol + 1
          node = 0;
        }
      }
      transitions[(state << 4) | nibble] = entry === T_FAIL ? T_FAIL : entry | node;
    }
  }
  machine = { transitions, accepting };
  return machine;
}

const EMPTY: Buffer = Buffer.alloc(0);

/**
 * Output buffer of Huffman decoding, shared by all decoders (decoding is synchronous); a
 * string that needs more than this gets a buffer of its own.
 */
let scratch: Buffer | undefined;
const SCRATCH_SIZE = 4096;

// ---------------------------------------------------------------------------------------------
// Decoder

/** Decodes the header blocks of one connection, in order; it holds the peer's dynamic table. */
export class HpackDecoder {
  readonly #maxTableSize: number;
  /** Current dynamic table size limit: the last size update, else maxTableSize. */
  #limit: number;
  /** Sum of the entry sizes in the dynamic table. */
  #size = 0;
  /** Dynamic table as a ring (capacity a power of 2): #newest is the slot of index 62. */
  #names: string[] = new Array<string>(16).fill("");
  #values: string[] = new Array<string>(16).fill("");
  #mask = 15;
  #newest = 15;
  #count = 0;
  /** The block being decoded and the read position in it. */
  #block: Buffer = EMPTY;
  #pos = 0;

  /** @param options See {@link HpackDecoderOptions}. */
  constructor(options?: HpackDecoderOptions) {
    const max = options?.maxTableSize ?? 4096;
    if (!Number.isSafeInteger(max) || max < 0) {
      throw new RangeError(`maxTableSize must be a non-negative integer, not ${max}`);
    }
    this.#maxTableSize = max;
    this.#limit = max;
  }

  /**
   * Decodes one complete header block (HEADERS + CONTINUATION payloads joined, padding and
   * priority removed). Returns a flat list `[name0, value0, name1, value1, …]` in wire order.
   * Names and values are latin1 strings (one char per octet), as Node's http2 gives them.
   *
   * @param block The header block.
   * @param maxHeaderListSize Largest allowed header list size: the sum over the fields of
   *   name length + value length + 32 (RFC 9113 §6.5.2).
   * @throws {HpackError} On a malformed block; the connection must end with COMPRESSION_ERROR.
   * @throws {HeaderListTooLargeError} When the list is over `maxHeaderListSize`; the whole
   *   block was processed into the dynamic table first, so the connection can go on.
   */
  decode(block: Uint8Array, maxHeaderListSize: number): string[] {
    const buf = Buffer.isBuffer(block)
      ? block
      : Buffer.from(block.buffer, block.byteOffset, block.byteLength);
    const end = buf.length;
    const out: string[] = [];
    let listSize = 0;
    let fields = false;
    this.#block = buf;
    this.#pos = 0;
    while (this.#pos < end) {
      const first = buf[this.#pos] as number;
      let name: string;
      let value: string;
      if (first >= 0x80) {
        // Indexed field (§6.1).
        let index = first & 0x7f;
        if (index === 0x7f) index = this.#integer(7);
        else this.#pos++;
        if (index === 0) throw new HpackError("indexed field with index 0");
        if (index <= STATIC_COUNT) {
          name = STATIC_NAMES[index] as string;
          value = STATIC_VALUES[index] as string;
        } else {
          const slot = this.#slot(index);
          name = this.#names[slot] as string;
          value = this.#values[slot] as string;
        }
      } else if (first >= 0x40) {
        // Literal with incremental indexing (§6.2.1).
        const index = this.#integer(6);
        name = index === 0 ? this.#string() : this.#name(index);
        value = this.#string();
        this.#insert(name, value);
      } else if (first >= 0x20) {
        // Dynamic table size update (§6.3), only before the first field (§4.2).
        if (fields) throw new HpackError("dynamic table size update after a header field");
        const size = this.#integer(5);
        if (size > this.#maxTableSize) {
          throw new HpackError(
            `dynamic table size update to ${size}, above the advertised ${this.#maxTableSize}`,
          );
        }
        this.#limit = size;
        this.#evict(size);
        continue;
      } else {
        // Literal without indexing (0000, §6.2.2) or never indexed (0001, §6.2.3).
        const index = this.#integer(4);
        name = index === 0 ? this.#string() : this.#name(index);
        value = this.#string();
      }
      fields = true;
      listSize += name.length + value.length + ENTRY_OVERHEAD;
      // Past the limit the rest is still decoded (for the table), but no longer collected.
      if (listSize <= maxHeaderListSize) out.push(name, value);
    }
    this.#block = EMPTY;
    if (listSize > maxHeaderListSize) {
      throw new HeaderListTooLargeError(
        `header list of ${listSize} octets, above the limit of ${maxHeaderListSize}`,
      );
    }
    return out;
  }

  /** Reads an integer with an N-bit prefix (§5.1) at the read position. */
  #integer(prefix: number): number {
    const buf = this.#block;
    const end = buf.length;
    let pos = this.#pos;
    const max = (1 << prefix) - 1;
    let value = (buf[pos++] as number) & max;
    if (value === max) {
      let factor = 1;
      let octet: number;
      do {
        if (pos >= end) throw new HpackError("integer runs past the end of the block");
        if (factor > 2 ** 28) throw new HpackError("integer encoded in too many octets");
        octet = buf[pos++] as number;
        value += (octet & 0x7f) * factor;
        factor *= 128;
      } while ((octet & 0x80) !== 0);
      if (value > 0x7fff_ffff) throw new HpackError(`integer ${value} above 2^31 - 1`);
    }
    this.#pos = pos;
    return value;
  }

  /** Reads a string literal (§5.2) at the read position. */
  #string(): string {
    const buf = this.#block;
    if (this.#pos >= buf.length) throw new HpackError("string literal missing at end of block");
    const huffman = (buf[this.#pos] as number) >= 0x80;
    const length = this.#integer(7);
    const from = this.#pos;
    const to = from + length;
    if (to > buf.length) throw new HpackError("string literal runs past the end of the block");
    this.#pos = to;
    if (length === 0) return "";
    return huffman ? this.#huffman(buf, from, to) : buf.toString("latin1", from, to);
  }

  /** Decodes the Huffman-coded octets `buf[from, to)`. */
  #huffman(buf: Buffer, from: number, to: number): string {
    const { transitions, accepting } = huffmanMachine();
    // At most 2 symbols per octet (in total at most 8 per 5 octets).
    const need = 2 * (to - from);
    scratch ??= Buffer.allocUnsafeSlow(SCRATCH_SIZE);
    const out = need <= SCRATCH_SIZE ? scratch : Buffer.allocUnsafeSlow(need);
    let n = 0;
    let state = 0;
    for (let i = from; i < to; i++) {
      const octet = buf[i] as number;
      let t = transitions[(state << 4) | (octet >> 4)] as number;
      if (t >= T_SYM_SHIFT_ONE) {
        if ((t & T_FAIL) !== 0) throw new HpackError("EOS inside a Huffman-coded string");
        out[n++] = (t >> T_SYM_SHIFT) - 1;
      }
      t = transitions[((t & T_NODE) << 4) | (octet & 15)] as number;
      if (t >= T_SYM_SHIFT_ONE) {
        if ((t & T_FAIL) !== 0) throw new HpackError("EOS inside a Huffman-coded string");
        out[n++] = (t >> T_SYM_SHIFT) - 1;
      }
      state = t & T_NODE;
    }
    if (accepting[state] === 0) {
      throw new HpackError("Huffman padding longer than 7 bits or not all ones");
    }
    return out.toString("latin1", 0, n);
  }

  /** The name at a static or dynamic index (for a literal with an indexed name). */
  #name(index: number): string {
    return index <= STATIC_COUNT
      ? (STATIC_NAMES[index] as string)
      : (this.#names[this.#slot(index)] as string);
  }

  /** The ring slot of dynamic index `index` (> 61). */
  #slot(index: number): number {
    const age = index - STATIC_COUNT - 1;
    if (age >= this.#count) {
      throw new HpackError(
        `index ${index} beyond the tables (${STATIC_COUNT} static, ${this.#count} dynamic entries)`,
      );
    }
    return (this.#newest - age) & this.#mask;
  }

  /** Adds an entry to the dynamic table, evicting the oldest as needed (§4.4). */
  #insert(name: string, value: string): void {
    const size = name.length + value.length + ENTRY_OVERHEAD;
    if (size > this.#limit) {
      // Larger than the table: it empties the table and is not added.
      this.#evict(0);
      return;
    }
    this.#evict(this.#limit - size);
    if (this.#count === this.#names.length) this.#grow();
    const slot = (this.#newest + 1) & this.#mask;
    this.#names[slot] = name;
    this.#values[slot] = value;
    this.#newest = slot;
    this.#count++;
    this.#size += size;
  }

  /** Evicts the oldest entries until the table size is at most `target`. */
  #evict(target: number): void {
    const names = this.#names;
    const values = this.#values;
    while (this.#size > target && this.#count > 0) {
      const slot = (this.#newest - this.#count + 1) & this.#mask;
      this.#size -= (names[slot] as string).length + (values[slot] as string).length;
      this.#size -= ENTRY_OVERHEAD;
      names[slot] = "";
      values[slot] = "";
      this.#count--;
    }
  }

  /** Doubles the ring, oldest entry first in slot 0. */
  #grow(): void {
    const capacity = this.#names.length * 2;
    const names = new Array<string>(capacity).fill("");
    const values = new Array<string>(capacity).fill("");
    for (let age = this.#count - 1, i = 0; age >= 0; age--, i++) {
      const slot = (this.#newest - age) & this.#mask;
      names[i] = this.#names[slot] as string;
      values[i] = this.#values[slot] as string;
    }
    this.#names = names;
    this.#values = values;
    this.#mask = capacity - 1;
    this.#newest = this.#count - 1;
  }
}

// ---------------------------------------------------------------------------------------------
// Encoder

/** Static lookup for the encoder: a name's first index, and the index of each (name, value). */
const STATIC_LOOKUP = new Map<string, { readonly index: number; values: Map<string, number> }>();
for (let i = 1; i <= STATIC_COUNT; i++) {
  const [name, value] = STATIC_TABLE[i] as readonly [string, string];
  let entry = STATIC_LOOKUP.get(name);
  if (entry === undefined) {
    entry = { index: i, values: new Map() };
    STATIC_LOOKUP.set(name, entry);
  }
  entry.values.set(value, i);
}

/** Encodes header blocks; stateless (no dynamic table, no Huffman). */
export class HpackEncoder {
  /**
   * Encodes a flat list `[name, value, …]` as one header block. Uses: the fully indexed static
   * entry when name and value match a static table entry exactly (e.g. `:status` `200` →
   * 0x88); otherwise "literal without indexing" with the name indexed from the static table
   * when the name is in it, else a literal name; no Huffman, never the dynamic table (so the
   * encoder keeps no state and the peer's table size does not matter). Names are written as
   * given (caller passes lowercase); names and values are written as latin1 (one octet per
   * char: chars above U+00FF lose their high bits, so the caller must not pass them).
   *
   * @throws {RangeError} When the list has an odd length.
   */
  encode(headers: readonly string[]): Buffer {
    const count = headers.length;
    if ((count & 1) !== 0) throw new RangeError("header list must have an even length");
    // Per field at most 1 + (1 + 5 + name) + (1 + 5 + value) octets: 7 + length per string.
    let bound = 0;
    for (let i = 0; i < count; i++) bound += (headers[i] as string).length + 7;
    const out = Buffer.allocUnsafe(bound);
    let pos = 0;
    for (let i = 0; i < count; i += 2) {
      const name = headers[i] as string;
      const value = headers[i + 1] as string;
      const known = STATIC_LOOKUP.get(name);
      if (known !== undefined) {
        const full = known.values.get(value);
        if (full !== undefined) {
          out[pos++] = 0x80 | full; // all static indexes are below 127
          continue;
        }
        // Literal without indexing, indexed name: 0000 + 4-bit prefix index.
        if (known.index < 15) out[pos++] = known.index;
        else {
          out[pos++] = 15;
          out[pos++] = known.index - 15; // static indexes are at most 61: one octet
        }
      } else {
        out[pos++] = 0;
        pos = writeString(out, pos, name);
      }
      pos = writeString(out, pos, value);
    }
    return out.subarray(0, pos);
  }
}

/** Writes a raw (non-Huffman) string literal: 7-bit prefix length, then latin1 octets. */
function writeString(out: Buffer, at: number, s: string): number {
  let pos = at;
  const length = s.length;
  if (length < 0x7f) out[pos++] = length;
  else {
    out[pos++] = 0x7f;
    let rest = length - 0x7f;
    while (rest >= 0x80) {
      out[pos++] = (rest & 0x7f) | 0x80;
      rest >>>= 7;
    }
    out[pos++] = rest;
  }
  return length === 0 ? pos : pos + out.write(s, pos, length, "latin1");
}
