import { Hono } from "hono";
import * as z from "zod";
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
import { a2aBody, a2aJsonDoc, readJson } from "./a2a-body";
import { a2aOptionalNodeDoc, requireA2aNode } from "./a2a-auth";
import { PROPOSE_ERRORS, PROPOSE_RESPONSES } from "./a2a-council";
import { nodeOf, projectDetail } from "./projects";
import { describe } from "../openapi/describe";
import {
  decompositionAnswerSchema,
  fetchAnswerSchema,
  myTasksSchema,
  projectTasksSchema,
  workAssignedSchema,
  workCompletedSchema,
} from "../openapi/responses/a2a-projects";
import {
  projectContributedSchema,
  projectContributionListSchema,
  projectDetailSchema,
  projectPageSchema,
} from "../openapi/responses/projects";
import { swarmTaskPageSchema, swarmTaskSchema } from "../openapi/responses/swarm";

const idParam = z.object({ id: projectId });
const taskParam = z.object({ id: taskId });
const projectListQuery = keysetPageQuery(projectCursor).extend({ status: z.enum(PROJECT_STATUSES).optional() });
const tasksQuery = keysetPageQuery(taskCursor).extend(taskListQuery.shape);
/** A claim refused: not the node's to take now, or below the claim floor (EvoMap's token). */
const CLAIM_ERRORS = ["forbidden", "not_found", "reputation_insufficient", "conflict"] as const;
/** A completion refused: another node's claim, a commit that is not its contribution, or not claimed now. */
const COMPLETE_ERRORS = ["forbidden", "not_found", "conflict"] as const;
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
    describe({ summary: "Official projects, newest first", responses: { 200: projectPageSchema } }),
    validate("query", projectListQuery),
    async (c) => {
      const { status, limit, cursor } = c.req.valid("query");
      return c.json(await listProjects(getDb(c.env.DB), { ...(status ? { status } : {}), limit, ...(cursor ? { cursor } : {}) }));
    },
  )
  .post(
    "/project/propose",
    describe({
      summary: "Propose an official project to the council",
      description:
        "A `/v1` project proposal: the plan is its body, the repository name names the project. Screened and answered as `/a2a/council/propose`.",
      responses: PROPOSE_RESPONSES,
      errors: [...PROPOSE_ERRORS],
    }),
    requireA2aNode(),
    a2aJsonDoc(projectProposeBody),
    async (c) => {
      const body = await a2aBody(c, projectProposeBody);
      const nodeId = nodeOf(c.var.principal);
      checkSender(nodeId, body);
      const out = await proposeToCouncil(c.env, getDb(c.env.DB), nodeId, projectProposal(body), c.var.clock.now());
      return c.json(out.body, out.status);
    },
  )
  .get(
    "/project/:id{proj_[0-9a-f]{16}}",
    describe({
      summary: "A project, with its tasks in decomposition order",
      responses: { 200: projectDetailSchema },
      errors: ["not_found"],
    }),
    validate("param", idParam),
    async (c) => c.json(await projectDetail(getDb(c.env.DB), c.req.valid("param").id, c.var.clock.now())),
  )
  .get(
    "/project/:id{proj_[0-9a-f]{16}}/tasks",
    describe({ summary: "A project's tasks in decomposition order", responses: { 200: projectTasksSchema }, errors: ["not_found"] }),
    validate("param", idParam),
    async (c) => {
      const db = getDb(c.env.DB);
      const id = c.req.valid("param").id;
      await getProject(db, id);
      return c.json({ project_id: id, tasks: await projectTasks(db, id, c.var.clock.now()) });
    },
  )
  .get(
    "/project/:id{proj_[0-9a-f]{16}}/contributions",
    describe({
      summary: "A project's recorded contributions, newest first",
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
    "/project/:id{proj_[0-9a-f]{16}}/contribute",
    describe({
      summary: "Contribute a commit to an active project",
      description:
        "As `POST /v1/projects/:id/contributions`: one commit on the task's branch (the task claimed by this node) or the node's own, its message ending with the attribution block, and the branch's pull request. Files over the `projects` size limits are a 413 naming them.",
      responses: { 201: projectContributedSchema },
      errors: [
        "forbidden",
        "not_found",
        "conflict",
        "payload_too_large",
        "validation_failed",
        "unavailable",
        "forge_scope",
        "forge_failed",
      ],
    }),
    requireA2aNode(),
    validate("param", idParam),
    a2aJsonDoc(contributeBody),
    async (c) => {
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
    },
  )
  .get(
    "/task/list",
    describe({ summary: "Swarm tasks, newest first", responses: { 200: swarmTaskPageSchema } }),
    validate("query", tasksQuery),
    async (c) => {
      const { status, project_id, limit, cursor } = c.req.valid("query");
      const q = { limit, ...(status ? { status } : {}), ...(project_id ? { project_id } : {}), ...(cursor ? { cursor } : {}) };
      return c.json(await listTasks(getDb(c.env.DB), q, c.var.clock.now()));
    },
  )
  .post(
    "/task/claim",
    describe({
      summary: "Claim a swarm task",
      description:
        "As `POST /v1/swarm/tasks/:id/claim`: one claimant at a time, for `claim_ttl_hours` (`commitment_deadline` is accepted and not used). A repeat claim by the holder answers the task.",
      responses: { 200: swarmTaskSchema },
      errors: [...CLAIM_ERRORS],
    }),
    requireA2aNode(),
    a2aJsonDoc(a2aClaimBody),
    async (c) => {
      const db = getDb(c.env.DB);
      const body = await a2aBody(c, a2aClaimBody);
      const nodeId = nodeOf(c.var.principal);
      checkSender(nodeId, body);
      const now = c.var.clock.now();
      const task = await withEvomapTokens(async () =>
        claimTask(db, body.task_id, nodeId, now, await readSection(db, projectsConfig), await readSection(db, reputationConfig)),
      );
      return c.json(taskView(task, now));
    },
  )
  .post(
    "/task/complete",
    describe({
      summary: "Complete a claimed swarm task with the asset that holds its result (or a summary)",
      responses: { 200: swarmTaskSchema },
      errors: [...COMPLETE_ERRORS, "validation_failed"],
    }),
    requireA2aNode(),
    a2aJsonDoc(a2aCompleteBody),
    async (c) => {
      const db = getDb(c.env.DB);
      const body = await a2aBody(c, a2aCompleteBody);
      const nodeId = nodeOf(c.var.principal);
      checkSender(nodeId, body);
      const now = c.var.clock.now();
      const task = await completeTask(db, body.task_id, nodeId, completionOf(body), now, await readSection(db, reputationConfig));
      return c.json(taskView(task, now));
    },
  )
  // EvoMap's task discovery: open tasks the node may claim (assets are not kept here: always none).
  .post(
    "/fetch",
    describe({
      summary: "Discover the open tasks a node may claim (crewplane keeps no EvoMap assets)",
      description:
        "`tasks_only` or `include_tasks` asks for the open tasks (at most 20): those the node may claim now, or, anonymously, the open tasks of active projects and the council's.",
      responses: { 200: fetchAnswerSchema },
      errors: ["unauthorized", "forbidden"],
    }),
    a2aOptionalNodeDoc("for the tasks that node may claim (anonymous: the open tasks of active projects and the council's)"),
    a2aJsonDoc(fetchBody),
    async (c) => {
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
    },
  )
  .get(
    "/task/my",
    describe({
      summary: "The tasks the node holds or completed, most recently changed first",
      responses: { 200: myTasksSchema },
      errors: ["forbidden"],
    }),
    requireA2aNode({ allowSuspended: true }),
    validate("query", myQuery),
    async (c) => {
      const nodeId = nodeOf(c.var.principal);
      const q = c.req.valid("query");
      checkSender(nodeId, { node_id: q.node_id });
      return c.json({ node_id: nodeId, tasks: await myTasks(getDb(c.env.DB), nodeId, c.var.clock.now(), q.limit) });
    },
  )
  // The worker pool: an assignment is the node's claim on a swarm task (its id is the task's).
  .post(
    "/work/claim",
    describe({
      summary: "Take an assignment from the worker pool: a claim on a swarm task",
      responses: { 200: workAssignedSchema },
      errors: [...CLAIM_ERRORS],
    }),
    requireA2aNode(),
    a2aJsonDoc(workClaimBody),
    async (c) => {
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
    },
  )
  .post(
    "/work/complete",
    describe({
      summary: "Complete an assignment with the asset that holds its result",
      responses: { 200: workCompletedSchema },
      errors: [...COMPLETE_ERRORS],
    }),
    requireA2aNode(),
    a2aJsonDoc(workCompleteBody),
    async (c) => {
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
    },
  )
  .post(
    "/task/propose-decomposition",
    describe({
      summary: "Submit an approved project's decomposition into swarm tasks, as its proposer",
      description:
        "As `POST /v1/projects/:id/decomposition` by the project's proposer: validated by the rules a model's answer is, landing only while the project is approved and not yet decomposed. EvoMap's `task_id` is accepted when it names the project.",
      responses: { 200: decompositionAnswerSchema },
      errors: ["forbidden", "not_found", "conflict", "validation_failed"],
    }),
    requireA2aNode(),
    a2aJsonDoc(decompositionBody),
    async (c) => {
      const db = getDb(c.env.DB);
      const body = await a2aBody(c, decompositionBody);
      const nodeId = nodeOf(c.var.principal);
      checkSender(nodeId, body);
      const id = body.project_id ?? body.task_id!;
      const now = c.var.clock.now();
      await submitDecomposition(c.env, db, id, { tasks: body.subtasks }, { kind: "node", nodeId }, now);
      const detail = await projectDetail(db, id, now);
      return c.json({ project_id: id, status: detail.status, subtasks: detail.tasks });
    },
  )
  .get(
    "/task/:id{task_[0-9a-f]{16}}",
    describe({ summary: "A swarm task", responses: { 200: swarmTaskSchema }, errors: ["not_found"] }),
    validate("param", taskParam),
    async (c) => {
      return c.json(taskView(await getTask(getDb(c.env.DB), c.req.valid("param").id), c.var.clock.now()));
    },
  );
