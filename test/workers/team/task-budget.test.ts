import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getTaskBudget } from "../../../src/durable-objects/task-budget-rpc";
import { normalizeBudgetLimits, planRound, plannedStages, roundCost, stageCost } from "../../../src/team/budget";

const budget = () => getTaskBudget(env, `budget-${crypto.randomUUID()}`);
const want = (executors = 3) => ({ planner: true, executors, repair: true, utility: true });
const defaults = normalizeBudgetLimits({}).limits;

describe("spawn budget arithmetic", () => {
  it("costs a round planner + executors + verifier + repair, the verifier included and the utility free", () => {
    expect(roundCost({ planner: true, executors: 3, repair: true, utility: true })).toBe(6);
    expect(roundCost({ planner: false, executors: 1, repair: false, utility: false })).toBe(2);
    expect(stageCost("utility")).toBe(0);
  });

  it("plans and charges with the same arithmetic: the stages a plan implies cost exactly the planned cost", () => {
    for (const executors of [1, 2, 3]) {
      for (const repair of [true, false]) {
        const outcome = planRound(defaults, 12, {}, { planner: true, executors, repair, utility: true });
        expect(outcome.ok).toBe(true);
        if (!outcome.ok) continue;
        expect(plannedStages(outcome.plan).reduce((n, k) => n + stageCost(k), 0)).toBe(outcome.cost);
      }
    }
  });

  it("clamps max_spawns_per_task to at least 3, defaults to 12, and drops unknown degrade steps with a warning", () => {
    expect(normalizeBudgetLimits({})).toEqual({
      limits: { max_spawns_per_task: 12, max_turns_per_role: 3, degrade_order: ["utility", "verifier_second_pass", "executor_replica"] },
      warnings: [],
    });
    expect(normalizeBudgetLimits({ max_spawns_per_task: 2 }).limits.max_spawns_per_task).toBe(3);
    const n = normalizeBudgetLimits({ degrade_order: ["executor_replica", "sparkle"] });
    expect(n.limits.degrade_order).toEqual(["executor_replica"]);
    expect(n.warnings).toEqual(["unknown degrade_order entry 'sparkle' dropped"]);
    expect(normalizeBudgetLimits({ degrade_order: ["sparkle"] }).limits.degrade_order).toEqual([
      "utility",
      "verifier_second_pass",
      "executor_replica",
    ]);
  });

  it("degrades in order utility → verifier_second_pass → executor_replica and records each step taken", () => {
    expect(planRound(defaults, 6, {}, want())).toMatchObject({ ok: true, cost: 6, steps: [] });
    expect(planRound(defaults, 5, {}, want())).toMatchObject({
      ok: true,
      cost: 5,
      steps: ["utility", "verifier_second_pass"],
      plan: { utility: false, repair: false, executors: 3 },
    });
    expect(planRound(defaults, 3, {}, want())).toMatchObject({
      ok: true,
      cost: 3,
      steps: ["utility", "verifier_second_pass", "executor_replica"],
      plan: { planner: true, executors: 1, verifier: true, repair: false, utility: false },
    });
    expect(planRound(defaults, 2, {}, want())).toMatchObject({
      ok: false,
      reason: "budget_exhausted",
      steps: ["utility", "verifier_second_pass", "executor_replica"],
    });
  });

  it("follows a custom degrade order", () => {
    const limits = normalizeBudgetLimits({ degrade_order: ["executor_replica"] }).limits;
    expect(planRound(limits, 4, {}, want())).toMatchObject({ ok: true, steps: ["executor_replica"], plan: { executors: 1, repair: true } });
  });

  it("exhausts the budget when a role has no turns left", () => {
    expect(planRound(defaults, 12, { executor: 3 }, want())).toMatchObject({ ok: false, reason: "budget_exhausted" });
    expect(planRound(defaults, 12, { planner: 3 }, { ...want(), planner: false })).toMatchObject({ ok: true });
  });
});

