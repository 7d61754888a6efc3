import { inArray } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../db/client";
import { settings } from "../db/schema";
import { budgetLimitsInput } from "./budget";

/**
 * The team's knobs that live in other sections (seed 002): `[dispatch.team_budget]`,
 * `[dispatch] ephemeral_max_active` and `[dispatch_guard] role_team_max_in_window`. The `dispatch`
 * and `dispatch_guard` sections belong to the dispatch feature; these field sets are meant to be
 * spread into their schemas (`z.object({ ...theirs, ...TEAM_DISPATCH_FIELDS })`), and until then
 * `readTeamLimits` reads them from whatever is stored under those sections, defaults otherwise.
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

const dispatchPart = z.object(TEAM_DISPATCH_FIELDS);
const guardPart = z.object(TEAM_DISPATCH_GUARD_FIELDS);

export type TeamLimits = z.infer<typeof dispatchPart> & z.infer<typeof guardPart>;

/** A stored section that does not parse counts as no section: a corrupt value is no value. */
export async function readTeamLimits(db: Db): Promise<TeamLimits> {
  const rows = await db
    .select()
    .from(settings)
    .where(inArray(settings.section, ["dispatch", "dispatch_guard"]))
    .all();
  const value = (name: string) => rows.find((r) => r.section === name)?.value ?? {};
  const d = dispatchPart.safeParse(value("dispatch"));
  const g = guardPart.safeParse(value("dispatch_guard"));
  return { ...(d.success ? d.data : dispatchPart.parse({})), ...(g.success ? g.data : guardPart.parse({})) };
}
