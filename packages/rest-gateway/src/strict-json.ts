// Request JSON that is stored as the client sent it, or refused. `JSON.parse` alone would
// silently turn 1e400 into Infinity (stored as null), round 9007199254740993 to ...992 and
// cut 0.12345678901234567890 to 17 digits, and a body nested a million deep parses fine but
// overflows the stack when it is serialized again. Here a number the server cannot hold
// exactly (as an IEEE-754 double) and nesting beyond a limit are a 400 that says why.
import { GatewayError } from "./gateway-error.js";

/** The deepest nesting of arrays and objects a request body may have. */
export const MAX_JSON_DEPTH = 100;

/** Decimal digits and exponent of a JSON number literal: `-12.50e3` → ["-", "125", 2]. */
function decimal(text: string): [sign: string, digits: string, exponent: number] | undefined {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (m === null) return undefined;
  const frac = m[3] ?? "";
  let digits = `${m[2]}${frac}`.replace(/^0+/, "");
  let exponent = Number(m[4] ?? "0") - frac.length;
  const trailing = digits.length - digits.replace(/0+$/, "").length;
  digits = digits.slice(0, digits.length - trailing);
  exponent += trailing;
  // Zero has no sign or exponent worth comparing.
  return digits === "" ? ["", "", 0] : [m[1] ?? "", digits, exponent];
}

/** True when the double `value` is exactly the decimal the client wrote as `source`. */
export function isExactNumber(source: string, value: number): boolean {
  if (!Number.isFinite(value)) return false;
  const a = decimal(source);
  const b = decimal(String(value));
  return a !== undefined && b !== undefined && a[0] === b[0] && a[1] === b[1] && a[2] === b[2];
}

/** Deepest array/object nesting of a JSON text (strings skipped); stops past `limit`. */
function depthOf(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > max) max = depth;
      if (max > limit) return max;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/**
 * Parses a request body's JSON text.
 *
 * @throws {GatewayError} `bad_request` for malformed JSON, nesting deeper than
 *   {@link MAX_JSON_DEPTH}, or a number that would not be stored exactly.
 */
export function parseStrictJson(text: string): unknown {
  if (depthOf(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw new GatewayError(
      "bad_request",
      `JSON body is nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`,
    );
  }
  let inexact: string | undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text, (_key, value: unknown, context?: { source?: string }) => {
      const source = context?.source;
      if (
        inexact === undefined &&
        typeof value === "number" &&
        source !== undefined &&
        !isExactNumber(source, value)
      ) {
        inexact = source;
      }
      return value;
    });
  } catch (cause) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    throw new GatewayError("bad_request", `malformed JSON body: ${detail}`, { cause });
  }
  if (inexact !== undefined) {
    const shown = inexact.length > 40 ? `${inexact.slice(0, 40)}…` : inexact;
    throw new GatewayError(
      "bad_request",
      `JSON number ${shown} cannot be stored exactly (numbers are IEEE-754 doubles: integers up to 2^53, about 17 significant digits, no overflow); send it as a string`,
    );
  }
  return parsed;
}
