import http2 from "node:http2";
import net, { type AddressInfo } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLIENT_PREFACE as PREFACE } from "./h2-frames.js";
import {
  HeaderListTooLargeError,
  HpackDecoder,
  type HpackDecoderOptions,
  HpackEncoder,
  HpackError,
} from "./hpack.js";
import { HUFFMAN_CODE_TABLE, HUFFMAN_EOS, HUFFMAN_SYMBOLS } from "./hpack-huffman.js";

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ""), "hex");
const NO_LIMIT = Number.MAX_SAFE_INTEGER;

/** Decodes `blocks` in order on one decoder. */
function decodeAll(blocks: readonly string[], options?: HpackDecoderOptions): string[][] {
  const d = new HpackDecoder(options);
  return blocks.map((b) => d.decode(hex(b), NO_LIMIT));
}

/** Test-only Huffman encoder over the Appendix B table (bit string; fine for tests). */
function huffmanEncode(octets: Uint8Array): Buffer {
  let bits = "";
  for (const o of octets) {
    const code = HUFFMAN_CODE_TABLE[2 * o] as number;
    const length = HUFFMAN_CODE_TABLE[2 * o + 1] as number;
    bits += code.toString(2).padStart(length, "0");
  }
  bits += "1".repeat((8 - (bits.length % 8)) % 8);
  const out = Buffer.alloc(bits.length / 8);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(bits.slice(8 * i, 8 * i + 8), 2);
  return out;
}

/** A "literal without indexing, literal name" field whose value is the given string octets. */
function literalField(name: string, value: Buffer, huffman: boolean): Buffer {
  const length = value.length;
  if (length >= 127) throw new Error("test helper: short values only");
  return Buffer.concat([
    Buffer.from([0x00, name.length]),
    Buffer.from(name, "latin1"),
    Buffer.from([(huffman ? 0x80 : 0) | length]),
    value,
  ]);
}

describe("the Huffman code table (RFC 7541 Appendix B)", () => {
  it("has 257 codes forming a complete prefix code (Kraft sum exactly 1)", () => {
    expect(HUFFMAN_SYMBOLS).toBe(257);
    expect(HUFFMAN_CODE_TABLE.length).toBe(2 * 257);
    let kraft = 0;
    const codes = new Set<string>();
    for (let sym = 0; sym < 257; sym++) {
      const code = HUFFMAN_CODE_TABLE[2 * sym] as number;
      const length = HUFFMAN_CODE_TABLE[2 * sym + 1] as number;
      expect(length).toBeGreaterThanOrEqual(5);
      expect(length).toBeLessThanOrEqual(30);
      expect(code).toBeLessThan(2 ** length);
      kraft += 2 ** -length; // exact in binary floating point: all terms are powers of 2
      codes.add(code.toString(2).padStart(length, "0"));
    }
    expect(kraft).toBe(1);
    expect(codes.size).toBe(257);
    for (const c of codes) {
      for (let i = 1; i < c.length; i++) expect(codes.has(c.slice(0, i))).toBe(false);
    }
  });

  it("matches sampled rows of the RFC", () => {
    const rows: [number, number, number][] = [
      [0, 0x1ff8, 13],
      [10, 0x3ffffffc, 30],
      [32, 0x14, 6],
      [48, 0x0, 5],
      [97, 0x3, 5],
      [122, 0x7b, 7],
      [255, 0x3ffffee, 26],
      [HUFFMAN_EOS, 0x3fffffff, 30],
    ];
    for (const [sym, code, length] of rows) {
      expect([sym, HUFFMAN_CODE_TABLE[2 * sym], HUFFMAN_CODE_TABLE[2 * sym + 1]]).toEqual([
        sym,
        code,
        length,
      ]);
    }
  });
});

