// Bearer tokens (ODGM_AUTH_TOKENS_FILE, ODGM_AUTH_TOKENS): each maps to a role and, when
// scoped, to a set of collections. Only SHA-256 digests of the tokens are kept; a presented
// token is hashed and compared with every digest in constant time.
import { createHash, timingSafeEqual } from "node:crypto";
import { COLLECTION_NAME_RULE, isCollectionName } from "@oprc/grpc-api";
import { OdgmError } from "../odgm-error.js";

/** What a token may do; each role includes the ones before it: read ⊂ write ⊂ admin. */
export type Role = "read" | "write" | "admin";

/** The roles in order of rights. */
export const ROLES: readonly Role[] = ["read", "write", "admin"];

/** True when `held` includes the rights of `needed`. */
export function roleIncludes(held: Role, needed: Role): boolean {
  return ROLES.indexOf(held) >= ROLES.indexOf(needed);
}

/** One configured token, by digest. */
export interface TokenEntry {
  /** SHA-256 of the token's UTF-8 bytes. */
  readonly digest: Buffer;
  readonly role: Role;
  /** The collections the token may touch; `undefined`: every collection. */
  readonly collections: ReadonlySet<string> | undefined;
  /** Where it was configured (`ODGM_AUTH_TOKENS entry 2`), for logs; never the token. */
  readonly source: string;
  /** When the token stops being accepted (ms since the epoch); `undefined`: never. */
  readonly expiresAt: number | undefined;
}

/** Who a token belongs to, once authenticated. */
export interface Principal {
  readonly role: Role;
  readonly collections: ReadonlySet<string> | undefined;
  readonly source: string;
  /** When the token stops being accepted (ms since the epoch); `undefined`: never. */
  readonly expiresAt: number | undefined;
}

/** The configured tokens. */
export interface TokenSet {
  readonly size: number;
  /** The principal of `token`, or `undefined` for an unknown token. */
  authenticate(token: string): Principal | undefined;
}

/** Shortest token accepted in plain text (a digest entry has no length to check). */
export const MIN_TOKEN_LENGTH = 16;
const DIGEST = /^sha256:([0-9a-f]{64})$/i;
/** RFC 6750 `b64token`. */
const TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** SHA-256 of `token`. */
export function digestToken(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

/**
 * Parses token entries: one per line (or separated by `;`), each
 * `<role> <token or sha256:<hex digest>> [<collection>,<collection>…] [expires=<ISO 8601 time>]`;
 * blank lines and `#` comments are skipped. `variable` names the setting in errors, which
 * never quote a token.
 *
 * @example
 * parseTokenEntries("read reader-token-0123456789 orders,carts expires=2030-01-01T00:00:00Z", "ODGM_AUTH_TOKENS");
 */
export function parseTokenEntries(text: string, variable: string): TokenEntry[] {
  const entries: TokenEntry[] = [];
  const lines = text.split(/[\n;]/);
  lines.forEach((raw, index) => {
    const line = raw.replace(/#.*$/, "").trim();
    if (line === "") return;
    const source = `${variable} entry ${index + 1}`;
    const fail = (why: string): never => {
      throw new OdgmError("invalid_config", `${source}: ${why}`, { variable });
    };
    const fields = line.split(/\s+/);
    const usage = "expected `<role> <token or sha256:<hex>> [<collection>,…] [expires=<time>]`";
    if (fields.length < 2 || fields.length > 4) fail(usage);
    const [role, secret = "", ...options] = fields;
    let scope: string | undefined;
    let expiresAt: number | undefined;
    for (const option of options) {
      if (option.startsWith("expires=")) {
        if (expiresAt !== undefined) fail(usage);
        const text = option.slice("expires=".length);
        expiresAt = /^\d{4}-\d{2}-\d{2}(T[0-9:.]+(Z|[+-]\d{2}:\d{2}))?$/.test(text)
          ? Date.parse(text)
          : Number.NaN;
        if (Number.isNaN(expiresAt)) {
          fail("expires= takes an ISO 8601 date or time, e.g. 2030-01-31 or 2030-01-31T12:00:00Z");
        }
      } else if (scope === undefined) scope = option;
      else fail(usage);
    }
    if (!(ROLES as readonly string[]).includes(role ?? "")) {
      fail(`the role must be one of ${ROLES.join(", ")}`);
    }
    const digest = DIGEST.exec(secret);
    if (digest === null) {
      if (secret.toLowerCase().startsWith("sha256:")) {
        fail("a sha256: digest is 64 hexadecimal digits");
      }
      if (!TOKEN.test(secret)) {
        fail("a token is made of letters, digits and -._~+/ (RFC 6750), optionally ending in =");
      }
      if (secret.length < MIN_TOKEN_LENGTH) {
        fail(`a token is at least ${MIN_TOKEN_LENGTH} characters long`);
      }
    }
    let collections: Set<string> | undefined;
    if (scope !== undefined) {
      collections = new Set(scope.split(",").filter((c) => c !== ""));
      if (collections.size === 0) fail("the collection list is empty");
      for (const c of collections) {
        if (!isCollectionName(c)) fail(`a collection name is ${COLLECTION_NAME_RULE}`);
      }
    }
    entries.push({
      digest: digest?.[1] !== undefined ? Buffer.from(digest[1], "hex") : digestToken(secret),
      role: role as Role,
      collections,
      source,
      expiresAt,
    });
  });
  return entries;
}

/** A {@link TokenSet} over `entries`. */
export function createTokenSet(entries: readonly TokenEntry[]): TokenSet {
  const all = [...entries];
  return {
    size: all.length,
    authenticate(token) {
      const presented = digestToken(token);
      let found: TokenEntry | undefined;
      // Every digest is compared, matched or not, so the time taken says nothing about which.
      for (const entry of all) {
        if (timingSafeEqual(presented, entry.digest) && found === undefined) found = entry;
      }
      return found === undefined
        ? undefined
        : {
            role: found.role,
            collections: found.collections,
            source: found.source,
            expiresAt: found.expiresAt,
          };
    },
  };
}
