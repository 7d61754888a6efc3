import * as z from "zod";

/**
 * The team vocabulary a runner job carries (issue 20: shared vocabularies live at the lowest layer
 * that uses them). `src/team` builds its rules on these; the `team_stage` job payload in
 * `./team-stage-job.ts` and the dispatch queue's message read them without importing a feature.
 */
export const TEAM_ROLES = ["planner", "executor", "verifier", "utility"] as const;
export type TeamRole = (typeof TEAM_ROLES)[number];

export const TEAM_RUNTIMES = ["claude", "codex", "antigravity", "grok"] as const;
export type TeamRuntime = (typeof TEAM_RUNTIMES)[number];

export const EFFORT_LEVELS = ["low", "medium", "high", "xhigh", "max"] as const;
export type EffortLevel = (typeof EFFORT_LEVELS)[number];

/** The member stages a round charges for (the budget counts them). */
export const MEMBER_STAGE_KINDS = ["plan", "execute", "synthesize", "verify", "repair"] as const;
export type MemberStageKind = (typeof MEMBER_STAGE_KINDS)[number];

export const packetIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "1-64 characters of [A-Za-z0-9_.-], starting alphanumeric");
