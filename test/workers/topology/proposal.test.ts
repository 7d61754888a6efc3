import { describe, expect, it } from "vitest";
import type { Cell } from "../../../src/topology/evidence";
import { proposalEvidence, proposeReroute, type SkipReason } from "../../../src/topology/proposal";

const RULE = { min_samples: 5, reject_rate_threshold: 0.6 };
const cell = (agent: string, task_class: string, samples: number, rejects: number): Cell => ({
  agent,
  task_class,
  samples,
  rejects,
  needs_human: 0,
  oscillations: 0,
});
// lead ── alice, bob, dave;  other ── erin;  carol has no parent
const ORG = new Map<string, string | null>([
  ["lead", null],
  ["alice", "lead"],
  ["bob", "lead"],
  ["dave", "lead"],
  ["other", null],
  ["erin", "other"],
  ["carol", null],
]);
const open = () => null;

describe("proposeReroute", () => {
  it("reroutes a bad edge to the better sibling under the same parent", () => {
    const d = proposeReroute([cell("alice", "billing", 5, 4), cell("bob", "billing", 6, 1)], ORG, RULE, open);
    expect(d.proposal).toMatchObject({ task_class: "billing", from_agent: "alice", to_agent: "bob" });
  });

  it("proposes at a reject rate exactly at the threshold and with exactly min_samples", () => {
    const d = proposeReroute([cell("alice", "billing", 5, 3), cell("bob", "billing", 5, 0)], ORG, RULE, open);
    expect(d.proposal?.from_agent).toBe("alice");
  });

  it("does not propose just under the threshold or one sample short", () => {
    expect(
      proposeReroute([cell("alice", "billing", 10, 5), cell("bob", "billing", 9, 0)], ORG, { ...RULE, reject_rate_threshold: 0.51 }, open)
        .proposal,
    ).toBeNull();
    expect(proposeReroute([cell("alice", "billing", 4, 4), cell("bob", "billing", 9, 0)], ORG, RULE, open).proposal).toBeNull();
  });

  it("ignores a better sibling that is short of samples, and says so", () => {
    const d = proposeReroute([cell("alice", "billing", 5, 5), cell("bob", "billing", 4, 0)], ORG, RULE, open);
    expect(d.proposal).toBeNull();
    expect(d.skipped).toEqual([{ task_class: "billing", agent: "alice", reason: "no_better_sibling" }]);
  });

  it("needs a sibling strictly better: an equal rate is not better", () => {
    expect(proposeReroute([cell("alice", "billing", 5, 4), cell("bob", "billing", 10, 8)], ORG, RULE, open).proposal).toBeNull();
  });

  it("never reroutes across parents or for an agent with no parent", () => {
    const d = proposeReroute(
      [cell("alice", "billing", 5, 5), cell("erin", "billing", 9, 0), cell("carol", "billing", 9, 9), cell("lead", "billing", 9, 0)],
      ORG,
      RULE,
      open,
    );
    expect(d.proposal).toBeNull();
    expect(d.skipped).toEqual(
      expect.arrayContaining([
        { task_class: "billing", agent: "carol", reason: "no_parent" },
        { task_class: "billing", agent: "alice", reason: "no_better_sibling" },
      ]),
    );
  });

  it("only compares within the same task class", () => {
    expect(proposeReroute([cell("alice", "billing", 5, 5), cell("bob", "support", 9, 0)], ORG, RULE, open).proposal).toBeNull();
  });

  it("picks the best sibling: lowest rate, then more samples, then id", () => {
    const rateWins = proposeReroute([cell("alice", "b", 5, 5), cell("bob", "b", 5, 1), cell("dave", "b", 50, 5)], ORG, RULE, open);
    expect(rateWins.proposal?.to_agent).toBe("dave");
    const samplesBreakTie = proposeReroute([cell("alice", "b", 5, 5), cell("bob", "b", 5, 0), cell("dave", "b", 9, 0)], ORG, RULE, open);
    expect(samplesBreakTie.proposal?.to_agent).toBe("dave");
    const idBreaksTie = proposeReroute([cell("alice", "b", 5, 5), cell("dave", "b", 6, 0), cell("bob", "b", 6, 0)], ORG, RULE, open);
    expect(idBreaksTie.proposal?.to_agent).toBe("bob");
  });

  it("makes at most one proposal, for the worst edge first (rate, then samples, then class)", () => {
    const cells = [
      cell("alice", "a", 5, 4),
      cell("bob", "a", 5, 0),
      cell("bob", "z", 5, 5),
      cell("alice", "z", 5, 0),
      cell("dave", "a", 10, 8),
    ];
    const d = proposeReroute(cells, ORG, RULE, open);
    expect(d.proposal).toMatchObject({ task_class: "z", from_agent: "bob", to_agent: "alice" });
    const tie = proposeReroute([cell("alice", "b", 5, 4), cell("dave", "b", 10, 8), cell("bob", "b", 9, 0)], ORG, RULE, open);
    expect(tie.proposal?.from_agent).toBe("dave");
  });

  it("skips held edges (pending, override, cooldown) and proposes the next one", () => {
    const held = new Map<string, SkipReason>([["billing/alice", "cooldown"]]);
    const d = proposeReroute(
      [cell("alice", "billing", 5, 5), cell("bob", "billing", 5, 0), cell("dave", "billing", 5, 4)],
      ORG,
      RULE,
      (c, a) => held.get(`${c}/${a}`) ?? null,
    );
    expect(d.skipped).toEqual([{ task_class: "billing", agent: "alice", reason: "cooldown" }]);
    expect(d.proposal).toMatchObject({ from_agent: "dave", to_agent: "bob" });
  });

  it("attaches samples, rate and at most the given sample ids as evidence", () => {
    const d = proposeReroute(
      [{ ...cell("alice", "billing", 5, 4), needs_human: 2, oscillations: 1 }, cell("bob", "billing", 6, 1)],
      ORG,
      RULE,
      open,
    );
    expect(proposalEvidence(d.proposal!, ["task_1"], 14)).toEqual({
      samples: 5,
      reject_rate: 0.8,
      needs_human_rate: 0.4,
      oscillations: 1,
      sample_task_ids: ["task_1"],
      sibling: { agent: "bob", samples: 6, reject_rate: 1 / 6 },
      lookback_days: 14,
    });
  });
});
