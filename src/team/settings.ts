import * as z from "zod";
import { label } from "../lib/validation";
export { TEAM_ROLES, type TeamRole } from "../jobs/team-vocabulary";

export const GATE_MODES = ["auto", "always_solo", "always_team"] as const;
export type GateMode = (typeof GATE_MODES)[number];

/**
 * One role's `(runtime, model, effort)` as written. Kept as raw strings on purpose: the catalog and
 * the effort parser judge them when a spec is validated, so a bad value refuses the team with its
 * token (`runtime_not_allowed`, `invalid_effort`, …) instead of disappearing into a generic 422.
 */
export const roleSettings = z.strictObject({
  runtime: label(64).optional().describe("The role's runtime (claude, codex, …); unset: the employee's own"),
  model: label(200).optional().describe("The role's model; unset: the employee's own"),
  effort: label(32).optional().describe("How hard the role's model thinks (low, medium, high, …); unset: the model's default"),
});
export type RoleSettings = z.infer<typeof roleSettings>;

/**
 * `[team]` as written, globally (`PUT /v1/config/team`) or per employee (the employee's `team`
 * field). Every field is optional and nothing is defaulted here: "unset" and an explicit `false`
 * are different states, and the field-wise cascade (cascade.ts) needs to see which is which.
 */
export const teamSettings = z.strictObject({
  enabled: z.boolean().optional().describe("Whether a goal task may form a team (the gate still decides each round)"),
  // Out of range is clamped to 1..3 and reported, not refused (seed 002); the wide bound only
  // keeps absurd numbers out of storage.
  executor_fanout: z
    .number()
    .int()
    .min(-1_000)
    .max(1_000)
    .optional()
    .describe("Executors per team round, 1 to 3 (a value outside is clamped and reported)"),
  // An unrecognised mode falls back to `auto` and is reported, not refused (seed 002).
  gate: label(32).optional().describe("auto, always_solo or always_team (anything else falls back to auto, reported)"),
  roles: z
    .strictObject({
      planner: roleSettings.optional(),
      executor: roleSettings.optional(),
      verifier: roleSettings.optional(),
      utility: roleSettings.optional(),
    })
    .optional(),
});
export type TeamSettings = z.infer<typeof teamSettings>;

/** Built-in defaults, the last level of the cascade. `enabled` defaults to true (seed 002, v1.66). */
export const TEAM_DEFAULTS = { enabled: true, executor_fanout: 1, gate: "auto" as GateMode } as const;
export const EXECUTOR_FANOUT_RANGE = { min: 1, max: 3 } as const;
