import {
  create,
  type DescMessage,
  type DescMethod,
  type MessageInitShape,
  toJson,
} from "@bufbuild/protobuf";
import { expect } from "vitest";
import type { Caller, CallResult } from "./index.js";

/** Calls one method through a client, recording the normalized result. */
export type RecordedCall = <I extends DescMessage, O extends DescMessage>(
  method: DescMethod & { input: I; output: O },
  init: MessageInitShape<I>,
) => Promise<CallResult<O>>;

/** Per client, per scenario: the normalized result of every call. */
export interface Transcripts {
  /** A call function for `scenario` run through `caller`, recorded under `client`. */
  recorder(client: string, scenario: string, caller: Caller): RecordedCall;
  /**
   * Asserts that every client's transcript equals the first client's, scenario by scenario
   * (codes, messages, responses as proto3 JSON, `odgm-*` trailers).
   */
  expectIdentical(clients: readonly string[]): void;
}

/** A fresh transcript book for an interop suite that runs the same scenarios per client. */
export function createTranscripts(): Transcripts {
  const book = new Map<string, Map<string, unknown[]>>();
  return {
    recorder(client, scenario, caller) {
      const perClient = book.get(client) ?? new Map<string, unknown[]>();
      book.set(client, perClient);
      const log: unknown[] = [];
      perClient.set(scenario, log);
      return async (method, init) => {
        const r = await caller.call(method, create(method.input, init));
        log.push({
          method: method.name,
          code: r.code,
          message: r.message,
          responses: r.responses.map((m) => toJson(method.output, m)),
          trailers: Object.fromEntries(
            Object.entries(r.trailers).filter(([k]) => k.startsWith("odgm-")),
          ),
        });
        return r;
      };
    },
    expectIdentical(clients) {
      const [first, ...rest] = clients;
      const reference = book.get(first ?? "");
      expect(reference?.size, `no transcript for ${first}`).toBeGreaterThan(0);
      for (const other of rest) {
        const t = book.get(other);
        expect([...(t?.keys() ?? [])], other).toEqual([...(reference?.keys() ?? [])]);
        for (const [scenario, log] of reference ?? []) {
          expect(t?.get(scenario), `${other}: ${scenario}`).toEqual(log);
        }
      }
    },
  };
}
