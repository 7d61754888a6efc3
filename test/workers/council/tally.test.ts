import { describe, expect, it } from "vitest";
import { crystallises, decide, type Ballot } from "../../../src/council/tally";

let n = 0;
const member = (vote: Ballot["vote"], confidence = 0.8): Ballot => ({ node_id: `m${n++}`, vote, weight: 1, confidence });
const community = (vote: Ballot["vote"], confidence = 0.8): Ballot => ({ node_id: `c${n++}`, vote, weight: 0.5, confidence });

describe("tally", () => {
  it("approves at exactly a 0.6 approve share (3 of 5 member votes)", () => {
    const r = decide([member("approve"), member("approve"), member("approve"), member("reject"), member("revise")]);
    expect(r).toMatchObject({ outcome: "approved", approve_share: 0.6, tally: { approve: 3, reject: 1, revise: 1, total: 5, votes: 5 } });
  });

  it("does not approve just below 0.6 and rejects at exactly a 0.5 reject share", () => {
    // approve 2.5 / 5 = 0.5 (< 0.6), reject 2.5 / 5 = 0.5 → rejected
    const r = decide([member("approve"), member("approve"), community("approve"), member("reject"), member("reject"), community("reject")]);
    expect(r).toMatchObject({ outcome: "rejected", reject_share: 0.5, tally: { approve: 2.5, reject: 2.5, total: 5 } });
  });

  it("is revise when neither approve reaches 0.6 nor reject 0.5", () => {
    const r = decide([member("approve"), member("approve"), member("reject"), member("revise"), member("revise")]);
    expect(r).toMatchObject({ outcome: "revise", approve_share: 0.4, reject_share: 0.2 });
  });

  it("counts community-only ballots at 0.5 each and decides on their shares", () => {
    const r = decide([community("approve", 0.9), community("approve", 0.7), community("reject", 0.2)]);
    expect(r).toMatchObject({ outcome: "approved", tally: { approve: 1, reject: 0.5, total: 1.5, votes: 3 } });
    if (r.outcome !== "approved") throw new Error("unreachable");
    expect(r.confidence).toBeCloseTo(0.8, 10);
  });

  it("abandons on zero votes", () => {
    expect(decide([])).toEqual({
      outcome: "abandoned",
      reason: "no_votes",
      tally: { approve: 0, reject: 0, revise: 0, total: 0, votes: 0 },
    });
  });

  it("weights confidence by ballot weight over the winning side only", () => {
    const r = decide([member("approve", 1), community("approve", 0.4), member("reject", 0)]);
    // approve 1.5 / 2.5 = 0.6 → approved; confidence (1*1 + 0.5*0.4) / 1.5 = 0.8
    expect(r.outcome).toBe("approved");
    if (r.outcome === "abandoned") throw new Error("unreachable");
    expect(r.confidence).toBeCloseTo(0.8, 10);
  });

  it("leaves confidence unknown when the winning outcome (a default revise) got no ballots", () => {
    const r = decide([member("approve"), member("reject"), member("approve"), member("reject"), community("approve")]);
    // approve 2.5 / 4.5 ≈ 0.56, reject 2 / 4.5 ≈ 0.44 → revise, which nobody voted for
    expect(r).toMatchObject({ outcome: "revise", confidence: null });
  });

  it("crystallises a principle only for an approval with confidence ≥ 0.7", () => {
    expect(crystallises("approved", 0.7)).toBe(true);
    expect(crystallises("approved", 0.69)).toBe(false);
    expect(crystallises("approved", null)).toBe(false);
    expect(crystallises("rejected", 0.95)).toBe(false);
  });
});
