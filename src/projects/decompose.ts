import { and, eq, inArray, isNull, or, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { getDb } from "../db/client";
import { guarded, isGuardFailure } from "../db/guard";
import { batchable } from "../db/raw";
import { councilProposals, councilSessions, jobs, projects, swarmTasks } from "../db/schema";
import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import { readSection } from "../lib/config";
import { AppError } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { newId } from "../lib/ids";
import type { JobEnd } from "../jobs/job-end";
import { dispatchJob, prepareJob } from "../jobs/submit";
import { answerOf } from "../jobs/model-answer";
import { projectsConfig, readProjectsConfig, type ProjectsConfig } from "./config";
import { backoffMs, checkDecomposition, decompositionPrompt, readModelDecomposition, type DecompositionTask } from "./decomposition";
import { ensureProjectRepository } from "./repository";
import { getProject, type ProjectRow } from "./store";

const DAY = 86_400_000;

/** Who landed a decomposition: the model job, a manager by hand, or the project's proposer node. */
export type Submitter = { kind: "manager"; id: string } | { kind: "node"; nodeId: string };

async function planFor(db: Db, p: ProjectRow) {
  const proposal = await db
    .select({ title: councilProposals.title, body: councilProposals.body })
    .from(councilProposals)
    .where(eq(councilProposals.id, p.proposalId))
    .get();
  const session = p.sessionId
    ? await db.select({ state: councilSessions.state }).from(councilSessions).where(eq(councilSessions.id, p.sessionId)).get()
    : undefined;
  const decision = (session?.state as { decision?: { consensus?: string; conditions?: string[] } } | undefined)?.decision;
  return {
    name: p.name,
    summary: p.summary,
    title: proposal?.title ?? p.name,
    plan: proposal?.body ?? p.summary,
    consensus: decision?.consensus ?? null,
    conditions: decision?.conditions ?? [],
  };
}

/** Statuses in which a decomposition may start: never tried, or failed and due again. */
const startable = (at: string): SQL =>
  sql`status = 'approved' AND (decomp_state IS NULL OR (decomp_state = 'failed' AND decomp_next_at IS NOT NULL AND decomp_next_at <= ${at}))`;

/**
 * Submits the decomposition job of an approved project (on approval, and again on the `projects`
 * tick after a failed attempt's backoff). The job and the project's `pending` mark land in one
 * batch guarded by the project still being startable, so racing starts submit one job.
 */
export async function startDecomposition(env: Env, db: Db, projectId: string, now: Date): Promise<{ started: boolean; job_id?: string }> {
  const p = await getProject(db, projectId).catch(() => null);
  if (!p || p.status !== "approved") return { started: false };
  const config = await readProjectsConfig(db, now);
  const plan = config.decomposition;
  // `model_work` named a runtime no live runner offers: this attempt runs as it would without it, and
  // the project says why from now on (kept through the attempt's offline answer, see below).
  const fellBack = plan.fell_back_because === "runtime_not_offered";
  const at = now.toISOString();
  const job = prepareJob(
    db,
    {
      kind: "utility",
      payload: {
        runtime: config.decomposition_runtime,
        prompt: decompositionPrompt(await planFor(db, p)),
        timeout_ms: config.decomposition_timeout_ms,
        ...(config.decomposition_model ? { model: config.decomposition_model } : {}),
      },
      owner: { kind: "project", id: projectId },
    },
    now,
  );
  try {
    await db.batch([
      batchable(
        db,
        sql`
        UPDATE projects SET updated_at = ${guarded(startable(at), at)}, decomp_state = 'pending', decomp_job_id = ${job.jobId},
          decomp_attempts = decomp_attempts + 1, decomp_reason = ${fellBack ? "runtime_not_offered" : null},
          decomp_detail = ${fellBack ? notOfferedDetail(plan.wanted_runtime, config.decomposition_runtime) : null}, decomp_next_at = NULL
        WHERE id = ${projectId}`,
      ),
      appendEvent(
        db,
        {
          type: "project.decomposition_requested",
          subject: projectId,
          payload: {
            project_id: projectId,
            job_id: job.jobId,
            runtime: config.decomposition_runtime,
            attempt: p.decompAttempts + 1,
            model_work: plan,
          },
        },
        now,
      ),
      ...job.statements,
    ]);
  } catch (err) {
    if (isGuardFailure(err, "projects.updated_at")) return { started: false };
    throw err;
  }
  // A refused send leaves the job queued in D1; the `leases` tick re-dispatches it.
  await dispatchJob(env, job.message).catch((err: unknown) =>
    console.error(`projects: the dispatch queue refused decomposition job ${job.jobId}; the leases tick will re-dispatch it`, err),
  );
  return { started: true, job_id: job.jobId };
}

function notOfferedDetail(wanted: string | undefined, runtime: string): string {
  return `model_work names ${wanted ?? "a runtime"}, which no live runner offered when this attempt started; it runs on ${runtime}`;
}

/**
 * A failed attempt, recorded on the project with its reason token and when the tick tries again
 * (never after the last allowed attempt). Only the attempt the project waits for counts, once.
 */
async function markFailed(db: Db, p: ProjectRow, jobId: string, reason: string, detail: string | null, now: Date, config: ProjectsConfig) {
  const attempt = p.decompAttempts;
  const next =
    attempt < config.decomposition_max_attempts
      ? new Date(now.getTime() + backoffMs(attempt, config.decomposition_backoff_ms, config.decomposition_backoff_max_ms)).toISOString()
      : null;
  const cond = sql`id = ${p.id} AND decomp_state = 'pending' AND decomp_job_id = ${jobId}`;
  const payload = { project_id: p.id, job_id: jobId, reason, detail, attempt, next_attempt_at: next };
  await db.batch([
    batchable(
      db,
      sql`INSERT INTO events (type, subject, payload, created_at) SELECT 'project.decomposition_failed', id, ${JSON.stringify(payload)}, ${now.toISOString()} FROM projects WHERE ${cond}`,
    ),
    batchable(
      db,
      sql`UPDATE projects SET decomp_state = 'failed', decomp_reason = ${reason}, decomp_detail = ${detail}, decomp_next_at = ${next}, updated_at = ${now.toISOString()} WHERE ${cond}`,
    ),
  ]);
}

/**
 * Lands a valid decomposition: the project moves approved → active, its tasks and their events are
 * inserted, all in one batch guarded by the project still waiting for this decomposition (the job
 * it waits for, or for a hand-made one: any not yet done). Then the repository is asked for.
 */
async function applyDecomposition(
  env: Env,
  db: Db,
  p: ProjectRow,
  tasks: DecompositionTask[],
  source: { kind: "model"; jobId: string } | Submitter,
  now: Date,
  config: ProjectsConfig,
): Promise<boolean> {
  const at = now.toISOString();
  const cond =
    source.kind === "model"
      ? sql`status = 'approved' AND decomp_state = 'pending' AND decomp_job_id = ${source.jobId}`
      : sql`status = 'approved' AND (decomp_state IS NULL OR decomp_state <> 'done')`;
  const by = source.kind === "model" ? source.jobId : source.kind === "manager" ? source.id : source.nodeId;
  const expiresAt = new Date(now.getTime() + config.task_expiry_days * DAY).toISOString();
  const rows = tasks.map((t, i) => ({ id: newId("task"), seq: i, ...t }));
  const statements: BatchItem<"sqlite">[] = [
    batchable(
      db,
      sql`
      UPDATE projects SET updated_at = ${guarded(cond, at)}, status = 'active', decomp_state = 'done', decomp_source = ${source.kind},
        decomposed_at = ${at}, decomp_reason = NULL, decomp_detail = NULL, decomp_next_at = NULL, repo_state = 'pending', repo_next_at = NULL
      WHERE id = ${p.id}`,
    ),
    appendEvent(
      db,
      {
        type: "project.decomposed",
        subject: p.id,
        payload: {
          project_id: p.id,
          source: source.kind,
          by,
          tasks: rows.map((r) => ({ task_id: r.id, title: r.title, weight: r.weight })),
          weight_sum: Math.round(rows.reduce((a, r) => a + r.weight, 0) * 1e6) / 1e6,
        },
      },
      now,
    ),
    appendEvent(
      db,
      {
        type: "project.status_changed",
        subject: p.id,
        payload: { project_id: p.id, from: "approved", to: "active", by: "decomposition", source: source.kind },
      },
      now,
    ),
  ];
  for (const r of rows) {
    statements.push(
      db.insert(swarmTasks).values({
        id: r.id,
        title: r.title,
        body: r.body ?? r.title,
        status: "open",
        projectId: p.id,
        sourceSessionId: p.sessionId,
        seq: r.seq,
        signals: r.signals,
        weight: r.weight,
        createdAt: at,
        updatedAt: at,
        expiresAt,
      }),
      appendEvent(
        db,
        { type: "swarm_task.created", subject: r.id, payload: { task_id: r.id, project_id: p.id, title: r.title, weight: r.weight } },
        now,
      ),
    );
  }
  try {
    await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  } catch (err) {
    if (isGuardFailure(err, "projects.updated_at")) return false;
    throw err;
  }
  try {
    await ensureProjectRepository(env, db, p.id, now);
  } catch (err) {
    console.error(`projects: the repository of ${p.id} could not be requested now; the projects tick will retry`, err);
  }
  return true;
}

/** Owner `project`: a decomposition job ended. Idempotent: only the job the project waits for counts, once. */
export async function decompositionJobEnded(env: Env, end: JobEnd): Promise<void> {
  const db = getDb(env.DB);
  const now = (await loadClock(env)).now();
  await onDecompositionEnded(env, db, end, now);
}

export async function onDecompositionEnded(
  env: Env,
  db: Db,
  end: Pick<JobEnd, "job_id" | "owner" | "status" | "result" | "error" | "reason">,
  now: Date,
) {
  const p = await db.select().from(projects).where(eq(projects.id, end.owner.id)).get();
  if (!p || p.decompState !== "pending" || p.decompJobId !== end.job_id) return { applied: false };
  const config = await readSection(db, projectsConfig);
  const failed = (reason: string, detail: string | null) =>
    markFailed(db, p, end.job_id, reason, detail, now, config).then(() => ({ applied: false }));
  // A veto took the approval back while the job ran: its answer is not used; a restored approval starts again.
  if (p.status !== "approved") return failed("project_not_approved", `the project is ${p.status}`);
  if (end.status !== "completed") {
    return failed(end.status === "dead" ? "job_dead" : "job_failed", end.reason ?? end.error?.code ?? null);
  }
  const answer = answerOf(end.result);
  // An attempt that fell back from model_work keeps saying so: the offline answer is its consequence.
  if (answer.offline && p.decompReason === "runtime_not_offered") return failed("runtime_not_offered", p.decompDetail);
  if (answer.offline) {
    return failed(
      "offline_runtime",
      "the runner's offline runtime answers with labelled text and cannot decompose; set model_work (or projects.decomposition_runtime) to a model runtime or submit a decomposition by hand",
    );
  }
  const verdict = readModelDecomposition(answer.text);
  if (!verdict.ok) return failed(verdict.reason, verdict.detail);
  const applied = await applyDecomposition(env, db, p, verdict.tasks, { kind: "model", jobId: end.job_id }, now, config);
  return { applied };
}

/**
 * A decomposition submitted by hand: a manager's, or the project's proposer's (the facade's
 * `propose-decomposition`). Validated by the same rules as a model's answer; it lands only while
 * the project is approved and not yet decomposed (a pending job's later answer is then ignored).
 */
export async function submitDecomposition(env: Env, db: Db, projectId: string, body: unknown, by: Submitter, now: Date) {
  const p = await getProject(db, projectId);
  if (by.kind === "node" && by.nodeId !== p.proposerId) {
    throw new AppError("forbidden", "Only the project's proposer (or a manager) submits its decomposition");
  }
  if (p.status !== "approved") {
    throw new AppError("conflict", `Only an approved project is decomposed; this one is ${p.status}`, { extra: { status: p.status } });
  }
  const verdict = checkDecomposition(body);
  if (!verdict.ok) {
    throw new AppError("validation_failed", `The decomposition is invalid: ${verdict.detail}`, {
      errors: verdict.errors.length > 0 ? verdict.errors : [{ path: "tasks", message: verdict.detail }],
      extra: { reason: verdict.reason },
    });
  }
  const config = await readSection(db, projectsConfig);
  if (!(await applyDecomposition(env, db, p, verdict.tasks, by, now, config))) {
    const current = await getProject(db, projectId);
    throw new AppError("conflict", `The project was decomposed or moved meanwhile (now ${current.status})`, {
      extra: { status: current.status },
    });
  }
  return getProject(db, projectId);
}

/** Approved projects whose decomposition may start now (never started, or failed and due). */
export async function dueDecompositions(db: Db, now: Date, limit = 20): Promise<string[]> {
  const at = now.toISOString();
  const rows = await db
    .select({ id: projects.id })
    .from(projects)
    .where(
      and(
        eq(projects.status, "approved"),
        or(
          isNull(projects.decompState),
          and(eq(projects.decompState, "failed"), sql`${projects.decompNextAt} IS NOT NULL AND ${projects.decompNextAt} <= ${at}`),
        ),
      ),
    )
    .limit(limit)
    .all();
  return rows.map((r) => r.id);
}

/**
 * Backstop for a lost owner call: pending decompositions whose job is already terminal are given
 * their outcome from the job row (the handler is idempotent, so a late real call changes nothing).
 */
export async function reconcileDecompositions(env: Env, db: Db, now: Date, limit = 20): Promise<number> {
  const rows = await db
    .select({ project: projects.id, job: jobs })
    .from(projects)
    .innerJoin(jobs, eq(jobs.id, projects.decompJobId))
    .where(and(eq(projects.decompState, "pending"), inArray(jobs.status, ["completed", "failed", "dead"])))
    .limit(limit)
    .all();
  for (const r of rows) {
    await onDecompositionEnded(
      env,
      db,
      {
        job_id: r.job.id,
        owner: { kind: "project", id: r.project },
        status: r.job.status as "completed" | "failed" | "dead",
        ...(r.job.result ? { result: r.job.result } : {}),
        ...(r.job.error ? { error: r.job.error } : {}),
      },
      now,
    );
  }
  return rows.length;
}
