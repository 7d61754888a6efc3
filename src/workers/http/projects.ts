import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { PROJECT_STATUSES } from "../../db/schema";
import { type Principal } from "../../lib/auth";
import { requireAuth } from "../middleware/require-auth";
import { readSection } from "../../lib/config";
import { AppError } from "../../lib/errors";
import { keysetPageQuery } from "../../lib/paging";
import { label } from "../../lib/validation";
import { validate } from "../middleware/validate";
import { getActiveNode } from "../../nodes/registry";
import { attributionTrailer } from "../../projects/attribution";
import { projectsConfig } from "../../projects/config";
import { contribute, contributionBody, listContributions } from "../../projects/contributions";
import { submitDecomposition, type Submitter } from "../../projects/decompose";
import { decompositionInput } from "../../projects/decomposition";
import { projectSlug } from "../../projects/repository";
import { getProject, listProjects, projectCursor, projectId, projectListQuery, projectView, transitionProject } from "../../projects/store";
import { getTask, projectTasks, taskId } from "../../projects/swarm-tasks";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import {
  projectAttributionSchema,
  projectContributedSchema,
  projectContributionListSchema,
  projectDetailSchema,
  projectPageSchema,
  projectSchema,
} from "../openapi/responses/projects";

const idParam = z.object({ id: projectId });
const attributionQuery = z.object({
  node_id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "a node id"),
  task_id: taskId.optional(),
  session_id: label(200).optional(),
});

export function nodeOf(principal: Principal): string {
  if (principal.kind !== "node") throw new AppError("forbidden", "Only a swarm node does this");
  return principal.nodeId;
}

function submitterOf(principal: Principal): Submitter {
  return principal.kind === "node" ? { kind: "node", nodeId: principal.nodeId } : { kind: "manager", id: principal.id };
}

/** The project's view with its tasks in decomposition order (the public detail). */
export async function projectDetail(db: ReturnType<typeof getDb>, id: string, now: Date) {
  const p = await getProject(db, id);
  return { ...projectView(p), tasks: await projectTasks(db, id, now) };
}

/** The attribution block a contribution to this project ends with (`GET /v1/projects/:id/attribution`). */
export async function projectAttribution(db: ReturnType<typeof getDb>, id: string, q: z.infer<typeof attributionQuery>) {
  const p = await getProject(db, id);
  if (q.task_id && (await getTask(db, q.task_id)).projectId !== id)
    throw new AppError("not_found", `swarm task ${q.task_id} is not a task of ${id}`);
  return {
    project_id: id,
    trailer: attributionTrailer({
      node_id: q.node_id,
      project: projectSlug(p),
      task_id: q.task_id ?? "none",
      council_session_id: q.session_id ?? p.sessionId ?? "none",
    }),
  };
}

/**
 * Official projects (API.md "Official projects and swarm tasks"): public reads, manager moves, node
 * contributions (a suspended node's are `403`, `reason: node_suspended`).
 */
export const projectsRoutes = new Hono<AppEnv>()
  .get(
    "/",
    describe({ summary: "List official projects, newest first", responses: { 200: projectPageSchema } }),
    validate("query", keysetPageQuery(projectCursor).extend(projectListQuery.shape)),
    async (c) => {
      const { status, limit, cursor } = c.req.valid("query");
      return c.json(await listProjects(getDb(c.env.DB), { ...(status ? { status } : {}), limit, ...(cursor ? { cursor } : {}) }));
    },
  )
  .get(
    "/:id",
    describe({ summary: "Read a project with its swarm tasks", responses: { 200: projectDetailSchema }, errors: ["not_found"] }),
    validate("param", idParam),
    async (c) => c.json(await projectDetail(getDb(c.env.DB), c.req.valid("param").id, c.var.clock.now())),
  )
  .post(
    "/:id/transition",
    describe({
      summary: "Move a project through its lifecycle, as a manager",
      responses: { 200: projectSchema },
      errors: ["not_found", "illegal_transition", "conflict"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    validate("json", z.strictObject({ to: z.enum(PROJECT_STATUSES) })),
    async (c) => {
      const db = getDb(c.env.DB);
      const moved = await transitionProject(db, c.req.valid("param").id, c.req.valid("json").to, c.var.principal.id, c.var.clock.now());
      return c.json(projectView(moved));
    },
  )
  .post(
    "/:id/decomposition",
    describe({
      summary: "Submit an approved project's decomposition into swarm tasks, as a manager or its proposer",
      responses: { 200: projectDetailSchema },
      errors: ["not_found", "forbidden", "conflict", "validation_failed"],
    }),
    requireAuth({ operator: "manager", node: true }),
    validate("param", idParam),
    validate("json", decompositionInput),
    async (c) => {
      const db = getDb(c.env.DB);
      const now = c.var.clock.now();
      const id = c.req.valid("param").id;
      if (c.var.principal.kind === "node") await getActiveNode(db, c.var.principal.nodeId);
      await submitDecomposition(c.env, db, id, c.req.valid("json"), submitterOf(c.var.principal), now);
      return c.json(await projectDetail(db, id, now));
    },
  )
  .get(
    "/:id/attribution",
    describe({
      summary: "The attribution block a contribution to this project ends with",
      responses: { 200: projectAttributionSchema },
      errors: ["not_found", "validation_failed"],
    }),
    validate("param", idParam),
    validate("query", attributionQuery),
    async (c) => c.json(await projectAttribution(getDb(c.env.DB), c.req.valid("param").id, c.req.valid("query"))),
  )
  .get(
    "/:id/contributions",
    describe({
      summary: "List a project's contributions, newest first (at most 100)",
      responses: { 200: projectContributionListSchema },
      errors: ["not_found"],
    }),
    validate("param", idParam),
    async (c) => {
      const db = getDb(c.env.DB);
      const id = c.req.valid("param").id;
      await getProject(db, id);
      return c.json({ project_id: id, contributions: await listContributions(db, id) });
    },
  )
  .post(
    "/:id/contributions",
    describe({
      summary: "Commit a contribution to an active project's repository, as a node",
      description:
        "One commit on the task's branch (the task claimed by this node) or the node's own, its message ending with the attribution block, and the branch's pull request. A repeat of the same contribution returns the same commit. A pull request GitHub refuses now is reported in `pull_request_error`, not thrown.",
      responses: { 201: projectContributedSchema },
      errors: [
        "forbidden",
        "not_found",
        "conflict",
        "payload_too_large",
        "validation_failed",
        "forge_scope",
        "forge_failed",
        "unavailable",
      ],
    }),
    requireAuth({ node: true }),
    validate("param", idParam),
    validate("json", contributionBody),
    async (c) => {
      const db = getDb(c.env.DB);
      const node = await getActiveNode(db, nodeOf(c.var.principal));
      const out = await contribute(
        c.env,
        db,
        c.req.valid("param").id,
        node.id,
        c.req.valid("json"),
        c.var.clock.now(),
        await readSection(db, projectsConfig),
      );
      return c.json(out, 201);
    },
  );
