import { RaftError } from "../core/raft-error.js";
import type { KvInput, KvOperation, KvOutput } from "./kv-model.js";

/** A scalar of the EDN subset histories use. Keywords keep their leading colon. */
export type EdnValue = string | number | boolean | null | { readonly keyword: string };

/** One history event: an EDN map from keyword (without colon) to value. */
export type EdnEvent = Readonly<Record<string, EdnValue>>;

/**
 * Parses a Jepsen-style history: one flat EDN map per line (blank lines ignored), for
 * example `{:process 0, :type :invoke, :f :get, :key "7", :value nil}`. Supports keywords,
 * strings (with `\" \\ \n \t \r` escapes), integers, `nil`, `true` and `false`.
 * @throws RaftError `invalid_history` with the line number on anything else.
 */
export function parseEdnEvents(text: string): EdnEvent[] {
  const events: EdnEvent[] = [];
  const lines = text.split("\n");
  for (let n = 0; n < lines.length; n++) {
    const line = (lines[n] as string).trim();
    if (line === "") continue;
    events.push(parseMap(line, n + 1));
  }
  return events;
}

function parseMap(line: string, lineNo: number): EdnEvent {
  let i = 0;
  const err = (what: string): RaftError =>
    new RaftError("invalid_history", `line ${lineNo}, column ${i + 1}: ${what}`);
  const skip = (): void => {
    while (i < line.length && (line[i] === " " || line[i] === "," || line[i] === "\t")) i++;
  };
  const value = (): EdnValue => {
    const c = line[i];
    if (c === '"') {
      i++;
      let s = "";
      for (;;) {
        if (i >= line.length) throw err("unterminated string");
        const d = line[i++] as string;
        if (d === '"') return s;
        if (d === "\\") {
          const e = line[i++];
          if (e === '"' || e === "\\") s += e;
          else if (e === "n") s += "\n";
          else if (e === "t") s += "\t";
          else if (e === "r") s += "\r";
          else throw err(`unsupported escape \\${e ?? ""}`);
        } else s += d;
      }
    }
    const m = /^(:[A-Za-z0-9_\-?!*+./]+|-?\d+|nil|true|false)(?=[\s,}]|$)/.exec(line.slice(i));
    if (m === null) throw err("expected a keyword, string, integer, nil or boolean");
    const tok = m[1] as string;
    i += tok.length;
    if (tok.startsWith(":")) return { keyword: tok.slice(1) };
    if (tok === "nil") return null;
    if (tok === "true" || tok === "false") return tok === "true";
    const num = Number(tok);
    if (!Number.isSafeInteger(num)) throw err(`integer out of range: ${tok}`);
    return num;
  };
  skip();
  if (line[i] !== "{") throw err("expected {");
  i++;
  const out: Record<string, EdnValue> = {};
  for (;;) {
    skip();
    if (line[i] === "}") {
      i++;
      break;
    }
    const k = value();
    if (typeof k !== "object" || k === null) throw err("map keys must be keywords");
    const key = k.keyword;
    if (Object.hasOwn(out, key)) throw err(`duplicate key :${key}`);
    skip();
    out[key] = value();
  }
  skip();
  if (i !== line.length) throw err("trailing characters after the map");
  return out;
}

const kw = (v: EdnValue | undefined): string | undefined =>
  typeof v === "object" && v !== null ? v.keyword : undefined;

/**
 * Turns a key-value history in Jepsen/Porcupine EDN form into operations for
 * {@link kvModel}. Event time is the line order. An `:ok` closes the most recent open
 * `:invoke` of the same process (for `get`, its `:value` is the value read); `:fail`
 * removes the operation (it definitely did not happen); `:info` and invocations never
 * closed leave it pending (it may take effect any time after its call, or never).
 * @throws RaftError `invalid_history` on unknown types/functions, a completion without an
 * open invocation, a second invocation while one is open, or missing fields.
 */
export function parseEdnHistory(text: string): KvOperation[] {
  const events = parseEdnEvents(text);
  const open = new Map<number, { input: KvInput; call: number; slot: number }>();
  const slots: (KvOperation | null)[] = [];
  const err = (t: number, what: string): RaftError =>
    new RaftError("invalid_history", `event ${t + 1}: ${what}`);
  for (let t = 0; t < events.length; t++) {
    const ev = events[t] as EdnEvent;
    const process = ev.process;
    if (typeof process !== "number") throw err(t, "missing integer :process");
    const type = kw(ev.type);
    const f = kw(ev.f);
    const key = ev.key;
    if (typeof key !== "string") throw err(t, "missing string :key");
    if (type === "invoke") {
      if (open.has(process)) throw err(t, `process ${process} invokes while an operation is open`);
      let input: KvInput;
      if (f === "get") input = { op: "get", key };
      else if (f === "put" || f === "append") {
        if (typeof ev.value !== "string") throw err(t, `:${f} needs a string :value`);
        input = { op: f, key, value: ev.value };
      } else throw err(t, `unknown :f ${String(f)}`);
      open.set(process, { input, call: t, slot: slots.length });
      slots.push({ clientId: process, input, call: t, output: undefined, return: Infinity });
      continue;
    }
    const pending = open.get(process);
    if (pending === undefined) throw err(t, `:${String(type)} without an open :invoke`);
    if (f !== pending.input.op) throw err(t, `:f ${String(f)} does not match the invocation`);
    open.delete(process);
    if (type === "ok") {
      let output: KvOutput = { value: "" };
      if (pending.input.op === "get") {
        if (typeof ev.value !== "string") throw err(t, "a completed :get needs a string :value");
        output = { value: ev.value };
      }
      slots[pending.slot] = {
        clientId: process,
        input: pending.input,
        call: pending.call,
        output,
        return: t,
      };
    } else if (type === "fail") {
      slots[pending.slot] = null;
    } else if (type !== "info") {
      throw err(t, `unknown :type ${String(type)}`);
    }
  }
  return slots.filter((op): op is KvOperation => op !== null);
}
