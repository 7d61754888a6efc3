import { describe, expect, it } from "vitest";
import { costFiguresOf } from "../../../src/jobs/cost-figures";
import { budgetDecision, budgetRatio, budgetStateOf, budgetsOfJob } from "../../../src/spend/budgets";
import { budgetsConfig } from "../../../src/spend/config";
import { monthDays } from "../../../src/spend/ledger";

const AT = "2026-03-04T05:06:07.000Z";

describe("budgetDecision", () => {
  const limit = { monthly_tokens: 1_000 };

  it("does nothing under the warning ratio", () => {
    expect(budgetDecision({ usd: null, tokens: 799 }, limit, 0.8, null)).toBe("none");
  });

  it("warns once at the warning ratio", () => {
    expect(budgetDecision({ usd: null, tokens: 800 }, limit, 0.8, null)).toBe("warn");
    expect(budgetDecision({ usd: null, tokens: 950 }, limit, 0.8, { warnedAt: AT, exceededAt: null })).toBe("none");
  });

  it("exceeds once at 100 %, whether or not the warning came first", () => {
    expect(budgetDecision({ usd: null, tokens: 1_000 }, limit, 0.8, null)).toBe("exceed");
    expect(budgetDecision({ usd: null, tokens: 1_200 }, limit, 0.8, { warnedAt: AT, exceededAt: null })).toBe("exceed");
    expect(budgetDecision({ usd: null, tokens: 5_000 }, limit, 0.8, { warnedAt: AT, exceededAt: AT })).toBe("none");
  });

  it("never crosses on an unknown figure: unknown is not spend", () => {
    expect(budgetDecision({ usd: null, tokens: null }, { monthly_usd: 1 }, 0.8, null)).toBe("none");
    expect(budgetDecision({ usd: null, tokens: 10_000 }, { monthly_usd: 1 }, 0.8, null)).toBe("none");
  });

  it("takes the larger share when both dollars and tokens are limited", () => {
    const both = { monthly_usd: 10, monthly_tokens: 1_000 };
    expect(budgetRatio({ usd: 9, tokens: 100 }, both)).toBeCloseTo(0.9);
    expect(budgetDecision({ usd: 9, tokens: 100 }, both, 0.8, null)).toBe("warn");
    expect(budgetDecision({ usd: 1, tokens: 1_000 }, both, 0.8, null)).toBe("exceed");
    expect(budgetRatio({ usd: null, tokens: null }, both)).toBeNull();
  });
});

describe("budgetStateOf", () => {
  it("names the furthest the month got, a lift above all", () => {
    expect(budgetStateOf(null)).toBe("ok");
    expect(budgetStateOf({ warnedAt: AT, exceededAt: null, liftedAt: null })).toBe("warning");
    expect(budgetStateOf({ warnedAt: AT, exceededAt: AT, liftedAt: null })).toBe("exceeded");
    expect(budgetStateOf({ warnedAt: AT, exceededAt: AT, liftedAt: AT })).toBe("lifted");
  });
});

describe("the [budgets] section", () => {
  it("defaults to no budget and a 0.8 warning ratio", () => {
    expect(budgetsConfig.schema.parse({})).toEqual({ warn_ratio: 0.8, employees: {}, projects: {} });
  });

  it("refuses a limit that sets nothing, a ratio out of range and an id that is not one", () => {
    expect(budgetsConfig.schema.safeParse({ employees: { ada: {} } }).success).toBe(false);
    expect(budgetsConfig.schema.safeParse({ warn_ratio: 0.3 }).success).toBe(false);
    expect(budgetsConfig.schema.safeParse({ warn_ratio: 1 }).success).toBe(false);
    expect(budgetsConfig.schema.safeParse({ company: { monthly_usd: 0 } }).success).toBe(false);
    expect(budgetsConfig.schema.safeParse({ employees: { __proto__x: { monthly_usd: 1 } } }).success).toBe(false);
    expect(budgetsConfig.schema.safeParse({ projects: { "not-a-project": { monthly_usd: 1 } } }).success).toBe(false);
    expect(budgetsConfig.schema.safeParse({ employees: { ada: { monthly_tokens: 1.5 } } }).success).toBe(false);
  });

  it("finds the budgets a job counts toward: its employee's, its project's, the company's", () => {
    const config = budgetsConfig.schema.parse({
      company: { monthly_usd: 100 },
      employees: { ada: { monthly_tokens: 10 } },
      projects: { proj_0123456789abcdef: { monthly_usd: 5 } },
    });
    expect(budgetsOfJob(config, "ada", "proj_0123456789abcdef").map((r) => `${r.scope}:${r.id}`)).toEqual([
      "employee:ada",
      "project:proj_0123456789abcdef",
      "company:company",
    ]);
    expect(budgetsOfJob(config, "bob", null).map((r) => r.scope)).toEqual(["company"]);
    expect(budgetsOfJob(config, "constructor", "toString").map((r) => r.scope)).toEqual(["company"]);
  });
});

describe("costFiguresOf", () => {
  it("keeps what was reported and leaves the rest out", () => {
    expect(costFiguresOf({ text: "x", usage: { input_tokens: 10, output_tokens: 5 }, model: "claude-sonnet-4-6" })).toEqual({
      input_tokens: 10,
      output_tokens: 5,
      model: "claude-sonnet-4-6",
    });
    expect(costFiguresOf({ cost_usd: 0.25 })).toEqual({ cost_usd: 0.25 });
  });

  it("gives nothing for a result that reported neither usage nor a price", () => {
    expect(costFiguresOf({ text: "[offline runtime] hi", runtime: "offline" })).toBeNull();
    expect(costFiguresOf({ usage: {} })).toBeNull();
    expect(costFiguresOf({ usage: { input_tokens: -1 }, cost_usd: Number.NaN })).toBeNull();
    expect(costFiguresOf(undefined)).toBeNull();
  });

  it("sums a stage's legs figure by figure, as the role ledger does", () => {
    expect(
      costFiguresOf({
        legs: [{ usage: { input_tokens: 3, output_tokens: 1 } }, { usage: { input_tokens: 4 } }, {}],
        usage: { input_tokens: 99 },
      }),
    ).toEqual({ input_tokens: 7, output_tokens: 1 });
  });
});

describe("monthDays", () => {
  it("gives a month's first and last UTC day", () => {
    expect(monthDays("2026-02")).toEqual({ from: "2026-02-01", to: "2026-02-28" });
    expect(monthDays("2028-02")).toEqual({ from: "2028-02-01", to: "2028-02-29" });
    expect(monthDays("2026-12")).toEqual({ from: "2026-12-01", to: "2026-12-31" });
  });
});
