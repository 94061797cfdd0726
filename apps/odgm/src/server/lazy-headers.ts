// `Headers` the fetch API's way, built only when needed.
// - IncomingHeaders: a request's headers over Node's own header object: `get` and `has`
//   read Node's (already lower-cased) object directly, and only a call that changes or
//   walks the headers copies them into a real `Headers` first. Building a `Headers` for
//   every call cost the gRPC fast path about 4% of its CPU, while most calls only look up
//   a few names.
// - OutgoingHeaders: the response headers and trailers of a handler context (connect's
//   `responseHeader`, `responseTrailer`), which almost no handler sets: storage is made on
//   the first set, and walking an unset one costs nothing.
import type { IncomingHttpHeaders } from "node:http2";

const EDGE_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;

/** A header's value as `Headers` keeps it: repeated values joined, edge whitespace removed. */
function joined(v: string | string[] | undefined): string | null {
  if (v === undefined) return null;
  const s = Array.isArray(v) ? v.join(", ") : v;
  if (s === "") return s;
  const first = s.charCodeAt(0);
  const last = s.charCodeAt(s.length - 1);
  const edge = (c: number): boolean => c === 32 || c === 9 || c === 10 || c === 13;
  return edge(first) || edge(last) ? s.replace(EDGE_WHITESPACE, "") : s;
}

/** Request headers read from `raw` until something changes or walks them. */
export class IncomingHeaders implements Headers {
  #raw: IncomingHttpHeaders;
  #copy: Headers | undefined;

  constructor(raw: IncomingHttpHeaders) {
    this.#raw = raw;
  }

  /** The headers as a real `Headers` (pseudo-headers left out), built once. */
  #own(): Headers {
    if (this.#copy === undefined) {
      const h = new Headers();
      for (const [k, v] of Object.entries(this.#raw)) {
        if (k.startsWith(":") || v === undefined) continue;
        h.set(k, joined(v) as string);
      }
      this.#copy = h;
    }
    return this.#copy;
  }

  get(name: string): string | null {
    if (this.#copy !== undefined) return this.#copy.get(name);
    const key = name.toLowerCase();
    return key.startsWith(":") ? null : joined(this.#raw[key]);
  }

  has(name: string): boolean {
    return this.get(name) !== null;
  }

  set(name: string, value: string): void {
    this.#own().set(name, value);
  }

  append(name: string, value: string): void {
    this.#own().append(name, value);
  }

  delete(name: string): void {
    this.#own().delete(name);
  }

  getSetCookie(): string[] {
    return this.#own().getSetCookie();
  }

  forEach(
    callback: (value: string, key: string, parent: Headers) => void,
    thisArg?: unknown,
  ): void {
    this.#own().forEach((value, key) => {
      callback.call(thisArg, value, key, this);
    });
  }

  entries(): ReturnType<Headers["entries"]> {
    return this.#own().entries();
  }

  keys(): ReturnType<Headers["keys"]> {
    return this.#own().keys();
  }

  values(): ReturnType<Headers["keys"]> {
    return this.#own().values();
  }

  [Symbol.iterator](): ReturnType<Headers["entries"]> {
    return this.#own()[Symbol.iterator]();
  }

  get [Symbol.toStringTag](): string {
    return "Headers";
  }
}

/** No headers: what an {@link OutgoingHeaders} walks before anything was set (never changed). */
const NONE = new Headers();

/** A `Headers` that makes its storage on the first set (reads and walks before it make none). */
export class OutgoingHeaders implements Headers {
  #own: Headers | undefined;

  #made(): Headers {
    this.#own ??= new Headers();
    return this.#own;
  }

  append(name: string, value: string): void {
    this.#made().append(name, value);
  }

  set(name: string, value: string): void {
    this.#made().set(name, value);
  }

  delete(name: string): void {
    this.#own?.delete(name);
  }

  get(name: string): string | null {
    return this.#own === undefined ? null : this.#own.get(name);
  }

  has(name: string): boolean {
    return this.#own?.has(name) ?? false;
  }

  getSetCookie(): string[] {
    return this.#own?.getSetCookie() ?? [];
  }

  forEach(
    callback: (value: string, key: string, parent: Headers) => void,
    thisArg?: unknown,
  ): void {
    this.#own?.forEach((value, key) => {
      callback.call(thisArg, value, key, this);
    });
  }

  entries(): ReturnType<Headers["entries"]> {
    return (this.#own ?? NONE).entries();
  }

  keys(): ReturnType<Headers["keys"]> {
    return (this.#own ?? NONE).keys();
  }

  values(): ReturnType<Headers["keys"]> {
    return (this.#own ?? NONE).values();
  }

  [Symbol.iterator](): ReturnType<Headers["entries"]> {
    return this.entries();
  }

  get [Symbol.toStringTag](): string {
    return "Headers";
  }
}