describe("HpackDecoder: RFC 7541 Appendix C", () => {
  it("C.2.1 literal with indexing, then the new entry is index 62", () => {
    const d = new HpackDecoder();
    expect(
      d.decode(hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"), NO_LIMIT),
    ).toEqual(["custom-key", "custom-header"]);
    expect(d.decode(hex("be"), NO_LIMIT)).toEqual(["custom-key", "custom-header"]);
  });

  it("C.2.2 literal without indexing adds nothing", () => {
    const d = new HpackDecoder();
    expect(d.decode(hex("040c 2f73 616d 706c 652f 7061 7468"), NO_LIMIT)).toEqual([
      ":path",
      "/sample/path",
    ]);
    expect(() => d.decode(hex("be"), NO_LIMIT)).toThrow(HpackError);
  });

  it("C.2.3 literal never indexed adds nothing", () => {
    const d = new HpackDecoder();
    expect(d.decode(hex("1008 7061 7373 776f 7264 0673 6563 7265 74"), NO_LIMIT)).toEqual([
      "password",
      "secret",
    ]);
    expect(() => d.decode(hex("be"), NO_LIMIT)).toThrow(HpackError);
  });

  it("C.2.4 indexed field", () => {
    expect(new HpackDecoder().decode(hex("82"), NO_LIMIT)).toEqual([":method", "GET"]);
  });

  const requests = [
    [":method", "GET", ":scheme", "http", ":path", "/", ":authority", "www.example.com"],
    [
      ...[":method", "GET", ":scheme", "http", ":path", "/", ":authority", "www.example.com"],
      ...["cache-control", "no-cache"],
    ],
    [
      ...[":method", "GET", ":scheme", "https", ":path", "/index.html"],
      ...[":authority", "www.example.com", "custom-key", "custom-value"],
    ],
  ];
  // After the third request: [62] custom-key: custom-value, [63] cache-control: no-cache,
  // [64] :authority: www.example.com (table size 164).
  const requestTable = [
    ...["custom-key", "custom-value", "cache-control", "no-cache"],
    ...[":authority", "www.example.com"],
  ];

  it("C.3 requests without Huffman, one dynamic table", () => {
    const blocks = [
      "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
      "8286 84be 5808 6e6f 2d63 6163 6865",
      "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
      "bebf c0",
    ];
    expect(decodeAll(blocks)).toEqual([...requests, requestTable]);
  });

  it("C.4 requests with Huffman, one dynamic table", () => {
    const blocks = [
      "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
      "8286 84be 5886 a8eb 1064 9cbf",
      "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
      "bebf c0",
    ];
    expect(decodeAll(blocks)).toEqual([...requests, requestTable]);
  });

  const date1 = "Mon, 21 Oct 2013 20:13:21 GMT";
  const date2 = "Mon, 21 Oct 2013 20:13:22 GMT";
  const location = "https://www.example.com";
  const cookie = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
  const responses = [
    [":status", "302", "cache-control", "private", "date", date1, "location", location],
    [":status", "307", "cache-control", "private", "date", date1, "location", location],
    [
      ...[":status", "200", "cache-control", "private", "date", date2, "location", location],
      ...["content-encoding", "gzip", "set-cookie", cookie],
    ],
    // The table after the third response (size 215): evictions left three entries.
    ["set-cookie", cookie, "content-encoding", "gzip", "date", date2],
  ];

  it("C.5 responses without Huffman, a 256-octet table that evicts", () => {
    const blocks = [
      `4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
       2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
       6c65 2e63 6f6d`,
      "4803 3330 37c1 c0bf",
      `88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
       54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
       5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
       3d31`,
      "bebf c0",
    ];
    const d = new HpackDecoder({ maxTableSize: 256 });
    expect(blocks.map((b) => d.decode(hex(b), NO_LIMIT))).toEqual(responses);
    expect(() => d.decode(hex("c1"), NO_LIMIT)).toThrow(HpackError); // evicted
  });

  it("C.6 responses with Huffman, a 256-octet table that evicts", () => {
    const blocks = [
      `4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
       2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3`,
      "4883 640e ffc1 c0bf",
      `88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
       77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
       9587 3160 65c0 03ed 4ee5 b106 3d50 07`,
      "bebf c0",
    ];
    const d = new HpackDecoder({ maxTableSize: 256 });
    expect(blocks.map((b) => d.decode(hex(b), NO_LIMIT))).toEqual(responses);
    expect(() => d.decode(hex("c1"), NO_LIMIT)).toThrow(HpackError); // evicted
  });
});

describe("HpackDecoder: table management", () => {
  // Literal with indexing, literal name "k", value "v": entry size 34.
  const addKv = "4001 6b01 76";

  it("a size update evicts, and several updates may open a block", () => {
    const d = new HpackDecoder();
    expect(d.decode(hex(addKv), NO_LIMIT)).toEqual(["k", "v"]);
    // Size 0 (evicts all), then 4096 (= 31 + 0x61 + 0x1f * 128), then a field.
    expect(d.decode(hex("20 3fe11f 82"), NO_LIMIT)).toEqual([":method", "GET"]);
    expect(() => d.decode(hex("be"), NO_LIMIT)).toThrow(HpackError);
    // The limit now is 4096 again: new entries go in.
    expect(d.decode(hex(addKv), NO_LIMIT)).toEqual(["k", "v"]);
    expect(d.decode(hex("be"), NO_LIMIT)).toEqual(["k", "v"]);
  });

  it("a smaller size update evicts only what no longer fits", () => {
    const d = new HpackDecoder();
    d.decode(hex(`${addKv} 4001 6b01 77`), NO_LIMIT); // k: v, then k: w (68 octets)
    expect(d.decode(hex("be bf"), NO_LIMIT)).toEqual(["k", "w", "k", "v"]);
    expect(d.decode(hex("3f 09 be"), NO_LIMIT)).toEqual(["k", "w"]); // size 40
    expect(() => d.decode(hex("bf"), NO_LIMIT)).toThrow(HpackError);
    // Entries of 34 octets: the next insertion evicts k: w.
    expect(d.decode(hex(`${addKv} be`), NO_LIMIT)).toEqual(["k", "v", "k", "v"]);
    expect(() => d.decode(hex("bf"), NO_LIMIT)).toThrow(HpackError);
  });

  it("an entry larger than the table empties it and is not added", () => {
    const d = new HpackDecoder({ maxTableSize: 40 });
    d.decode(hex(addKv), NO_LIMIT);
    expect(d.decode(hex("be"), NO_LIMIT)).toEqual(["k", "v"]);
    // "k" + 8-octet value: 41 > 40.
    expect(d.decode(hex("4001 6b08 3132 3334 3536 3738"), NO_LIMIT)).toEqual(["k", "12345678"]);
    expect(() => d.decode(hex("be"), NO_LIMIT)).toThrow(HpackError);
  });

  it("keeps many entries in order (the ring grows) and evicts the oldest", () => {
    const d = new HpackDecoder();
    // 100 entries of 32 + 2 + 2 = 36 octets: 3600 fit in 4096.
    for (let i = 0; i < 100; i++) {
      const v = String(i).padStart(2, "0");
      d.decode(Buffer.concat([hex("4002 6b6b 02"), Buffer.from(v)]), NO_LIMIT);
    }
    expect(d.decode(hex("be"), NO_LIMIT)).toEqual(["kk", "99"]);
    expect(d.decode(Buffer.from([0xff, 100 - 0x7f + 61]), NO_LIMIT)).toEqual(["kk", "00"]);
    // 14 more: 113 * 36 = 4068 fits, 114 * 36 = 4104 does not, so only "00" went.
    for (let i = 0; i < 14; i++) d.decode(hex("4002 6b6b 0278 78"), NO_LIMIT);
    expect(d.decode(hex("be"), NO_LIMIT)).toEqual(["kk", "xx"]);
    expect(d.decode(Buffer.from([0xff, 113 - 0x7f + 61]), NO_LIMIT)).toEqual(["kk", "01"]);
    expect(() => d.decode(Buffer.from([0xff, 114 - 0x7f + 61]), NO_LIMIT)).toThrow(HpackError);
  });

  it("takes a plain Uint8Array view into a larger buffer", () => {
    const backing = new Uint8Array([0xaa, 0x82, 0x84, 0xaa]);
    expect(new HpackDecoder().decode(backing.subarray(1, 3), NO_LIMIT)).toEqual([
      ":method",
      "GET",
      ":path",
      "/",
    ]);
  });

  it("decodes multi-octet integers (RFC 7541 C.1.2 style) in string lengths", () => {
    const value = "x".repeat(1337);
    // Literal without indexing, name index 4 (:path), value length 1337 = 127 + 1210.
    const block = Buffer.concat([hex("04 7f ba 09"), Buffer.from(value)]);
    expect(new HpackDecoder().decode(block, NO_LIMIT)).toEqual([":path", value]);
  });
});

describe("HpackDecoder refuses malformed blocks", () => {
  const bad: [string, string][] = [
    ["index 0", "80"],
    ["an index beyond the static table with an empty dynamic table", "be"],
    ["an index far beyond the tables", "ff 80 01"],
    ["a literal name at an index beyond the tables", "7e 01 61"],
    ["a table size update above the maximum", "3f e2 1f"], // 4097
    ["a table size update after a field", "82 20"],
    ["a truncated integer (prefix full, no continuation)", "ff"],
    ["a truncated integer (continuation bit set at the end)", "ff 80"],
    ["an integer in too many octets", "7f 80 80 80 80 80 01"],
    ["a missing string", "00"],
    ["a missing value", "00 01 61"],
    ["a truncated string", "40 05 61 62"],
    ["a truncated string length", "00 7f"],
    ["EOS inside a Huffman string", "00 01 61 84 ff ff ff ff"],
    ["EOS then padding", "00 01 61 85 ff ff ff ff ff"],
    ["Huffman padding of zeros", "00 01 61 81 00"],
    ["Huffman padding not all ones", "00 01 61 81 1e"], // 'a' (00011) then 110
    ["Huffman padding of 8 bits", "00 01 61 82 1f ff"], // 'a' then 3 + 8 ones
    ["Huffman padding of a whole octet", "00 01 61 81 ff"],
  ];
  for (const [what, block] of bad) {
    it(what, () => {
      const d = new HpackDecoder();
      expect(() => d.decode(hex(block), NO_LIMIT)).toThrow(HpackError);
      expect(() => d.decode(hex(block), NO_LIMIT)).toThrow(/^\[compression_error\] /);
    });
  }

  it("accepts integers up to 2^31 - 1 and refuses 2^31 (size updates of a huge table)", () => {
    const d = new HpackDecoder({ maxTableSize: 0x7fff_ffff });
    // 31 + 0x60 + 0x7f * 2^7 + 0x7f * 2^14 + 0x7f * 2^21 + 7 * 2^28 = 2^31 - 1.
    expect(d.decode(hex("3f e0 ff ff ff 07 82"), NO_LIMIT)).toEqual([":method", "GET"]);
    expect(() => d.decode(hex("3f e1 ff ff ff 07 82"), NO_LIMIT)).toThrow(/above 2\^31 - 1/);
  });
});

describe("HpackDecoder: header list size", () => {
  const addCustom = "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572";

  it("counts name + value + 32 per field, inclusive limit", () => {
    // custom-key: custom-header is 10 + 13 + 32 = 55 octets.
    expect(new HpackDecoder().decode(hex(addCustom), 55)).toEqual(["custom-key", "custom-header"]);
    expect(() => new HpackDecoder().decode(hex(addCustom), 54)).toThrow(HeaderListTooLargeError);
  });

  it("throws HeaderListTooLargeError after updating the table, which stays in sync", () => {
    const d = new HpackDecoder();
    // Over the limit at the first field; the second field still goes into the table.
    const block = hex(`${addCustom} 4001 6b01 76`);
    let error: unknown;
    try {
      d.decode(block, 40);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HeaderListTooLargeError);
    expect(error).not.toBeInstanceOf(HpackError);
    expect((error as Error).name).toBe("HeaderListTooLargeError");
    expect(d.decode(hex("82 be bf"), NO_LIMIT)).toEqual([
      ...[":method", "GET", "k", "v"],
      ...["custom-key", "custom-header"],
    ]);
  });

  it("a malformed block over the limit is a compression error", () => {
    expect(() => new HpackDecoder().decode(hex(`${addCustom} 80`), 10)).toThrow(HpackError);
  });
});

describe("Huffman decoding (property)", () => {
  it("decodes what the Appendix B code encodes, every octet value", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 90 }), (octets) => {
        const coded = huffmanEncode(octets);
        fc.pre(coded.length < 127);
        const value = Buffer.from(octets).toString("latin1");
        const d = new HpackDecoder();
        expect(d.decode(literalField("x", coded, true), NO_LIMIT)).toEqual(["x", value]);
      }),
      { numRuns: 500 },
    );
  });

  it("decodes a long Huffman value (scratch buffer growth)", () => {
    const value = Buffer.from("a~\u00ff\u0000".repeat(2000), "latin1");
    const coded = huffmanEncode(value);
    const length = coded.length - 127; // 7-bit prefix full, then the rest in base 128
    const block = Buffer.concat([
      hex("00 01 78 ff"),
      Buffer.from([(length & 0x7f) | 0x80, (length >> 7) & 0x7f]),
      coded,
    ]);
    expect(length >> 14).toBe(0);
    const d = new HpackDecoder();
    expect(d.decode(block, NO_LIMIT)).toEqual(["x", value.toString("latin1")]);
    expect(d.decode(literalField("x", huffmanEncode(Buffer.from("ok")), true), NO_LIMIT)).toEqual([
      "x",
      "ok",
    ]);
  });
});

