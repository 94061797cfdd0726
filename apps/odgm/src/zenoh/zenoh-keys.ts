// The ODGM key space on Zenoh (spec §8, seeds 000 §Zenoh Key Space and 003 §5.3):
//   oprc/<cls>/<pid>/objects/<u64>            numeric object id
//   oprc/<cls>/<pid>/sobjects/<id>            string object id
//   <object>[/set|/delete|/change]
//   <object>/values/<key>[/set|/delete|/change]
//   <object>/values-batch/<invocation id>
//   oprc/<cls>/<pid>/invokes/<fn>[/async/<invocation id>]       stateless function
//   <object>/invokes/<fn>[/async/<invocation id>]               function on an object
// Class names, ids and entry keys are single chunks, percent-encoded where key-expression
// syntax needs it, so `*`, `**`, `$`, `#`, `?` and `/` never act as wildcards or separators.

/** Root chunk of every ODGM object key. */
export const KEY_ROOT = "oprc";

/**
 * Encodes a class name, object id or entry key as one key-expression chunk:
 * `encodeURIComponent` plus `*` (which it leaves alone) as `%2A`. Reversible with
 * `decodeURIComponent`; never empty unless `s` is.
 */
export function encodeKeyChunk(s: string): string {
  return encodeURIComponent(s).replace(/\*/g, "%2A");
}

/** Where an object lives, as its key names it. */
export interface ObjectAddress {
  readonly cls: string;
  readonly partition: number;
  /** `objects/<u64>` gives `numeric`, `sobjects/<id>` gives `str`. */
  readonly id: { readonly numeric: bigint } | { readonly str: string };
}

/** What an ODGM key addresses. */
export type OdgmKey =
  | { readonly kind: "object"; readonly object: ObjectAddress; readonly op: KeyOp }
  | {
      readonly kind: "value";
      readonly object: ObjectAddress;
      readonly key: string;
      readonly op: KeyOp;
    }
  | { readonly kind: "batch"; readonly object: ObjectAddress; readonly invocationId: string }
  | {
      readonly kind: "invoke";
      readonly cls: string;
      readonly partition: number;
      /** Set for `<object>/invokes/…` (InvokeObj), absent for `P/invokes/…` (InvokeFn). */
      readonly object: ObjectAddress | undefined;
      readonly fn: string;
      /** Set for the async form `…/async/<invocation id>`. */
      readonly asyncId: string | undefined;
    };

/** The suffix after an object or entry key: none, `set`, `delete` or `change`. */
export type KeyOp = "none" | "set" | "delete" | "change";

/** A key that does not address anything ODGM serves, or addresses it badly. */
export class KeyError extends Error {
  override readonly name = "KeyError";
}

const U64_MAX = (1n << 64n) - 1n;
const U32_MAX = 4_294_967_295;

function decodeChunk(chunk: string, what: string): string {
  if (chunk === "*" || chunk === "**" || chunk.includes("$*"))
    throw new KeyError(`${what} must not be a wildcard (${chunk}); percent-encode * and $ in ids`);
  let out: string;
  try {
    out = decodeURIComponent(chunk);
  } catch {
    throw new KeyError(`${what} ${JSON.stringify(chunk)} is not valid percent-encoding`);
  }
  if (out === "") throw new KeyError(`${what} is empty`);
  return out;
}

/** The key of an object. */
export function objectKey(a: ObjectAddress): string {
  const id = "numeric" in a.id ? `objects/${a.id.numeric}` : `sobjects/${encodeKeyChunk(a.id.str)}`;
  return `${KEY_ROOT}/${encodeKeyChunk(a.cls)}/${a.partition}/${id}`;
}

/** The key of one entry of an object. */
export function valueKey(a: ObjectAddress, key: string): string {
  return `${objectKey(a)}/values/${encodeKeyChunk(key)}`;
}

/**
 * Parses a key expression received on the ODGM key space. Throws {@link KeyError} for a
 * wildcard where an id belongs, bad percent-encoding, a partition that is not a u32, an
 * `objects/` id that is not a u64, or a shape ODGM does not serve.
 */
