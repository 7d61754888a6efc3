import { describe, expect, it } from "vitest";
import {
  baselineOf,
  liftOf,
  MIN_USES_FOR_DEACTIVATION,
  selectPromptSkills,
  shouldDeactivate,
  skillTokens,
  triggersMatch,
  type PromptSkill,
} from "../../../src/evolution/skills";

function skill(id: string, fields: Partial<PromptSkill> = {}): PromptSkill {
  return {
    skillId: id,
    name: id,
    description: "d",
    body: "b",
    activatedAt: "2026-01-01T00:00:00.000Z",
    measuredUses: 0,
    errorSum: 0,
    baselineSum: 0,
    ...fields,
  };
}
/** Counters that read as this lift over one measured use. */
const lift = (value: number) => ({ measuredUses: 1, errorSum: 0.5 - value, baselineSum: 0.5 });

describe("skill lift", () => {
  it("is unknown (null) until a use had a baseline, then the mean of baseline minus error", () => {
    expect(liftOf({ measuredUses: 0, errorSum: 0, baselineSum: 0 })).toBeNull();
    expect(liftOf({ measuredUses: 2, errorSum: 0.6, baselineSum: 1 })).toBeCloseTo(0.2, 12);
    expect(baselineOf([])).toBeNull();
    expect(baselineOf([0.2, 0.4])).toBeCloseTo(0.3, 12);
  });

  it(`deactivates only a measured negative lift after ${MIN_USES_FOR_DEACTIVATION} uses`, () => {
    const negative = { errorSum: 3, baselineSum: 2 };
    expect(shouldDeactivate({ measuredUses: MIN_USES_FOR_DEACTIVATION - 1, ...negative })).toBe(false);
    expect(shouldDeactivate({ measuredUses: MIN_USES_FOR_DEACTIVATION, ...negative })).toBe(true);
    expect(shouldDeactivate({ measuredUses: MIN_USES_FOR_DEACTIVATION, errorSum: 2, baselineSum: 2 })).toBe(false);
  });
});

describe("trigger terms", () => {
  it("match case-insensitively and across full-width forms", () => {
    expect(triggersMatch(["Invoice"], "where is my INVOICE?")).toBe(true);
    expect(triggersMatch(["請求書"], "請求書を送ってください")).toBe(true);
    expect(triggersMatch(["invoice"], "ｉｎｖｏｉｃｅ please")).toBe(true);
    expect(triggersMatch(["invoice"], "receipt")).toBe(false);
  });
});

describe("the prompt's skills", () => {
  it("ranks measured non-negative lift first, then unmeasured, then negative; ties by the latest activation", () => {
    const out = selectPromptSkills(
      [
        skill("neg", lift(-0.1)),
        skill("old", { activatedAt: "2026-01-01T00:00:00.000Z" }),
        skill("new", { activatedAt: "2026-02-01T00:00:00.000Z" }),
        skill("low", lift(0.05)),
        skill("high", lift(0.3)),
      ],
      10_000,
      10,
    );
    expect(out.included.map((s) => s.skillId)).toEqual(["high", "low", "new", "old", "neg"]);
    expect(out.left_out).toEqual([]);
  });

  it("leaves out what exceeds max_active_skills or the token budget, saying which rule, and fits the budget", () => {
    const big = skill("big", { ...lift(0.2), body: "x".repeat(400) });
    const small = [skill("a", lift(0.1)), skill("b", lift(0.05)), skill("c", lift(0.01))];
    const budget = skillTokens(small[0]!) * 2;
    const out = selectPromptSkills([big, ...small], budget, 3);
    expect(out.included.map((s) => s.skillId)).toEqual(["a", "b"]);
    expect(out.left_out).toEqual([
      { skill_id: "big", reason: "token_budget" },
      { skill_id: "c", reason: "max_active_skills" },
    ]);
    expect(out.tokens).toBeLessThanOrEqual(budget);
    expect(selectPromptSkills(small, 0, 5).included).toEqual([]);
  });
});
