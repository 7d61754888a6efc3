import * as z from "zod";

/**
 * Seed 002's degrade chain, the order in which a round gives up optional work when its budget runs short.
 */
export const DEGRADE_STEPS = ["utility", "verifier_second_pass", "executor_replica"] as const;
export type DegradeStep = (typeof DEGRADE_STEPS)[number];

export const budgetLimitsInput = z.object({
  max_spawns_per_task: z.number().int().min(1).max(1_000).default(12),
  max_turns_per_role: z.number().int().min(1).max(100).default(3),
  degrade_order: z
    .array(z.string().min(1).max(64))
    .max(16)
    .default([...DEGRADE_STEPS]),
});
export type BudgetLimitsInput = z.input<typeof budgetLimitsInput>;

/**
 * The team's knobs that live in other sections (seed 002): `[dispatch.team_budget]`,
 * `[dispatch] ephemeral_max_active` and `[dispatch_guard] role_team_max_in_window`. They live
 * with the `dispatch` and `dispatch_guard` sections that hold them (issue 20: team builds on tasks,
 * never the reverse); `src/team/limits.ts` reads them for the team.
 */
export const TEAM_DISPATCH_FIELDS = {
  team_budget: budgetLimitsInput.default({
    max_spawns_per_task: 12,
    max_turns_per_role: 3,
    degrade_order: ["utility", "verifier_second_pass", "executor_replica"],
  }),
  /** Live role-member scaffolds at once, fleet-wide (shared with every other ephemeral sub-agent). */
  ephemeral_max_active: z.number().int().min(1).max(10_000).default(32),
  /** How many spawns may wait for a scaffold slot, and for how long, before they fail their stage. */
  ephemeral_queue_max_depth: z.number().int().min(0).max(100_000).default(256),
  ephemeral_queue_ttl_ms: z
    .number()
    .int()
    .min(1_000)
    .max(86_400_000)
    .default(30 * 60_000),
};

export const TEAM_DISPATCH_GUARD_FIELDS = {
  /** Role-member spawns per window, counted apart from an employee's own 20 (RateWindow, at integration). */
  role_team_max_in_window: z.number().int().min(1).max(100_000).default(60),
};
