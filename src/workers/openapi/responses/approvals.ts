import * as z from "zod";
import type { ApprovalView } from "../../../approvals/view";
import { APPROVAL_CHANNELS, APPROVAL_STATUSES } from "../../../db/schema";
import { jsonObject, timestamp } from "./common";

export const approvalSchema = z.object({
  approval_id: z.string(),
  action_kind: z.string(),
  subject: z.string(),
  params: jsonObject,
  action_hash: z.string(),
  evidence: jsonObject,
  status: z.enum(APPROVAL_STATUSES),
  requested_by: z.string(),
  requested_at: timestamp,
  expires_at: timestamp,
  channels: z.array(z.enum(APPROVAL_CHANNELS)),
  decided_by: z.string().optional(),
  decided_via: z.string().nullable().optional(),
  decided_at: timestamp.optional(),
  note: z.string().optional(),
  consumed_at: timestamp.optional(),
  consumed_by: z.string().nullable().optional(),
}) satisfies z.ZodType<ApprovalView>;

export const approvalPageSchema = z.object({ approvals: z.array(approvalSchema), next_cursor: z.string().nullable() });
