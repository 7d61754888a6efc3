import { Hono } from "hono";
import { z } from "zod";
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
  .get("/", validate("query", keysetPageQuery(projectCursor).extend(projectListQuery.shape)), async (c) => {
    const { status, limit, cursor } = c.req.valid("query");
    return c.json(await listProjects(getDb(c.env.DB), { ...(status ? { status } : {}), limit, ...(cursor ? { cursor } : {}) }));
  })
  .get("/:id", validate("param", idParam), async (c) =>
    c.json(await projectDetail(getDb(c.env.DB), c.req.valid("param").id, c.var.clock.now())),
  )
  .post(
    "/:id/transition",
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
  .get("/:id/attribution", validate("param", idParam), validate("query", attributionQuery), async (c) =>
    c.json(await projectAttribution(getDb(c.env.DB), c.req.valid("param").id, c.req.valid("query"))),
  )
  .get("/:id/contributions", validate("param", idParam), async (c) => {
    const db = getDb(c.env.DB);
    const id = c.req.valid("param").id;
    await getProject(db, id);
    return c.json({ project_id: id, contributions: await listContributions(db, id) });
  })
  .post("/:id/contributions", requireAuth({ node: true }), validate("param", idParam), validate("json", contributionBody), async (c) => {
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
  });
