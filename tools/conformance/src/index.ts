// Behaviour suites shared by every implementation of a surface. Private: test support only.
export type { RestSend, RestSuiteOptions, RestTarget } from "./rest-suite.js";
export { REST_SUITE_BODY_LIMIT, REST_SUITE_METRIC, runRestSuite } from "./rest-suite.js";
