import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../db/client";
import { PROJECT_STATUSES } from "../../db/schema";
import { requireAuth } from "../../lib/auth";
import { readSection } from "../../lib/config";
import { keysetPageQuery } from "../../lib/paging";
import { validate } from "../../lib/validation";
import { checkSender, projectProposal, projectProposeBody, proposeToCouncil, withEvomapTokens } from "../../a2a/council";
import { projectsConfig } from "../../projects/config";
import { contribute, contributionBody, listContributions } from "../../projects/contributions";
import { submitDecomposition } from "../../projects/decompose";
import { getProject, listProjects, projectCursor, projectId, projectIdPattern } from "../../projects/store";
import {
  claimTask,
  completeTask,
  completionInput,
  getTask,
  listTasks,
  projectTasks,
  taskCursor,
  taskId,
  taskListQuery,
  taskView,
} from "../../projects/swarm-tasks";
import type { AppEnv } from "../app-env";
import { a2aBody } from "./a2a-body";
import { nodeOf, projectDetail } from "./projects";

const idParam = z.object({ id: projectId });
const sender = { sender_id: z.string().max(128).optional(), node_id: z.string().max(128).optional() };
const contributeBody = contributionBody.extend(sender);
const claimBody = z.strictObject({ ...sender, task_id: taskId });
const completeBody = completionInput.extend({ ...sender, task_id: taskId });
const decompositionBody = z
  .strictObject({
    ...sender,
    /** The approved project to decompose (EvoMap's `task_id` is accepted when it names a project). */
    project_id: projectId.optional(),
    task_id: z.string().max(64).optional(),
    subtasks: z.array(z.unknown()),
  })
  .refine((b) => b.project_id !== undefined || (b.task_id !== undefined && projectIdPattern.test(b.task_id)), {
    message: "name the approved project to decompose (project_id)",
    path: ["project_id"],
  });

/** Official projects and swarm tasks over the EvoMap node protocol: the `/v1` feature functions, EvoMap's names. */
export const a2aProjectRoutes = new Hono<AppEnv>()
  .get(
    "/project/list",
    validate("query", keysetPageQuery(projectCursor).extend({ status: z.enum(PROJECT_STATUSES).optional() })),
    async (c) => {
      const { status, limit, cursor } = c.req.valid("query");
      return c.json(await listProjects(getDb(c.env.DB), { ...(status ? { status } : {}), limit, ...(cursor ? { cursor } : {}) }));
    },
  )
  .post("/project/propose", requireAuth({ node: true }), async (c) => {
    const body = await a2aBody(c, projectProposeBody);
    const nodeId = nodeOf(c.var.principal);
    checkSender(nodeId, body);
    const out = await proposeToCouncil(c.env, getDb(c.env.DB), nodeId, projectProposal(body), c.var.clock.now());
    return c.json(out.body, out.status);
  })
  .get("/project/:id{proj_[0-9a-f]{16}}", validate("param", idParam), async (c) =>
    c.json(await projectDetail(getDb(c.env.DB), c.req.valid("param").id, c.var.clock.now())),
  )
  .get("/project/:id{proj_[0-9a-f]{16}}/tasks", validate("param", idParam), async (c) => {
    const db = getDb(c.env.DB);
    const id = c.req.valid("param").id;
    await getProject(db, id);
    return c.json({ project_id: id, tasks: await projectTasks(db, id, c.var.clock.now()) });
  })
  .get("/project/:id{proj_[0-9a-f]{16}}/contributions", validate("param", idParam), async (c) => {
    const db = getDb(c.env.DB);
    const id = c.req.valid("param").id;
    await getProject(db, id);
    return c.json({ project_id: id, contributions: await listContributions(db, id) });
  })
  .post("/project/:id{proj_[0-9a-f]{16}}/contribute", requireAuth({ node: true }), validate("param", idParam), async (c) => {
    const db = getDb(c.env.DB);
    const { sender_id, node_id, ...input } = await a2aBody(c, contributeBody);
    const nodeId = nodeOf(c.var.principal);
    checkSender(nodeId, { sender_id, node_id });
    const out = await contribute(
      c.env,
      db,
      c.req.valid("param").id,
      nodeId,
      input,
      c.var.clock.now(),
      await readSection(db, projectsConfig),
    );
    return c.json(out, 201);
  })
  .get("/task/list", validate("query", keysetPageQuery(taskCursor).extend(taskListQuery.shape)), async (c) => {
    const { status, project_id, limit, cursor } = c.req.valid("query");
    const q = { limit, ...(status ? { status } : {}), ...(project_id ? { project_id } : {}), ...(cursor ? { cursor } : {}) };
    return c.json(await listTasks(getDb(c.env.DB), q, c.var.clock.now()));
  })
  .post("/task/claim", requireAuth({ node: true }), async (c) => {
    const db = getDb(c.env.DB);
    const body = await a2aBody(c, claimBody);
    const nodeId = nodeOf(c.var.principal);
    checkSender(nodeId, body);
    const now = c.var.clock.now();
    const task = await withEvomapTokens(async () => claimTask(db, body.task_id, nodeId, now, await readSection(db, projectsConfig)));
    return c.json(taskView(task, now));
  })
  .post("/task/complete", requireAuth({ node: true }), async (c) => {
    const db = getDb(c.env.DB);
    const { sender_id, node_id, task_id, ...input } = await a2aBody(c, completeBody);
    const nodeId = nodeOf(c.var.principal);
    checkSender(nodeId, { sender_id, node_id });
    const now = c.var.clock.now();
    return c.json(taskView(await completeTask(db, task_id, nodeId, input, now, await readSection(db, projectsConfig)), now));
  })
  .post("/task/propose-decomposition", requireAuth({ node: true }), async (c) => {
    const db = getDb(c.env.DB);
    const body = await a2aBody(c, decompositionBody);
    const nodeId = nodeOf(c.var.principal);
    checkSender(nodeId, body);
    const id = body.project_id ?? body.task_id!;
    const now = c.var.clock.now();
    await submitDecomposition(c.env, db, id, { tasks: body.subtasks }, { kind: "node", nodeId }, now);
    const detail = await projectDetail(db, id, now);
    return c.json({ project_id: id, status: detail.status, subtasks: detail.tasks });
  })
  .get("/task/:id{task_[0-9a-f]{16}}", validate("param", z.object({ id: taskId })), async (c) => {
    return c.json(taskView(await getTask(getDb(c.env.DB), c.req.valid("param").id), c.var.clock.now()));
  });
