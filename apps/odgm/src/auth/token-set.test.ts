import { describe, expect, it } from "vitest";
import { isOdgmError } from "../odgm-error.js";
import { createTokenSet, digestToken, parseTokenEntries, roleIncludes } from "./token-set.js";

const A = "alpha-token-0123456789";
const B = "bravo-token-0123456789";

describe("parseTokenEntries", () => {
  it("reads roles, plain tokens, digests, scopes and comments", () => {
    const text = `# comment\nadmin ${A}\n\nread sha256:${digestToken(B).toString("hex").toUpperCase()} orders,carts # trailing`;
    const set = createTokenSet(parseTokenEntries(text, "ODGM_AUTH_TOKENS"));
    expect(set.size).toBe(2);
    expect(set.authenticate(A)).toMatchObject({ role: "admin", collections: undefined });
    const b = set.authenticate(B);
    expect(b?.role).toBe("read");
    expect([...(b?.collections ?? [])]).toEqual(["orders", "carts"]);
    expect(set.authenticate("other-token-0123456789")).toBeUndefined();
    // The digest text itself is not a token.
    expect(set.authenticate(`sha256:${digestToken(B).toString("hex")}`)).toBeUndefined();
  });

  it("reads expiry times, before or after the collections", () => {
    const [a, b] = parseTokenEntries(
      `read ${A} expires=2030-01-31; write ${B} orders expires=2030-01-31T12:00:00+02:00`,
      "X",
    );
    expect(a?.expiresAt).toBe(Date.UTC(2030, 0, 31));
    expect(a?.collections).toBeUndefined();
    expect(b?.expiresAt).toBe(Date.UTC(2030, 0, 31, 10));
    expect([...(b?.collections ?? [])]).toEqual(["orders"]);
    expect(createTokenSet([a, b].filter((e) => e !== undefined)).authenticate(A)?.expiresAt).toBe(
      Date.UTC(2030, 0, 31),
    );
  });

  it("splits entries on ';' as well as newlines", () => {
    expect(parseTokenEntries(`read ${A}; write ${B}`, "X").map((e) => e.role)).toEqual([
      "read",
      "write",
    ]);
  });

  it.each([
    ["owner alpha-token-0123456789", "the role must be one of read, write, admin"],
    ["read", "expected `<role>"],
    ["read short", "at least 16 characters"],
    ["read sha256:abcd", "64 hexadecimal digits"],
    ["read tok\u00e9n-0123456789abcdef", "RFC 6750"],
    [`read ${A} orders,bad/name`, "a collection name is"],
    [`read ${A} a b`, "expected `<role>"],
    [`read ${A} expires=tomorrow`, "ISO 8601"],
    [`read ${A} expires=2030-02-30x`, "ISO 8601"],
    [`read ${A} expires=2030-01-01 expires=2031-01-01`, "expected `<role>"],
  ])("refuses %j clearly, without quoting the token", (text, why) => {
    let error: unknown;
    try {
      parseTokenEntries(text, "ODGM_AUTH_TOKENS");
    } catch (err) {
      error = err;
    }
    expect(isOdgmError(error) && error.code).toBe("invalid_config");
    expect((error as Error).message).toContain("ODGM_AUTH_TOKENS entry 1");
    expect((error as Error).message).toContain(why);
    expect((error as Error).message).not.toContain("0123456789");
  });
});

describe("roleIncludes", () => {
  it("orders read ⊂ write ⊂ admin", () => {
    expect(roleIncludes("admin", "write")).toBe(true);
    expect(roleIncludes("write", "read")).toBe(true);
    expect(roleIncludes("write", "admin")).toBe(false);
    expect(roleIncludes("read", "write")).toBe(false);
  });
});
