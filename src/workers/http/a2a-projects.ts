import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../db/client";
import { PROJECT_STATUSES } from "../../db/schema";
import { readSection } from "../../lib/config";
import { keysetPageQuery } from "../../lib/paging";
import { validate } from "../middleware/validate";
import { checkSender, projectProposal, projectProposeBody, proposeToCouncil, withEvomapTokens } from "../../a2a/council";
import { projectsConfig } from "../../projects/config";
import { reputationConfig } from "../../nodes/reputation-config";
import { contribute, contributionBody, listContributions } from "../../projects/contributions";
import { submitDecomposition } from "../../projects/decompose";
import { getProject, listProjects, projectCursor, projectId, projectIdPattern } from "../../projects/store";
import { authenticateA2a, authProblem, namedNode, refuseSuspended } from "../../a2a/auth";
import { flatBody } from "../../a2a/envelope";
import { bearerOf } from "../../a2a/nodes";
import {
  a2aClaimBody,
  a2aCompleteBody,
  a2aTask,
  claimableTasks,
  completionOf,
  myTasks,
  workClaimBody,
  workCompleteBody,
} from "../../a2a/tasks";
import {
  claimTask,
  completeTask,
  getTask,
  listTasks,
  projectTasks,
  taskCursor,
  taskId,
  taskListQuery,
  taskView,
} from "../../projects/swarm-tasks";
import type { AppEnv } from "../app-env";
import { a2aBody, readJson } from "./a2a-body";
import { requireA2aNode } from "./a2a-auth";
import { nodeOf, projectDetail } from "./projects";

const idParam = z.object({ id: projectId });
const fetchBody = z.object({ tasks_only: z.boolean().nullish(), include_tasks: z.boolean().nullish() });
const myQuery = z.object({ node_id: z.string().max(128).optional(), limit: z.coerce.number().int().min(1).max(100).default(20) });
const sender = { sender_id: z.string().max(128).optional(), node_id: z.string().max(128).optional() };
// Facade bodies ignore keys they do not know (API.md "/a2a facade"); the /v1 schema's own fields are checked as on /v1.
const contributeBody = z.object({ ...contributionBody.shape, ...sender });
const decompositionBody = z
  .object({
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
  .post("/project/propose", requireA2aNode(), async (c) => {
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
  .post("/project/:id{proj_[0-9a-f]{16}}/contribute", requireA2aNode(), validate("param", idParam), async (c) => {
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
  .post("/task/claim", requireA2aNode(), async (c) => {
    const db = getDb(c.env.DB);
    const body = await a2aBody(c, a2aClaimBody);
    const nodeId = nodeOf(c.var.principal);
    checkSender(nodeId, body);
    const now = c.var.clock.now();
    const task = await withEvomapTokens(async () =>
      claimTask(db, body.task_id, nodeId, now, await readSection(db, projectsConfig), await readSection(db, reputationConfig)),
    );
    return c.json(taskView(task, now));
  })
  .post("/task/complete", requireA2aNode(), async (c) => {
    const db = getDb(c.env.DB);
    const body = await a2aBody(c, a2aCompleteBody);
    const nodeId = nodeOf(c.var.principal);
    checkSender(nodeId, body);
    const now = c.var.clock.now();
    const task = await completeTask(db, body.task_id, nodeId, completionOf(body), now, await readSection(db, reputationConfig));
    return c.json(taskView(task, now));
  })
  // EvoMap's task discovery: open tasks the node may claim (assets are not kept here: always none).
  .post("/fetch", async (c) => {
    const db = getDb(c.env.DB);
    const raw = await readJson(c);
    const body = fetchBody.parse(flatBody(raw));
    const now = c.var.clock.now();
    const token = bearerOf(c.req.header("authorization"));
    let node = null;
    if (token) {
      const auth = await authenticateA2a(c.env, db, token, namedNode(raw), now);
      if (!auth.ok) throw authProblem(auth.reason);
      refuseSuspended(auth.node);
      node = auth.node;
    }
    const tasks = body.tasks_only || body.include_tasks ? await claimableTasks(db, node, now, await readSection(db, projectsConfig)) : [];
    return c.json({ tasks, assets: [], ...(body.tasks_only ? {} : { assets_note: "crewplane keeps no EvoMap assets" }) });
  })
  .get("/task/my", requireA2aNode({ allowSuspended: true }), validate("query", myQuery), async (c) => {
    const nodeId = nodeOf(c.var.principal);
    const q = c.req.valid("query");
    checkSender(nodeId, { node_id: q.node_id });
    return c.json({ node_id: nodeId, tasks: await myTasks(getDb(c.env.DB), nodeId, c.var.clock.now(), q.limit) });
  })
  // The worker pool: an assignment is the node's claim on a swarm task (its id is the task's).
  .post("/work/claim", requireA2aNode(), async (c) => {
    const db = getDb(c.env.DB);
    const body = await a2aBody(c, workClaimBody);
    const nodeId = nodeOf(c.var.principal);
    checkSender(nodeId, body);
    const now = c.var.clock.now();
    const task = taskView(
      await withEvomapTokens(async () =>
        claimTask(db, body.task_id, nodeId, now, await readSection(db, projectsConfig), await readSection(db, reputationConfig)),
      ),
      now,
    );
    return c.json({
      id: task.task_id,
      assignment_id: task.task_id,
      task_id: task.task_id,
      node_id: nodeId,
      status: "assigned",
      expires_at: task.claim_expires_at,
      task: a2aTask(task),
    });
  })
  .post("/work/complete", requireA2aNode(), async (c) => {
    const db = getDb(c.env.DB);
    const body = await a2aBody(c, workCompleteBody);
    const nodeId = nodeOf(c.var.principal);
    checkSender(nodeId, body);
    const now = c.var.clock.now();
    const completion = completionOf({ asset_id: body.result_asset_id });
    const task = taskView(
      await completeTask(db, body.assignment_id, nodeId, completion, now, await readSection(db, reputationConfig)),
      now,
    );
    return c.json({
      id: task.task_id,
      assignment_id: task.task_id,
      status: "completed",
      result_asset_id: body.result_asset_id,
      task: a2aTask(task),
    });
  })
  .post("/task/propose-decomposition", requireA2aNode(), async (c) => {
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
