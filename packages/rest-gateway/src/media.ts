import { GatewayError } from "./gateway-error.js";

/** Media type of JSON bodies. */
export const JSON_TYPE = "application/json";
/** Media type of protobuf binary bodies (the request also accepts `application/protobuf`). */
export const PROTOBUF_TYPE = "application/x-protobuf";
/** Media type of raw value bytes. */
export const BINARY_TYPE = "application/octet-stream";

/** What a request body's `Content-Type` says it is. */
export type BodyKind = "json" | "protobuf" | "binary" | "none" | "other";

/** The media type of a `Content-Type` header, lowercased and without parameters. */
export function mediaType(header: string | undefined | null): string {
  if (header === undefined || header === null) return "";
  const semi = header.indexOf(";");
  return (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase();
}

/** Classifies a `Content-Type` header. */
export function bodyKind(header: string | undefined | null): BodyKind {
  const type = mediaType(header);
  if (type === "") return "none";
  if (type === JSON_TYPE || (type.startsWith("application/") && type.endsWith("+json")))
    return "json";
  if (
    type === PROTOBUF_TYPE ||
    type === "application/protobuf" ||
    type === "application/vnd.google.protobuf"
  ) {
    return "protobuf";
  }
  if (type === BINARY_TYPE) return "binary";
  return "other";
}

interface AcceptRange {
  type: string;
  subtype: string;
  q: number;
  order: number;
}

function parseAccept(header: string): AcceptRange[] {
  const ranges: AcceptRange[] = [];
  let order = 0;
  for (const part of header.split(",")) {
    const [range = "", ...params] = part.split(";");
    const slash = range.indexOf("/");
    if (slash === -1) continue;
    let q = 1;
    for (const param of params) {
      const [name, value] = param.split("=");
      if (name?.trim().toLowerCase() === "q" && value !== undefined) {
        const parsed = Number(value.trim());
        q = Number.isFinite(parsed) ? Math.min(Math.max(parsed, 0), 1) : 0;
      }
    }
    ranges.push({
      type: range.slice(0, slash).trim().toLowerCase(),
      subtype: range
        .slice(slash + 1)
        .trim()
        .toLowerCase(),
      q,
      order: order++,
    });
  }
  return ranges;
}

function specificity(range: AcceptRange): number {
  if (range.type === "*") return 0;
  return range.subtype === "*" ? 1 : 2;
}

/**
 * Picks the response media type from `offers` (in server preference order) for an `Accept`
 * header: the offer with the highest q of its most specific matching range wins; ties go to
 * the earlier offer. No header (or an empty one) means the first offer.
 *
 * @throws {GatewayError} `not_acceptable` when no offer is acceptable.
 */
export function negotiate<const T extends string>(
  accept: string | undefined | null,
  offers: readonly T[],
): T {
  const first = offers[0];
  if (first === undefined) throw new GatewayError("internal", "no media type offered");
  if (accept === undefined || accept === null || accept.trim() === "") return first;
  const ranges = parseAccept(accept);
  if (ranges.length === 0) return first;
  let best: T | undefined;
  let bestQ = 0;
  for (const offer of offers) {
    const slash = offer.indexOf("/");
    const type = offer.slice(0, slash);
    const subtype = offer.slice(slash + 1);
    let match: AcceptRange | undefined;
    for (const range of ranges) {
      const fits =
        range.type === "*" ||
        (range.type === type && (range.subtype === "*" || range.subtype === subtype));
      if (!fits) continue;
      if (match === undefined || specificity(range) > specificity(match)) match = range;
    }
    if (match !== undefined && match.q > bestQ) {
      best = offer;
      bestQ = match.q;
    }
  }
  if (best === undefined) {
    throw new GatewayError(
      "not_acceptable",
      `cannot produce any of "${accept}"; available: ${offers.join(", ")}`,
    );
  }
  return best;
}
