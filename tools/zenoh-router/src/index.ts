export type { ZenohRouter, ZenohRouterOptions, ZenohRouterStats } from "./zenoh-router.js";
export { createZenohRouter } from "./zenoh-router.js";
