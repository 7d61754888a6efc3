import * as z from "zod";
import { SKILL_STATES } from "../../../db/schema";
import { timestamp } from "./common";

/** An employee's skill (src/evolution/skills-store.ts skillView); `lift` is null until measured. */
export const skillSchema = z.object({
  skill_id: z.string(),
  employee_id: z.string(),
  name: z.string(),
  description: z.string(),
  triggers: z.array(z.string()),
  body: z.string(),
  state: z.enum(SKILL_STATES),
  state_reason: z.string().nullable(),
  state_since: timestamp,
  activated_at: timestamp.nullable(),
  uses: z.number().int(),
  measured_uses: z.number().int(),
  lift: z.number().nullable(),
  created_by: z.string(),
  created_at: timestamp,
  updated_at: timestamp,
});

export const skillListSchema = z.object({
  employee_id: z.string(),
  max_active_skills: z.number().int(),
  skill_token_budget: z.number().int(),
  skills: z.array(skillSchema),
});