describe("HpackEncoder", () => {
  const e = new HpackEncoder();

  it("writes a static entry fully indexed when name and value match", () => {
    expect(e.encode([":status", "200"]).toString("hex")).toBe("88");
    expect(e.encode([":method", "POST", ":authority", ""]).toString("hex")).toBe("8381");
    expect(e.encode(["accept-encoding", "gzip, deflate"]).toString("hex")).toBe("90");
  });

  it("writes literals without indexing, the name from the static table when it is there", () => {
    expect(e.encode([":status", "503"]).toString("hex")).toBe("08033530 33".replace(/ /g, ""));
    expect(e.encode(["content-type", "application/grpc"]).toString("hex")).toBe(
      `0f10 10${Buffer.from("application/grpc").toString("hex")}`.replace(/ /g, ""),
    );
    expect(e.encode(["grpc-status", "0"]).toString("hex")).toBe(
      `000b${Buffer.from("grpc-status").toString("hex")}0130`,
    );
    expect(e.encode([]).length).toBe(0);
  });

  it("writes long lengths as multi-octet integers", () => {
    const value = "v".repeat(1337);
    expect(e.encode(["x", value]).subarray(0, 6).toString("hex")).toBe(
      "000178 7fba09".replace(" ", ""),
    );
  });

  it("refuses an odd-length list", () => {
    expect(() => e.encode([":status"])).toThrow(RangeError);
  });

  it("round-trips through the decoder (property)", () => {
    const staticNames = [":status", ":path", "content-type", "accept-encoding", "date", "via"];
    const name = fc.oneof(
      fc.stringMatching(/^[a-z][a-z0-9!#$%&'*+.^_`|~-]{0,30}$/),
      fc.constantFrom(...staticNames),
    );
    const value = fc.oneof(
      fc.string({
        unit: fc.integer({ min: 0, max: 0xff }).map((c) => String.fromCharCode(c)),
        maxLength: 300,
      }),
      fc.constantFrom("", "200", "gzip, deflate", "/", "POST"),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(name, value), { maxLength: 20 }), (fields) => {
        const flat = fields.flat();
        const d = new HpackDecoder();
        expect(d.decode(e.encode(flat), NO_LIMIT)).toEqual(flat);
        // Stateless: nothing went into the peer's table.
        expect(() => d.decode(hex("be"), NO_LIMIT)).toThrow(HpackError);
      }),
      { numRuns: 300 },
    );
  });
});

