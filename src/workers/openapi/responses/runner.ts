import * as z from "zod";
import { JOB_STATUSES } from "../../../db/schema";
import type { LeasedJob } from "../../../durable-objects/runner-inbox-rpc";
import { attachmentsArchiveJobPayload, employeeTurnPayload, evalCasePayload, utilityPayload } from "../../../jobs/payloads";
import { teamStagePayload } from "../../../jobs/team-stage-job";
import { timestamp } from "./common";

/** What every leased job carries besides its kind and payload. */
const leasedJobBase = {
  job_id: z.string(),
  lease_id: z.string(),
  lease_expires_at: timestamp,
  lease_ms: z.number().int(),
  ack_required: z.boolean(),
  ack_within_ms: z.number().int().optional(),
  attempt: z.number().int(),
};

/** A leased job: its payload is the one its kind's dispatch message carried (src/queues/dispatch-message.ts). */
export const leasedJobSchema = z.union([
  z.object({ ...leasedJobBase, kind: z.literal("utility"), payload: utilityPayload }),
  z.object({ ...leasedJobBase, kind: z.literal("team_stage"), payload: teamStagePayload }),
  z.object({ ...leasedJobBase, kind: z.literal("employee_turn"), payload: employeeTurnPayload }),
  z.object({ ...leasedJobBase, kind: z.literal("eval_case"), payload: evalCasePayload }),
  z.object({ ...leasedJobBase, kind: z.literal("attachments_archive"), payload: attachmentsArchiveJobPayload }),
]) satisfies z.ZodType<LeasedJob>;

/** `POST /v1/runner/lease`. */
export const leaseSchema = z.object({
  jobs: z.array(leasedJobSchema),
  /** Runtimes the runner offered that this Worker does not know. */
  ignored_runtimes: z.array(z.string()),
  settings: z.object({ keep_failed_work_hours: z.number() }),
});

export const pollCancelledSchema = z.object({ poll_id: z.string(), released: z.number().int() });

/** `ack` and `extend`: the lease is current until `lease_expires_at`. */
export const leaseRefSchema = z.object({ job_id: z.string(), lease_expires_at: timestamp });

/** `complete` and `fail`: the job's status after it; `duplicate` when this repeated an applied call. */
export const finishSchema = z.object({ job_id: z.string(), status: z.enum(JOB_STATUSES), duplicate: z.boolean() });

/** `PUT /v1/runner/jobs/:id/attachments`: the file is in the employee's attachments bucket. */
export const attachmentStoredSchema = z.object({ job_id: z.string(), path: z.string(), bytes: z.number().int(), sha256: z.string() });
