import { describe, expect, it } from "vitest";
import { decideGate } from "../../../src/team/gate";
import { lowerBoundTokens, measureGate, namedArtifacts, type GoalFacts } from "../../../src/team/gate-measure";

const FOUR = {
  title: "Write the onboarding notes",
  acceptance_criteria: ["notes/a.md covers accounts", "notes/b.md covers tools", "notes/c.md covers people", "notes/d.md covers rituals"],
};

/** The gate as the goal path runs it: measured inputs, auto mode, no sandbox. */
function gateOf(facts: GoalFacts, extra: { capability_gap?: { gap_pp: number; mde_pp: number } } = {}) {
  const m = measureGate(facts);
  return decideGate({
    mode: "auto",
    sandbox_enabled: false,
    signals: m.signals,
    exclusions: m.exclusions,
    acceptance_criteria_count: facts.acceptance_criteria.length,
    ...(m.rounds_left !== undefined ? { rounds_left: m.rounds_left } : {}),
    ...extra,
  });
}

describe("named artifacts", () => {
  it("reads file paths and directories, not words with a slash, versions, abbreviations or URL hosts", () => {
    expect(namedArtifacts("notes/a.md exists; ./src/x.test.ts passes; README.md and out/ too.")).toEqual([
      "notes/a.md",
      "src/x.test.ts",
      "README.md",
      "out/",
    ]);
    expect(namedArtifacts("and/or input/output, v1.2.3, e.g. this, see https://example.com/a.md")).toEqual([]);
    expect(namedArtifacts("notes/a.mdを作成し、docs/b.md にリンクする")).toEqual(["notes/a.md", "docs/b.md"]);
  });
});

describe("measuring the gate's inputs from the goal", () => {
  it("volume: four criteria naming four distinct files, none referring to another, are four independent items", () => {
    const m = measureGate(FOUR);
    expect(m.signals).toMatchObject({ independent_items: 4, dependency_hubs: 0, produces_artifacts: true });
    expect(m.record.items).toEqual([
      { artifact: "notes/a.md", criteria: [0] },
      { artifact: "notes/b.md", criteria: [1] },
      { artifact: "notes/c.md", criteria: [2] },
      { artifact: "notes/d.md", criteria: [3] },
    ]);
    // Two criteria about one file are one item.
    const same = measureGate({ title: "t", acceptance_criteria: ["notes/a.md exists", "notes/a.md is short"] });
    expect(same.record.items).toEqual([{ artifact: "notes/a.md", criteria: [0, 1] }]);
  });

  it("volume: a criterion naming several files, or referring to the others, is a dependency hub and takes its files with it", () => {
    const m = measureGate({
      title: "Notes",
      acceptance_criteria: [...FOUR.acceptance_criteria, "index.md links notes/a.md and notes/b.md", "both stay consistent"],
    });
    expect(m.signals).toMatchObject({ dependency_hubs: 2, independent_items: 2 });
    expect(m.record.hubs).toEqual([
      { criterion: 4, why: "names_several_artifacts", artifacts: ["index.md", "notes/a.md", "notes/b.md"] },
      { criterion: 5, why: "refers_to_other_items", artifacts: [] },
    ]);
    expect(measureGate({ title: "ノート", acceptance_criteria: ["a.md を書く", "b.md は両方を参照する"] }).signals.dependency_hubs).toBe(1);
    // The gate: hubs mean the volume signal does not hold, however many items.
    expect(gateOf({ title: "Notes", acceptance_criteria: [...FOUR.acceptance_criteria, "index links both"] }).signals.volume).toEqual({
      holds: false,
      unmeasured: false,
    });
  });

  it("long horizon: ≥ 3 criteria and a named output path; a goal that names no path leaves produces_artifacts unmeasured", () => {
    expect(gateOf(FOUR).signals.long_horizon).toEqual({ holds: true, unmeasured: false });
    // The title's path counts as a declared output too.
    expect(measureGate({ title: "Write report.md", acceptance_criteria: ["a", "b", "c"] }).signals.produces_artifacts).toBe(true);
    const none = measureGate({ title: "Think it over", acceptance_criteria: ["a", "b", "c"] });
    expect(none.signals).not.toHaveProperty("produces_artifacts");
    expect(none.record.unmeasured).toEqual(["fits_one_context", "produces_artifacts"]);
    expect(gateOf({ title: "Think it over", acceptance_criteria: ["a", "b", "c"] }).signals.long_horizon).toEqual({
      holds: false,
      unmeasured: true,
    });
  });

  it("context: unmeasured without a known window; measured against one when given, with a lower-bound estimate", () => {
    const m = measureGate(FOUR);
    expect(m.signals).not.toHaveProperty("fits_one_context");
    expect(m.record.context).toEqual({ estimated_tokens: expect.any(Number), window_tokens: null });
    expect(gateOf(FOUR).signals.context).toEqual({ holds: false, unmeasured: true });

    const soul = "x".repeat(6_000); // at least 1 000 tokens
    expect(measureGate({ ...FOUR, context_texts: [soul], context_window_tokens: 500 }).signals.fits_one_context).toBe(false);
    expect(measureGate({ ...FOUR, context_texts: [soul], context_window_tokens: 200_000 }).signals.fits_one_context).toBe(true);
    expect(lowerBoundTokens("abcdef")).toBe(1);
    expect(lowerBoundTokens("日本語です")).toBe(2);
  });

  it("decides as the seed says: volume and long horizon measured make a gray zone; a measured capability gap makes it a team", () => {
    expect(gateOf(FOUR)).toMatchObject({ decision: "gray", reason: "signals_gray", signals: { held: 2 } });
    expect(gateOf(FOUR, { capability_gap: { gap_pp: 20, mde_pp: 10 } })).toMatchObject({ decision: "team", reason: "signals_team" });
    expect(gateOf({ title: "Fix the typo", acceptance_criteria: ["the typo is gone"] })).toMatchObject({
      decision: "solo",
      reason: "signals_solo",
      signals: { held: 0 },
    });
  });
});

