// The REST surface's behaviour suite (spec §7). It is target-agnostic: `start` supplies a
// way to send HTTP requests to a REST surface — the gateway over an in-process router
// transport (`app.request`), the gateway standalone in front of a gRPC upstream (real
// HTTP), or a real odgm node — so every implementation is held to the same behaviour.
// The cases are in rest-suite/, one file per part of the surface.
import { afterAll, beforeAll, describe } from "vitest";
import { badInputCases } from "./rest-suite/bad-input.js";
import { fixtureCases } from "./rest-suite/fixture.js";
import { objectCases } from "./rest-suite/objects.js";
import { propertyCases } from "./rest-suite/properties.js";
import { seedExampleCases } from "./rest-suite/seed-examples.js";
import { serviceRouteCases } from "./rest-suite/service-routes.js";
import { BODY_LIMIT, createSuiteContext, REST_SUITE_METRIC } from "./rest-suite/suite-context.js";
import { valueCases } from "./rest-suite/values.js";

/** Sends one HTTP request to the REST surface under test. */
export type RestSend = (
  method: string,
  path: string,
  init?: { body?: RequestInit["body"]; headers?: Record<string, string> },
) => Promise<Response>;

/** A REST surface to test, as returned by {@link RestSuiteOptions.start}. */
export interface RestTarget {
  readonly send: RestSend;
  close(): Promise<void>;
}

/** Options of {@link runRestSuite}. */
export interface RestSuiteOptions {
  /**
   * Starts the surface. It must serve collections `suite` and `order` (partition 0 at least), accept
   * bodies up to {@link REST_SUITE_BODY_LIMIT} bytes and refuse larger ones with 413, and
   * serve Prometheus text on `/metrics` containing {@link REST_SUITE_METRIC}.
   */
  start: () => Promise<RestTarget>;
  /**
   * The backend is the test fixture: it knows the fault classes (`legacy`, `down`, `crash`,
   * `unknown*`), has 4 partitions and the scripted functions. A real node runs without them.
   */
  fixture?: boolean;
  /** Runs of each property test (default 100). */
  propertyRuns?: number;
}

/** The body limit a target under test must enforce. */
export const REST_SUITE_BODY_LIMIT: number = BODY_LIMIT;
/** A metric name a target's `/metrics` must contain. */
export { REST_SUITE_METRIC };

/** Registers the suite under `describe(name)`. */
export function runRestSuite(name: string, options: RestSuiteOptions): void {
  describe(name, () => {
    let target: RestTarget | undefined;
    beforeAll(async () => {
      target = await options.start();
    });
    afterAll(async () => {
      await target?.close();
    });
    const s = createSuiteContext(() => {
      if (target === undefined) throw new Error("the REST target did not start");
      return target.send;
    }, options);
    seedExampleCases(s);
    objectCases(s);
    valueCases(s);
    serviceRouteCases(s);
    badInputCases(s);
    fixtureCases(s);
    propertyCases(s);
  });
}
