import * as z from "zod";
import { DISPATCH_STATES, SWARM_TASK_STATUSES } from "../../../db/schema";
import type { listTasks, TaskView } from "../../../projects/swarm-tasks";
import { timestamp } from "./common";

/** A swarm task as the API shows it: its status is the effective one (a lapsed claim reads as open). */
export const swarmTaskSchema = z.object({
  task_id: z.string(),
  kind: z.enum(["project", "council"]),
  title: z.string(),
  body: z.string(),
  status: z.enum(SWARM_TASK_STATUSES),
  project_id: z.string().nullable(),
  source_session_id: z.string().nullable(),
  seq: z.number().int().nullable(),
  signals: z.array(z.string()).nullable(),
  weight: z.number().nullable(),
  claimed_by: z.string().nullable(),
  claimed_at: timestamp.nullable(),
  claim_expires_at: timestamp.nullable(),
  completed_by: z.string().nullable(),
  completed_at: timestamp.nullable(),
  summary: z.string().nullable(),
  commit_sha: z.string().nullable(),
  /** `contribution` (completed with its contribution commit) or the operator who verified it. */
  verified_by: z.string().nullable(),
  verified_at: timestamp.nullable(),
  /** Council tasks: how they are offered to eligible nodes; null for project tasks. */
  dispatch: z
    .object({
      state: z.enum(DISPATCH_STATES),
      offered_to: z.string().nullable(),
      offer_expires_at: timestamp.nullable(),
      offers: z.number().int(),
      offered_nodes: z.array(z.string()),
    })
    .nullable(),
  created_at: timestamp,
  expires_at: timestamp,
}) satisfies z.ZodType<TaskView>;

export const swarmTaskPageSchema = z.object({ tasks: z.array(swarmTaskSchema), next_cursor: z.string().nullable() }) satisfies z.ZodType<
  Awaited<ReturnType<typeof listTasks>>
>;