describe("measuring the hard exclusions", () => {
  it("live channel turn: only a live, open conversation whose reply is in flight", () => {
    const live = { source: "live", status: "open", reply_pending: true } as const;
    expect(measureGate({ ...FOUR, conversation: live }).exclusions.live_channel_turn).toBe(true);
    expect(gateOf({ ...FOUR, conversation: live })).toMatchObject({ decision: "solo", reason: "excluded_live_channel_turn" });
    for (const conversation of [
      null,
      { ...live, reply_pending: false },
      { ...live, status: "closed" },
      { ...live, source: "batch" },
    ] as const)
      expect(measureGate({ ...FOUR, conversation }).exclusions.live_channel_turn).toBe(false);
    expect(measureGate({ ...FOUR, conversation: { ...live, reply_pending: false } }).record.conversation).toBe("live_idle");
  });

  it("plan-first: crewplane has no plan-first approval, so none is pending", () => {
    expect(measureGate(FOUR).exclusions.plan_first_pending).toBe(false);
  });

  it("irreversible operation: the council scan's destructive-operation detection over the title and criteria", () => {
    const goal = { title: "Reset the box", acceptance_criteria: [...FOUR.acceptance_criteria, "run rm -rf / when done"] };
    const m = measureGate(goal);
    expect(m.exclusions.irreversible_in_plan).toBe(true);
    expect(m.record.irreversible).toEqual(["destructive_operation"]);
    expect(gateOf(goal)).toMatchObject({ decision: "solo", reason: "excluded_irreversible_in_plan" });
    expect(measureGate({ title: "Drop database prod", acceptance_criteria: [] }).exclusions.irreversible_in_plan).toBe(true);
    expect(measureGate(FOUR).exclusions.irreversible_in_plan).toBe(false);
  });

  it("rounds left: the loop's budget, below 3 keeps the goal solo; absent stays absent", () => {
    expect(gateOf({ ...FOUR, rounds_left: 2 })).toMatchObject({ decision: "solo", reason: "excluded_rounds_left" });
    expect(measureGate(FOUR)).not.toHaveProperty("rounds_left");
  });
});

describe("the caller's hints", () => {
  it("can only lean solo: lower items, add hubs, say it fits, say no artifacts, add an exclusion", () => {
    const lowered = measureGate(FOUR, {
      signals: { independent_items: 2, dependency_hubs: 1, produces_artifacts: false },
      exclusions: { plan_first_pending: true },
    });
    expect(lowered.signals).toMatchObject({ independent_items: 2, dependency_hubs: 1, produces_artifacts: false });
    expect(lowered.exclusions.plan_first_pending).toBe(true);
    expect(lowered.record.hints.applied).toEqual([
      "signals.independent_items",
      "signals.dependency_hubs",
      "signals.produces_artifacts",
      "exclusions.plan_first_pending",
    ]);
    const fits = measureGate({ ...FOUR, context_window_tokens: 1 }, { signals: { fits_one_context: true } });
    expect(fits.signals.fits_one_context).toBe(true);
  });

  it("never makes a signal hold, never fills an unmeasured one, and never lifts a measured exclusion", () => {
    const small = { title: "Fix the typo", acceptance_criteria: ["the typo is gone"] };
    const claimed = measureGate(
      { ...small, conversation: { source: "live", status: "open", reply_pending: true } },
      {
        signals: { independent_items: 9, dependency_hubs: 0, fits_one_context: false, produces_artifacts: true },
        exclusions: { live_channel_turn: false, irreversible_in_plan: false },
      },
    );
    expect(claimed.signals).toEqual({ independent_items: 0, dependency_hubs: 0 });
    expect(claimed.exclusions).toMatchObject({ live_channel_turn: true, irreversible_in_plan: false });
    expect(claimed.record.hints).toEqual({
      applied: [],
      ignored: [
        "signals.independent_items",
        "signals.dependency_hubs",
        "signals.fits_one_context",
        "signals.produces_artifacts",
        "exclusions.live_channel_turn",
        "exclusions.irreversible_in_plan",
      ],
    });
  });
});
