import * as z from "zod";
import { ATTEMPT_STATUSES, JOB_STATUSES, OPERATOR_ROLES } from "../../../db/schema";
import type { AttemptRecord } from "../../../jobs/outcomes";
import type { JobError } from "../../../jobs/payloads";
import { TICK_NAMES } from "../../cron/ticks";
import type { runnerView } from "../../http/admin/runners";
import { jsonObject, timestamp } from "./common";

/** `GET` and `POST /v1/admin/clock`: the request clock now, and its distance from real time. */
export const clockSchema = z.object({ now: timestamp, offset_ms: z.number().int() });

/** A job's error, as the runner reported it (or the inbox wrote it: `lease_expired`, `no_runner`, …). */
export const jobErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  ran: z.object({ runtime: z.string(), model: z.string().optional(), provider: z.string().optional() }).optional(),
}) satisfies z.ZodType<JobError>;

export const jobAttemptSchema = z.object({
  attempt: z.number().int(),
  runner_id: z.string().nullable(),
  status: z.enum(ATTEMPT_STATUSES),
  started_at: timestamp,
  ended_at: timestamp.nullable(),
  error: jobErrorSchema.optional(),
}) satisfies z.ZodType<AttemptRecord>;

export const jobSubmittedSchema = z.object({ job_id: z.string() });

/** `GET /v1/admin/jobs/:id`: the job row and every lease it took. */
export const adminJobSchema = z.object({
  job_id: z.string(),
  kind: z.string(),
  runtime: z.string(),
  status: z.enum(JOB_STATUSES),
  attempt: z.number().int(),
  result: jsonObject.optional(),
  error: jobErrorSchema.optional(),
  created_at: timestamp,
  updated_at: timestamp,
  finished_at: timestamp.optional(),
  attempts: z.array(jobAttemptSchema),
});

/** `POST /v1/admin/operators`: the token is shown here once. */
export const operatorCreatedSchema = z.object({
  operator_id: z.string(),
  name: z.string(),
  role: z.enum(OPERATOR_ROLES),
  token: z.string(),
});

export const operatorPageSchema = z.object({
  operators: z.array(
    z.object({
      operator_id: z.string(),
      name: z.string(),
      role: z.enum(OPERATOR_ROLES).nullable(),
      created_at: timestamp,
      revoked_at: timestamp.nullable(),
    }),
  ),
  next_cursor: z.string().nullable(),
});

export const operatorRevokedSchema = z.object({
  operator_id: z.string(),
  name: z.string(),
  role: z.enum(OPERATOR_ROLES).nullable(),
  revoked_at: timestamp.nullable(),
});

/** `POST /v1/admin/runners`: the token is shown here once. */
export const runnerCreatedSchema = z.object({ runner_id: z.string(), name: z.string(), token: z.string() });

export const runnerSchema = z.object({
  runner_id: z.string(),
  name: z.string(),
  created_at: timestamp,
  revoked_at: timestamp.nullable(),
  last_poll_at: timestamp.nullable(),
  leased_jobs: z.number().int(),
}) satisfies z.ZodType<ReturnType<typeof runnerView>>;

export const runnerPageSchema = z.object({ runners: z.array(runnerSchema), next_cursor: z.string().nullable() });

/** `DELETE /v1/admin/runners/:id`: the revoked runner, and what every inbox did with its polls and leases. */
export const runnerRevokedSchema = z.object({
  runner_id: z.string(),
  name: z.string(),
  revoked_at: timestamp.nullable(),
  inbox: z.object({ polls_ended: z.number().int(), released: z.number().int(), requeued: z.number().int(), dead: z.number().int() }),
});

/** `POST /v1/admin/ticks/:name`: the tick's own report (each tick reports its own counts). */
export const tickRanSchema = z.object({ ran: z.enum(TICK_NAMES), summary: jsonObject });