// --- Against real implementations ----------------------------------------------------------

const FRAME_HEADERS = 1;
const FRAME_SETTINGS = 4;
const FRAME_CONTINUATION = 9;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY = 0x20;

function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(stream, 5);
  return Buffer.concat([header, payload]);
}

async function waitFor(what: string, done: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("HpackDecoder against nghttp2's encoder (Node's http2 client)", () => {
  /** Header blocks of each connection, in order. */
  const connections: Buffer[][] = [];
  /** SETTINGS_HEADER_TABLE_SIZE the raw server advertises to the next connection. */
  let tableSize = 4096;
  let server: net.Server;
  let port = 0;

  beforeAll(async () => {
    server = net.createServer((socket) => {
      const mine: Buffer[] = [];
      connections.push(mine);
      let buf = Buffer.alloc(0);
      let prefaced = false;
      let pending: Buffer[] | undefined;
      socket.on("error", () => {});
      const settings = Buffer.alloc(tableSize === 4096 ? 0 : 6);
      if (settings.length > 0) {
        settings.writeUInt16BE(0x1, 0); // SETTINGS_HEADER_TABLE_SIZE
        settings.writeUInt32BE(tableSize, 2);
      }
      socket.write(frame(FRAME_SETTINGS, 0, 0, settings));
      socket.on("data", (data: Buffer) => {
        buf = Buffer.concat([buf, data]);
        if (!prefaced) {
          if (buf.length < PREFACE.length) return;
          if (!buf.subarray(0, PREFACE.length).equals(PREFACE)) {
            socket.destroy();
            return;
          }
          buf = buf.subarray(PREFACE.length);
          prefaced = true;
        }
        while (buf.length >= 9) {
          const length = buf.readUIntBE(0, 3);
          if (buf.length < 9 + length) break;
          const type = buf[3] as number;
          const flags = buf[4] as number;
          let payload = buf.subarray(9, 9 + length);
          buf = buf.subarray(9 + length);
          if (type === FRAME_SETTINGS && (flags & 1) === 0) {
            socket.write(frame(FRAME_SETTINGS, 1, 0, Buffer.alloc(0)));
          } else if (type === FRAME_HEADERS) {
            if ((flags & PADDED) !== 0) {
              const pad = payload[0] as number;
              payload = payload.subarray(1, payload.length - pad);
            }
            if ((flags & PRIORITY) !== 0) payload = payload.subarray(5);
            pending = [payload];
          } else if (type === FRAME_CONTINUATION && pending !== undefined) {
            pending.push(payload);
          } else continue;
          if ((flags & END_HEADERS) !== 0 && pending !== undefined) {
            mine.push(Buffer.concat(pending));
            pending = undefined;
          }
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  // A small pool of headers shared by the requests (nghttp2 indexes them and later sends them
  // indexed), plus fresh ones; printable ASCII values (nghttp2 Huffman-codes when shorter).
  const extraName = fc.stringMatching(/^x-[a-z]{1,10}$/);
  const extraValue = fc.stringMatching(/^[!-~]([ -~]{0,38}[!-~])?$/);
  const scenario = fc.record({
    // A smaller table makes nghttp2 send a size update and evict.
    tableSize: fc.constantFrom(4096, 4096, 1024, 256, 100, 0),
    requests: fc
      .uniqueArray(fc.tuple(extraName, extraValue), {
        minLength: 1,
        maxLength: 6,
        selector: (h) => h[0],
      })
      .chain((pool) =>
        fc.array(
          fc.record({
            extra: fc.uniqueArray(
              fc.oneof(fc.constantFrom(...pool), fc.tuple(extraName, extraValue)),
              {
                maxLength: 8,
                selector: (h) => h[0],
              },
            ),
            sensitive: fc.boolean(),
            big: fc.nat({ max: 19 }),
          }),
          { minLength: 20, maxLength: 40 },
        ),
      ),
  });

  it("decodes every request block in order on one decoder: dynamic table, Huffman, never-indexed, CONTINUATION", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ tableSize: size, requests }) => {
        tableSize = size;
        const before = connections.length;
        const client = http2.connect(`http://127.0.0.1:${port}`);
        client.on("error", () => {});
        let settled = false;
        client.once("remoteSettings", () => {
          settled = true;
        });
        try {
          // Requests after our SETTINGS arrived, so nghttp2 encodes for the advertised size.
          await waitFor("the server's SETTINGS", () => settled);
          await waitFor("the connection", () => connections.length > before);
          const blocks = connections[before] as Buffer[];
          const sent: Record<string, string>[] = [];
          for (const [i, r] of requests.entries()) {
            const headers: Record<string, string> = {
              ":method": "POST",
              ":path": `/svc.Test/M${i}`,
              "content-type": "application/grpc",
              te: "trailers",
              ...Object.fromEntries(r.extra),
            };
            // One request in 20 carries a header big enough for CONTINUATION frames.
            if (r.big === 0) headers["x-big"] = `${i}:${"0123456789abcdef".repeat(2000)}`;
            // A sensitive header goes out as "never indexed" (RFC 7541 §6.2.3).
            const firstExtra = r.extra[0];
            const outgoing: http2.OutgoingHttpHeaders =
              r.sensitive && firstExtra !== undefined
                ? { ...headers, [http2.sensitiveHeaders]: [firstExtra[0]] }
                : headers;
            const req = client.request(outgoing);
            req.on("error", () => {});
            sent.push({ ...headers, ":scheme": "http", ":authority": `127.0.0.1:${port}` });
          }
          await waitFor("all header blocks", () => blocks.length >= sent.length);
          const d = new HpackDecoder({ maxTableSize: size });
          for (const [i, block] of blocks.entries()) {
            const list = d.decode(block, NO_LIMIT);
            const got: Record<string, string> = {};
            for (let j = 0; j < list.length; j += 2) got[list[j] as string] = list[j + 1] as string;
            expect(list.length / 2).toBe(Object.keys(got).length); // no duplicates
            expect(got).toEqual(sent[i]);
          }
        } finally {
          client.destroy();
        }
      }),
      { numRuns: 6, endOnFailure: true },
    );
  }, 30_000);
});

describe("HpackEncoder against nghttp2's decoder (Node's http2 server)", () => {
  it("Node's http2 server decodes our request blocks", async () => {
    const received: Record<string, string | string[] | undefined>[] = [];
    const server = http2.createServer();
    server.on("stream", (stream, headers) => {
      received.push({ ...headers });
      stream.respond({ ":status": 200 }, { endStream: true });
    });
    server.on("sessionError", () => {});
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const socket = net.connect(port, "127.0.0.1");
    socket.on("error", () => {});
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once("connect", resolve);
        socket.once("error", reject);
      });
      // The server's SETTINGS is its first frame: acknowledge it once it arrives.
      socket.once("data", () => socket.write(frame(FRAME_SETTINGS, 1, 0, Buffer.alloc(0))));
      socket.write(Buffer.concat([PREFACE, frame(FRAME_SETTINGS, 0, 0, Buffer.alloc(0))]));
      const encoder = new HpackEncoder();
      const lists = fc.sample(
        fc.uniqueArray(
          fc.tuple(
            fc.oneof(
              fc.stringMatching(/^x-[a-z0-9-]{1,12}$/),
              fc.constantFrom("user-agent", "accept", "via"),
            ),
            fc.stringMatching(/^[!-~]([ -~]{0,60}[!-~])?$/),
          ),
          { maxLength: 10, selector: (h) => h[0] },
        ),
        30,
      );
      const expected: Record<string, string>[] = [];
      for (const [i, extra] of lists.entries()) {
        const list = [
          ...[":method", "POST", ":scheme", "http", ":path", `/p/${i}`, ":authority", "h"],
          ...extra.flat(),
        ];
        const stream = 2 * i + 1;
        socket.write(frame(FRAME_HEADERS, END_HEADERS | END_STREAM, stream, encoder.encode(list)));
        expected.push(Object.fromEntries(extra.map(([n, v]) => [n, v])));
      }
      await waitFor("the server to see every request", () => received.length >= lists.length);
      for (const [i, got] of received.entries()) {
        expect(got[":method"]).toBe("POST");
        expect(got[":path"]).toBe(`/p/${i}`);
        expect(got[":authority"]).toBe("h");
        for (const [n, v] of Object.entries(expected[i] ?? {})) expect(got[n]).toBe(v);
      }
    } finally {
      socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 15_000);
});
