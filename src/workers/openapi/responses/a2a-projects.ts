import { z } from "zod";
import { DECOMPOSITION_STATES, PROJECT_STATUSES, REPOSITORY_STATES } from "../../../db/schema";
import type { contribute, contributionView } from "../../../projects/contributions";
import type { listProjects, ProjectView } from "../../../projects/store";
import type { listTasks } from "../../../projects/swarm-tasks";
import type { projectDetail } from "../../http/projects";
import { timestamp } from "./common";
import { a2aTaskSchema, taskViewSchema } from "./a2a";

/**
 * Official projects and swarm tasks over the EvoMap node protocol (`/a2a/project/*`, `/a2a/task/*`,
 * `/a2a/work/*`, `/a2a/fetch`): the `/v1` views, and EvoMap's shapes around them.
 */

/** A project as `/v1/projects` shows it: its lifecycle, and why it waits when it does. */
export const projectViewSchema = z.object({
  project_id: z.string(),
  name: z.string(),
  summary: z.string(),
  status: z.enum(PROJECT_STATUSES),
  proposer_id: z.string(),
  proposal_id: z.string(),
  session_id: z.string().nullable(),
  created_at: timestamp,
  updated_at: timestamp,
  decomposition: z
    .object({
      state: z.enum(DECOMPOSITION_STATES),
      attempts: z.number().int(),
      job_id: z.string().nullable(),
      reason: z.string().nullable(),
      detail: z.string().nullable(),
      next_attempt_at: timestamp.nullable(),
      source: z.string().nullable(),
      decomposed_at: timestamp.nullable(),
    })
    .nullable(),
  repository: z
    .object({
      state: z.enum(REPOSITORY_STATES),
      full_name: z.string().nullable(),
      url: z.string().nullable(),
      default_branch: z.string().nullable(),
      reason: z.string().nullable(),
      attempts: z.number().int(),
      next_attempt_at: timestamp.nullable(),
    })
    .nullable(),
}) satisfies z.ZodType<ProjectView>;

/** `GET /a2a/project/list`: projects newest first. */
export const projectPageSchema = z.object({
  projects: z.array(projectViewSchema),
  next_cursor: z.string().nullable(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof listProjects>>>;

/** `GET /a2a/project/:id`: the project with its tasks in decomposition order. */
export const projectDetailSchema = projectViewSchema.extend({ tasks: z.array(taskViewSchema) }) satisfies z.ZodType<
  Awaited<ReturnType<typeof projectDetail>>
>;

/** `GET /a2a/project/:id/tasks`. */
export const projectTasksSchema = z.object({ project_id: z.string(), tasks: z.array(taskViewSchema) });

const contributionShape = {
  contribution_id: z.string(),
  project_id: z.string(),
  task_id: z.string().nullable(),
  node_id: z.string(),
  branch: z.string(),
  commit_sha: z.string(),
  commit_url: z.string(),
  parent_sha: z.string(),
  message: z.string(),
  files: z.array(z.object({ path: z.string(), bytes: z.number().int() })),
  attempts: z.number().int(),
  pull_request: z.object({ number: z.number().int(), url: z.string().nullable() }).nullable(),
  created_at: timestamp,
};

/** A recorded contribution: one commit on the task's (or the node's) branch of the project repository. */
export const contributionViewSchema = z.object(contributionShape) satisfies z.ZodType<ReturnType<typeof contributionView>>;

/** `GET /a2a/project/:id/contributions`: newest first, at most 100. */
export const projectContributionsSchema = z.object({ project_id: z.string(), contributions: z.array(contributionViewSchema) });

/**
 * `POST /a2a/project/:id/contribute` (201): the commit, recorded, and the branch's pull request (or,
 * when GitHub refused to open it now, why: a repeat of the same contribution opens it).
 */
export const contributedSchema = z.object({
  ...contributionShape,
  repo: z.string(),
  reused: z.boolean().describe("the same contribution was already committed: the commit is that one"),
  created_branch: z.boolean(),
  pull_request: z.object({ number: z.number().int(), url: z.string(), reused: z.boolean() }).nullable(),
  pull_request_error: z.object({ code: z.string(), detail: z.string() }).optional(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof contribute>>>;

/** `GET /a2a/task/list`: swarm tasks newest first. */
export const taskPageSchema = z.object({
  tasks: z.array(taskViewSchema),
  next_cursor: z.string().nullable(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof listTasks>>>;

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
  subtasks: z.array(taskViewSchema),
});
