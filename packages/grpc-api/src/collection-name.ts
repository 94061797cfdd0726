// Collection names (`cls_id`): the one rule, shared by the node's registry (which refuses
// to create anything else) and the request resolver (which refuses requests naming
// anything else before a name reaches a message), and a safe way to quote client input.

/** 1-128 characters of [A-Za-z0-9._:-] starting with a letter or digit: what REST paths and Zenoh key expressions carry without escaping. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** The rule in words, for error messages. */
export const COLLECTION_NAME_RULE =
  "1-128 characters of [A-Za-z0-9._:-], starting with a letter or digit";

/** True when `name` is a valid collection name. */
export function isCollectionName(name: string): boolean {
  return NAME.test(name);
}

/**
 * `value` JSON-quoted for a message, cut to `max` characters (with its full length noted),
 * so unbounded client input never grows an error message or a `grpc-message` trailer.
 */
export function quoteInput(value: string, max = 64): string {
  if (value.length <= max) return JSON.stringify(value);
  return `${JSON.stringify(value.slice(0, max))}… (${value.length} characters)`;
}