describe("TaskBudget", () => {
  it("grants exactly 12 of 50 concurrent spawn reservations against the default budget", async () => {
    const stub = budget();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => stub.charge({ stage_key: `stg_${i}`, kind: "execute", now: Date.now() })),
    );
    expect(results.filter((r) => r.granted)).toHaveLength(12);
    expect(results.filter((r) => !r.granted).every((r) => !r.granted && r.reason === "budget_exhausted")).toBe(true);
    expect((await stub.status()).spent).toBe(12);
  });

  it("charges a stage once however often it is reserved", async () => {
    const stub = budget();
    const [a, b] = await Promise.all([
      stub.charge({ stage_key: "stg_x", kind: "plan", now: 1 }),
      stub.charge({ stage_key: "stg_x", kind: "plan", now: 1 }),
    ]);
    expect([a.granted && a.duplicate, b.granted && b.duplicate].sort()).toEqual([false, true]);
    expect((await stub.status()).spent).toBe(1);
  });

  it("holds a planned round's cost so a concurrent round cannot count on the same spawns", async () => {
    const stub = budget();
    const outcomes = await Promise.all([1, 2, 3].map((round) => stub.planRound({ round, want: want(), now: 1 })));
    expect(outcomes.filter((r) => r.ok).map((r) => (r.ok ? r.cost : 0))).toEqual([6, 6]);
    expect(outcomes.filter((r) => !r.ok)).toMatchObject([{ ok: false, reason: "budget_exhausted", remaining_before: 0 }]);
    expect(await stub.status()).toMatchObject({ spent: 0, held: 12, remaining: 0 });
  });

  it("draws a planned round's stages from its hold and gives back what the round did not use", async () => {
    const stub = budget();
    const plan = await stub.planRound({ round: 1, want: want(2), now: 1 });
    expect(plan).toMatchObject({ ok: true, cost: 5 });
    for (const [key, kind] of [
      ["p", "plan"],
      ["e1", "execute"],
      ["e2", "execute"],
      ["v", "verify"],
    ] as const) {
      expect(await stub.charge({ stage_key: key, kind, round: 1, now: 1 })).toMatchObject({ granted: true });
    }
    expect(await stub.status()).toMatchObject({ spent: 4, held: 1, remaining: 7 });
    expect(await stub.closeRound({ round: 1 })).toEqual({ released: 1 });
    expect(await stub.status()).toMatchObject({ spent: 4, held: 0, remaining: 8 });
  });

  it("answers a repeated plan of a round with the stored plan instead of holding twice", async () => {
    const stub = budget();
    const a = await stub.planRound({ round: 1, want: want(), now: 1 });
    const b = await stub.planRound({ round: 1, want: want(), now: 2 });
    expect(b).toEqual(a);
    expect((await stub.status()).held).toBe(6);
  });

  it("runs the degrade chain down to budget_exhausted over successive rounds, recording the step of each", async () => {
    const stub = budget();
    const outcomes = [];
    for (let round = 1; round <= 5; round++) {
      const o = await stub.planRound({ round, want: want(), now: round });
      outcomes.push(o);
      if (!o.ok) break;
      for (const [i, kind] of plannedStages(o.plan).entries()) await stub.charge({ stage_key: `r${round}-${i}`, kind, round, now: round });
      await stub.closeRound({ round });
    }
    expect(outcomes.map((o) => (o.ok ? { cost: o.cost, steps: o.steps } : { exhausted: o.steps }))).toEqual([
      { cost: 6, steps: [] },
      { cost: 6, steps: [] },
      { exhausted: ["utility", "verifier_second_pass", "executor_replica"] },
    ]);
  });

  it("uses the limits it was first configured with for the rest of the task", async () => {
    const stub = budget();
    expect((await stub.configure({ limits: { max_spawns_per_task: 1 } })).limits.max_spawns_per_task).toBe(3);
    expect((await stub.configure({ limits: { max_spawns_per_task: 40 } })).limits.max_spawns_per_task).toBe(3);
    const grants = await Promise.all(Array.from({ length: 10 }, (_, i) => stub.charge({ stage_key: `k${i}`, kind: "execute", now: 1 })));
    expect(grants.filter((g) => g.granted)).toHaveLength(3);
  });
});
