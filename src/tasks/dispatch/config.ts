import * as z from "zod";
import { RUNTIMES } from "../../jobs/payloads";
import { defineConfigSection } from "../../lib/config";
import { label } from "../../lib/validation";
import { TEAM_DISPATCH_FIELDS, TEAM_DISPATCH_GUARD_FIELDS } from "./team-fields";

/**
 * `role_team` (seed 002 "ダッシュボードから設定する"): routed like `fixed_hierarchy`, and every goal task
 * it routes is offered to the employee's team of roles (route.ts `policyAsksForTeam`, docs/team.md).
 */
export const DISPATCH_POLICIES = ["fixed_hierarchy", "round_robin", "llm_select", "role_team"] as const;
export type DispatchPolicy = (typeof DISPATCH_POLICIES)[number];

const employeeRef = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, "an employee id");

/**
 * `[dispatch]`: how a new task finds its employee. `rosters` (task class → employee ids) feed
 * round_robin and llm_select; a class without a roster falls back to the hierarchy. `role_team`
 * reads no roster: it routes by the hierarchy.
 */
export const dispatchConfig = defineConfigSection(
  "dispatch",
  z.object({
    policy: z.enum(DISPATCH_POLICIES).default("fixed_hierarchy"),
    rosters: z.record(label(100), z.array(employeeRef).max(100)).default({}),
    llm_select: z
      .object({
        runtime: z.enum(RUNTIMES).default("claude"),
        model: z.string().min(1).max(200).optional(),
        /** How long POST /v1/tasks waits for the pick before routing by the hierarchy instead. */
        wait_ms: z.number().int().min(500).max(25_000).default(15_000),
        /** The runner's own limit for the pick job. */
        timeout_ms: z.number().int().min(1_000).max(600_000).default(60_000),
      })
      .strict()
      .prefault({}),
    // Team-as-Agent's knobs in this section (seed 002: team_budget, ephemeral_max_active, …).
    ...TEAM_DISPATCH_FIELDS,
  }),
);
export type DispatchConfig = z.infer<typeof dispatchConfig.schema>;

/**
 * `[dispatch_guard]`: a sliding window per employee on dispatches (seed 002: 20 per minute). Over the
 * limit a dispatch is refused with 429 and nothing is created. D5 overrides do not bypass it. The
 * `role_team_max_in_window` window (team spawns) is separate: src/team/rate.ts.
 */
export const dispatchGuardConfig = defineConfigSection(
  "dispatch_guard",
  z.object({
    max_in_window: z.number().int().min(1).max(10_000).default(20),
    window_secs: z.number().int().min(1).max(86_400).default(60),
    // Team-as-Agent's role-member spawns, counted in their own window (seed 002: 60 per minute).
    ...TEAM_DISPATCH_GUARD_FIELDS,
  }),
);
