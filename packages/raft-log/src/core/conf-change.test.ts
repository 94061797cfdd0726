import { describe, expect, it } from "vitest";
import type { ConfState } from "../types.js";
import { applyConfChange, jsonConfChangeCodec } from "./conf-change.js";
import { isRaftError } from "./raft-error.js";

const cs = (voters: number[], extra: Partial<ConfState> = {}): ConfState => ({
  voters,
  learners: [],
  votersOutgoing: [],
  learnersNext: [],
  autoLeave: false,
  ...extra,
});

describe("conf change", () => {
  it("applies single-server changes and rejects multi-voter simple changes", () => {
    expect(
      applyConfChange(cs([1, 2]), {
        changes: [{ type: "add_voter", nodeId: 3 }],
        transition: "auto",
      }).voters,
    ).toEqual([1, 2, 3]);
    expect(
      applyConfChange(cs([1, 2]), {
        changes: [{ type: "add_learner", nodeId: 2 }],
        transition: "auto",
      }),
    ).toMatchObject({ voters: [1], learners: [2] });
    expect(() =>
      applyConfChange(cs([1]), { changes: [{ type: "remove", nodeId: 1 }], transition: "auto" }),
    ).toThrow(/conf_change_pending/);
  });

  it("enters and leaves joint consensus; demotions wait in learnersNext", () => {
    const joint = applyConfChange(cs([1, 2, 3]), {
      changes: [
        { type: "add_voter", nodeId: 4 },
        { type: "add_learner", nodeId: 1 },
      ],
      transition: "auto",
    });
    expect(joint).toMatchObject({
      voters: [2, 3, 4],
      votersOutgoing: [1, 2, 3],
      learnersNext: [1],
      autoLeave: true,
    });
    let err: unknown;
    try {
      applyConfChange(joint, { changes: [{ type: "add_voter", nodeId: 5 }], transition: "auto" });
    } catch (e) {
      err = e;
    }
    expect(isRaftError(err, "conf_change_pending")).toBe(true);
    const left = applyConfChange(joint, { changes: [], transition: "auto" });
    expect(left).toMatchObject({
      voters: [2, 3, 4],
      votersOutgoing: [],
      learners: [1],
      learnersNext: [],
    });
    expect(() => applyConfChange(left, { changes: [], transition: "auto" })).toThrow(
      /not in a joint/,
    );
    expect(
      applyConfChange(cs([1]), {
        changes: [{ type: "add_voter", nodeId: 2 }],
        transition: "joint_explicit",
      }).autoLeave,
    ).toBe(false);
  });

  it("round-trips through the JSON codec and rejects garbage", () => {
    const cc = { changes: [{ type: "remove" as const, nodeId: 3 }], transition: "joint" as const };
    expect(jsonConfChangeCodec.decode(jsonConfChangeCodec.encode(cc))).toEqual(cc);
    expect(() => jsonConfChangeCodec.decode(new Uint8Array([0xff]))).toThrow(/invalid_argument/);
  });
});
