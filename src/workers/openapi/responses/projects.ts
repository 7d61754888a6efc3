import * as z from "zod";
import { DECOMPOSITION_STATES, PROJECT_STATUSES, REPOSITORY_STATES } from "../../../db/schema";
import type { contribute, contributionView } from "../../../projects/contributions";
import type { listProjects, ProjectView } from "../../../projects/store";
import type { projectAttribution, projectDetail } from "../../http/projects";
import { timestamp } from "./common";
import { swarmTaskSchema } from "./swarm";

export const projectSchema = z.object({
  project_id: z.string(),
  name: z.string(),
  summary: z.string(),
  status: z.enum(PROJECT_STATUSES),
  proposer_id: z.string(),
  proposal_id: z.string(),
  session_id: z.string().nullable(),
  created_at: timestamp,
  updated_at: timestamp,
  /** Null until the project is first decomposed (on approval). */
  decomposition: z
    .object({
      state: z.enum(DECOMPOSITION_STATES),
      attempts: z.number().int(),
      job_id: z.string().nullable(),
      reason: z.string().nullable(),
      detail: z.string().nullable(),
      next_attempt_at: timestamp.nullable(),
      /** Who decomposed it: `model`, `manager` or `node` (the proposer). */
      source: z.string().nullable(),
      decomposed_at: timestamp.nullable(),
    })
    .nullable(),
  /** Null until the project is active (its repository is created then). */
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

export const projectPageSchema = z.object({ projects: z.array(projectSchema), next_cursor: z.string().nullable() }) satisfies z.ZodType<
  Awaited<ReturnType<typeof listProjects>>
>;

/** The project with its tasks in decomposition order. */
export const projectDetailSchema = projectSchema.extend({ tasks: z.array(swarmTaskSchema) }) satisfies z.ZodType<
  Awaited<ReturnType<typeof projectDetail>>
>;

export const projectAttributionSchema = z.object({
  project_id: z.string(),
  /** The attribution block a contribution's commit message ends with. */
  trailer: z.string(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof projectAttribution>>>;

const contributionFields = {
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
  created_at: timestamp,
};

export const projectContributionSchema = z.object({
  ...contributionFields,
  pull_request: z.object({ number: z.number().int(), url: z.string().nullable() }).nullable(),
}) satisfies z.ZodType<ReturnType<typeof contributionView>>;

export const projectContributionListSchema = z.object({ project_id: z.string(), contributions: z.array(projectContributionSchema) });

/** `POST /v1/projects/:id/contributions` 201: the commit, and its branch's pull request (or why GitHub refused it now). */
export const projectContributedSchema = z.object({
  ...contributionFields,
  repo: z.string(),
  /** The same contribution was already the head of its branch: that commit is returned. */
  reused: z.boolean(),
  created_branch: z.boolean(),
  pull_request: z.object({ number: z.number().int(), url: z.string(), reused: z.boolean() }).nullable(),
  pull_request_error: z.object({ code: z.string(), detail: z.string() }).optional(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof contribute>>>;
