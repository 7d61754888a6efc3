import * as z from "zod";
import { attachmentsArchiveJobPayload, employeeTurnPayload, evalCasePayload, jobOwner, utilityPayload } from "../jobs/payloads";
import { teamStagePayload } from "../jobs/team-stage-job";

/** A message on the `dispatch` queue: one job to put into the runner inbox. */
export const dispatchMessage = z.discriminatedUnion("kind", [
  z.object({
    job_id: z.string().regex(/^job_[0-9a-f]{16}$/),
    kind: z.literal("utility"),
    payload: utilityPayload,
    owner: jobOwner,
    enqueued_at: z.iso.datetime(),
  }),
  z.object({
    job_id: z.string().regex(/^job_[0-9a-f]{16}$/),
    kind: z.literal("team_stage"),
    payload: teamStagePayload,
    owner: jobOwner,
    enqueued_at: z.iso.datetime(),
  }),
  z.object({
    job_id: z.string().regex(/^job_[0-9a-f]{16}$/),
    kind: z.literal("employee_turn"),
    payload: employeeTurnPayload,
    owner: jobOwner,
    enqueued_at: z.iso.datetime(),
  }),
  z.object({
    job_id: z.string().regex(/^job_[0-9a-f]{16}$/),
    kind: z.literal("eval_case"),
    payload: evalCasePayload,
    owner: jobOwner,
    enqueued_at: z.iso.datetime(),
  }),
  z.object({
    job_id: z.string().regex(/^job_[0-9a-f]{16}$/),
    kind: z.literal("attachments_archive"),
    payload: attachmentsArchiveJobPayload,
    owner: jobOwner,
    enqueued_at: z.iso.datetime(),
  }),
]);
export type DispatchMessage = z.infer<typeof dispatchMessage>;
