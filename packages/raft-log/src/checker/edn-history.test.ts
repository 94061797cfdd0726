import { describe, expect, it } from "vitest";
import { isRaftError } from "../core/raft-error.js";
import { parseEdnEvents, parseEdnHistory } from "./edn-history.js";

describe("parseEdnEvents", () => {
  it("parses the flat maps of a history", () => {
    const events = parseEdnEvents(
      '{:process 3, :type :invoke, :f :get, :key "k\\"1", :value nil}\n\n{:a true :b -2}\n',
    );
    expect(events).toEqual([
      { process: 3, type: { keyword: "invoke" }, f: { keyword: "get" }, key: 'k"1', value: null },
      { a: true, b: -2 },
    ]);
  });

  it.each([
    ["not a map", ":process 1"],
    ["unterminated string", '{:key "abc}'],
    ["trailing input", "{:a 1} x"],
    ["duplicate key", "{:a 1, :a 2}"],
    ["non-keyword key", '{"a" 1}'],
    ["bad escape", '{:a "\\q"}'],
  ])("rejects %s with a RaftError", (_name, line) => {
    expect(() => parseEdnEvents(line)).toThrow(/invalid_history/);
    try {
      parseEdnEvents(line);
    } catch (e) {
      expect(isRaftError(e)).toBe(true);
    }
  });
});

describe("parseEdnHistory", () => {
  it("pairs invocations with completions per process and keeps pending ones open", () => {
    const ops = parseEdnHistory(
      [
        '{:process 0, :type :invoke, :f :put, :key "x", :value "a"}',
        '{:process 1, :type :invoke, :f :get, :key "x", :value nil}',
        '{:process 1, :type :ok, :f :get, :key "x", :value "a"}',
        '{:process 2, :type :invoke, :f :append, :key "x", :value "b"}',
        '{:process 2, :type :fail, :f :append, :key "x", :value "b"}',
        '{:process 3, :type :invoke, :f :append, :key "y", :value "c"}',
        '{:process 3, :type :info, :f :append, :key "y", :value "c"}',
      ].join("\n"),
    );
    expect(ops).toEqual([
      {
        clientId: 0,
        input: { op: "put", key: "x", value: "a" },
        call: 0,
        output: undefined,
        return: Number.POSITIVE_INFINITY,
      },
      { clientId: 1, input: { op: "get", key: "x" }, call: 1, output: { value: "a" }, return: 2 },
      {
        clientId: 3,
        input: { op: "append", key: "y", value: "c" },
        call: 5,
        output: undefined,
        return: Number.POSITIVE_INFINITY,
      },
    ]);
  });

  it.each([
    ["completion without invocation", '{:process 0, :type :ok, :f :get, :key "x", :value "a"}'],
    [
      "two open invocations of one process",
      '{:process 0, :type :invoke, :f :get, :key "x", :value nil}\n{:process 0, :type :invoke, :f :get, :key "x", :value nil}',
    ],
    ["unknown function", '{:process 0, :type :invoke, :f :cas, :key "x", :value "a"}'],
    ["missing key", "{:process 0, :type :invoke, :f :get, :value nil}"],
    [
      "mismatched function",
      '{:process 0, :type :invoke, :f :get, :key "x", :value nil}\n{:process 0, :type :ok, :f :put, :key "x", :value "a"}',
    ],
    ["put without value", '{:process 0, :type :invoke, :f :put, :key "x", :value nil}'],
  ])("rejects a %s", (_name, text) => {
    expect(() => parseEdnHistory(text)).toThrow(/invalid_history/);
  });
});
