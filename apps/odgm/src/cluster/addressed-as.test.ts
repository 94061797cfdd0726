// A node counts itself refused only when a peer keeps addressing it by another incarnation:
// one batch from a peer that has not yet applied its re-adding is not enough, and a peer
// that stopped sending such batches no longer counts.
import { describe, expect, it } from "vitest";
import { AddressedAs } from "./addressed-as.js";

describe("the incarnation peers address a node by", () => {
  it("counts a peer that keeps addressing it by another incarnation", () => {
    const a = new AddressedAs(7, 2000);
    a.note(1, 9, 0);
    expect(a.misaddressedBy(1999)).toBeUndefined();
    a.note(1, 9, 1500);
    expect(a.misaddressedBy(2000)).toEqual({ peer: 1, incarnation: 9 });
  });

  it("does not count its own incarnation, none (0), or a peer that addressed it rightly since", () => {
    const a = new AddressedAs(7, 2000);
    a.note(1, 7, 0);
    a.note(2, 0, 0);
    a.note(3, 9, 0);
    a.note(3, 7, 1000);
    expect(a.misaddressedBy(5000)).toBeUndefined();
  });

  it("stops counting a peer that no longer sends, and starts over on another incarnation", () => {
    const a = new AddressedAs(7, 2000);
    a.note(1, 9, 0);
    a.note(1, 9, 2000);
    expect(a.misaddressedBy(3000)).toEqual({ peer: 1, incarnation: 9 });
    expect(a.misaddressedBy(4000)).toBeUndefined();
    a.note(1, 8, 4000);
    expect(a.misaddressedBy(5000)).toBeUndefined();
    a.note(1, 8, 6000);
    expect(a.misaddressedBy(6000)).toEqual({ peer: 1, incarnation: 8 });
  });
});
