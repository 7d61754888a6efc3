import * as z from "zod";
import { OVERRIDE_STATUSES } from "../../../db/schema";
import type { topologyView } from "../../../topology/view";
import { timestamp } from "./common";

export const overrideSchema = z.object({
  override_id: z.string(),
  task_class: z.string(),
  from_agent: z.string(),
  to_agent: z.string(),
  status: z.enum(OVERRIDE_STATUSES),
  approved_at: timestamp,
  approved_by: z.string().nullable(),
  observe_until: timestamp,
  baseline_reject_rate: z.number(),
  baseline_samples: z.number().int(),
  extended: z.boolean(),
  proposal_id: z.string(),
  approval_id: z.string(),
  resolved_at: timestamp.optional(),
  resolution: z.string().nullable().optional(),
});

export const proposalEvidenceSchema = z.object({
  samples: z.number().int(),
  reject_rate: z.number(),
  needs_human_rate: z.number(),
  oscillations: z.number().int(),
  sample_task_ids: z.array(z.string()),
  sibling: z.object({ agent: z.string(), samples: z.number().int(), reject_rate: z.number() }),
  lookback_days: z.number(),
});

/** `GET /v1/topology`: D5's switch, the overrides and the reroute proposals awaiting a decision. */
export const topologySchema = z.object({
  enabled: z.boolean(),
  approval_broker_available: z.boolean(),
  last_tick_at: timestamp.nullable(),
  overrides: z.array(overrideSchema),
  pending: z.array(
    z.object({
      proposal_id: z.string(),
      approval_id: z.string(),
      task_class: z.string(),
      from_agent: z.string(),
      to_agent: z.string(),
      created_at: timestamp,
      evidence: proposalEvidenceSchema,
    }),
  ),
}) satisfies z.ZodType<Awaited<ReturnType<typeof topologyView>>>;