export function parseOdgmKey(keyExpr: string): OdgmKey {
  const chunks = keyExpr.split("/");
  if (chunks[0] !== KEY_ROOT || chunks.length < 5)
    throw new KeyError(
      `${JSON.stringify(keyExpr)} is not an ODGM object key (${KEY_ROOT}/<class>/<partition>/objects/<id>…)`,
    );
  const cls = decodeChunk(chunks[1] as string, "class");
  const pidChunk = chunks[2] as string;
  if (!/^(0|[1-9][0-9]{0,9})$/.test(pidChunk) || Number(pidChunk) > U32_MAX)
    throw new KeyError(`partition ${JSON.stringify(pidChunk)} is not a u32`);
  const partition = Number(pidChunk);
  const space = chunks[3] as string;
  const idChunk = chunks[4] as string;
  const invoke = (object: ObjectAddress | undefined, fnChunk: string, tail: string[]): OdgmKey => {
    const fn = decodeChunk(fnChunk, "function id");
    if (tail.length === 0)
      return { kind: "invoke", cls, partition, object, fn, asyncId: undefined };
    if (tail.length === 2 && tail[0] === "async")
      return {
        kind: "invoke",
        cls,
        partition,
        object,
        fn,
        asyncId: decodeChunk(tail[1] as string, "invocation id"),
      };
    throw new KeyError(
      `${JSON.stringify(keyExpr)} is not an ODGM invocation key (…/invokes/<fn>[/async/<id>])`,
    );
  };
  if (space === "invokes") return invoke(undefined, idChunk, chunks.slice(5));
  let id: ObjectAddress["id"];
  if (space === "objects") {
    if (idChunk === "*" || idChunk === "**")
      throw new KeyError(`object id must not be a wildcard (${idChunk})`);
    if (!/^[0-9]{1,20}$/.test(idChunk) || BigInt(idChunk) > U64_MAX)
      throw new KeyError(
        `objects/ takes a u64 object id, got ${JSON.stringify(idChunk)}; string ids go under sobjects/`,
      );
    id = { numeric: BigInt(idChunk) };
  } else if (space === "sobjects") {
    id = { str: decodeChunk(idChunk, "object id") };
  } else {
    throw new KeyError(
      `expected objects/ or sobjects/ after the partition, got ${JSON.stringify(space)}`,
    );
  }
  const object: ObjectAddress = { cls, partition, id };
  const rest = chunks.slice(5);
  const opOf = (s: string | undefined): KeyOp => {
    if (s === undefined) return "none";
    if (s === "set" || s === "delete" || s === "change") return s;
    throw new KeyError(`unknown operation ${JSON.stringify(s)} (expected set, delete or change)`);
  };
  if (rest.length <= 1) return { kind: "object", object, op: opOf(rest[0]) };
  if (rest[0] === "invokes") return invoke(object, rest[1] as string, rest.slice(2));
  const [section, name, suffix, ...extra] = rest as [string, string, string?, ...string[]];
  if (extra.length > 0) throw new KeyError(`${JSON.stringify(keyExpr)} has too many chunks`);
  if (section === "values")
    return { kind: "value", object, key: decodeChunk(name, "entry key"), op: opOf(suffix) };
  if (section === "values-batch" && suffix === undefined)
    return { kind: "batch", object, invocationId: decodeChunk(name, "invocation id") };
  throw new KeyError(`${JSON.stringify(keyExpr)} is not an ODGM key`);
}

/** The sync invocation key of `fn` (on `object` when given); append `/async/<id>` for the async form. */
export function invokeKey(
  cls: string,
  partition: number,
  fn: string,
  object?: ObjectAddress,
): string {
  const base =
    object === undefined ? `${KEY_ROOT}/${encodeKeyChunk(cls)}/${partition}` : objectKey(object);
  return `${base}/invokes/${encodeKeyChunk(fn)}`;
}

/** Whether `key` is a canonical u32 decimal (an entry key that is numeric, spec §2). */
export function isNumericEntryKey(key: string): boolean {
  return /^(0|[1-9][0-9]{0,9})$/.test(key) && Number(key) <= U32_MAX;
}
