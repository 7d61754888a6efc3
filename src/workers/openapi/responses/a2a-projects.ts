import * as z from "zod";
import { PROJECT_STATUSES } from "../../../db/schema";
import { timestamp } from "./common";
import { a2aTaskSchema } from "./a2a";
import { swarmTaskSchema } from "./swarm";

/**
 * Official projects and swarm tasks over the EvoMap node protocol (`/a2a/project/*`, `/a2a/task/*`,
 * `/a2a/work/*`, `/a2a/fetch`): EvoMap's shapes around the `/v1` views, which the facade answers with
 * as they are (projects.ts, swarm.ts).
 */

/** `GET /a2a/project/:id/tasks`. */
export const projectTasksSchema = z.object({ project_id: z.string(), tasks: z.array(swarmTaskSchema) });

/** `POST /a2a/fetch`: open tasks the node may claim (asked for), and no assets (crewplane keeps none). */
export const fetchAnswerSchema = z.object({
  tasks: z.array(a2aTaskSchema),
  assets: z.array(z.never()),
  assets_note: z.literal("crewplane keeps no EvoMap assets").optional(),
});

/** `GET /a2a/task/my`: the tasks the node holds or completed, most recently changed first. */
export const myTasksSchema = z.object({ node_id: z.string(), tasks: z.array(a2aTaskSchema) });

/** `POST /a2a/work/claim`: the assignment is the node's claim on the task (its id is the task's). */
export const workAssignedSchema = z.object({
  id: z.string(),
  assignment_id: z.string(),
  task_id: z.string(),
  node_id: z.string(),
  status: z.literal("assigned"),
  expires_at: timestamp.nullable().describe("when the claim lapses"),
  task: a2aTaskSchema,
});

/** `POST /a2a/work/complete`. */
export const workCompletedSchema = z.object({
  id: z.string(),
  assignment_id: z.string(),
  status: z.literal("completed"),
  result_asset_id: z.string(),
  task: a2aTaskSchema,
});

/** `POST /a2a/task/propose-decomposition`: the project's status and its tasks now. */
export const decompositionAnswerSchema = z.object({
  project_id: z.string(),
  status: z.enum(PROJECT_STATUSES),
  subtasks: z.array(swarmTaskSchema),
});
