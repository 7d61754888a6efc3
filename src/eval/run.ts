import { and, asc, eq, isNull, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import * as z from "zod";
import { getDb, type Db } from "../db/client";
import { evalJobs, evalMatrix, evalRuns, jobs, tasks, type EvalJobRow, type EvalRunRow } from "../db/schema";
import type { Env } from "../env";
import { readSection } from "../lib/config";
import { AppError, notFound } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { loadClock } from "../lib/clock";
import { appendEventWhere, insertWhere, rowsChanged } from "../lib/guarded-insert";
import { newId } from "../lib/ids";
import { label } from "../lib/validation";
import { answerOf } from "../jobs/model-answer";
import { RUNTIMES, utilityPayload } from "../jobs/payloads";
import type { JobEnd } from "../jobs/job-end";
import { dispatchJob, prepareJob } from "../jobs/submit";
import { findEmployee } from "../tasks/employees";
import type { ExecutorRun, MatrixRun, VerifierRun } from "./cells";
import { costFromUsage, evalConfig, reservationUsd, type EvalConfig } from "./config";
import { DEFAULT_DESIGN, MEASURED_ROLES, type MatrixDesign } from "./design";
import { MatrixRefusedError, serializeMatrix } from "./matrix";
import { buildMatrixReport } from "./report";
import { caseJobPayload, scoreCaseRun } from "./case-job";
import { achievedMde } from "./stats";
import { loadSuites, type EvalCase, type Suite } from "./suites";
import { parseVerifierReply } from "./verifier-reply";
import {
  ARMS,
  armOf,
  armRound,
  armVerifierJob,
  checkTeamArms,
  openArm,
  scoreArm,
  teamArmRuns,
  type ArmDetail,
  type TeamArmsRequest,
} from "./team-arms";

/**
 * A capability-matrix measurement end to end (issue 22): the request is checked whole (suites, models,
 * prices when there is a budget), its declared resolution computed before anything runs, every run
 * recorded as a pending row; runs go out as runner jobs a few at a time (`[eval] parallel`) while the
 * budget holds what they reserve; each run's end is scored (executor: the case's deterministic
 * assertions, no model judges; verifier: its PASS/FAIL reply against the transcript's gold) and, when
 * the last one ends, the report and `role_model_matrix.toml` are written. The matrix the composer reads
 * is the latest that produced a valid file.
 */
const modelRef = z.strictObject({ runtime: z.enum(RUNTIMES), model: label(200) });

export const matrixRequest = z
  .strictObject({
    /** `planner` is measured only by the team 2×2 (`team_2x2`): a lone planner reply is never scored. */
    roles: z
      .array(z.enum([...MEASURED_ROLES, "planner"]))
      .min(1)
      .max(3)
      .default([...MEASURED_ROLES]),
    /** Domains (suite directories) to run; default every shipped suite. */
    suites: z
      .array(z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/))
      .min(1)
      .max(50)
      .optional(),
    /** Only these cases (`<domain>/<case_id>`) of those suites; default all of them. */
    cases: z
      .array(z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}\/[a-z0-9][a-z0-9_-]{0,63}$/))
      .min(1)
      .max(500)
      .optional(),
    /** The models to measure; with `compare`, its weak and strong models are measured too. */
    models: z.array(modelRef).min(1).max(8).optional(),
    compare: z.strictObject({ weak: modelRef, strong: modelRef }).optional(),
    k: z.number().int().min(1).max(10).default(1),
    budget_usd: z.number().positive().max(100_000).optional(),
    design: z
      .strictObject({
        declared_mde: z.number().gt(0).lt(1).optional(),
        alpha: z.number().gt(0).lt(0.5).optional(),
        power: z.number().gt(0.5).lt(1).optional(),
        pass_line: z.number().gt(0).lt(1).optional(),
      })
      .optional(),
    /** An employee whose tools the executor runs get (default: the default tool set); the 2×2's team. */
    employee_id: z.string().min(1).max(64).optional(),
    /**
     * The team 2×2 (role `planner`): per case with a `team_acceptance`, four team rounds of the
     * employee (planner weak/strong × executor weak/strong, the `compare` models), each judged by this
     * fixed verifier, which must be neither of them.
     */
    team_2x2: z.strictObject({ verifier: modelRef }).optional(),
  })
  .refine((b) => b.models !== undefined || b.compare !== undefined, {
    message: "name the models to measure, or a weak/strong compare",
    path: ["models"],
  })
  .refine((b) => b.roles.includes("planner") === (b.team_2x2 !== undefined), {
    message: "the planner is measured only through the team 2×2: role planner and team_2x2 go together",
    path: ["team_2x2"],
  });
export type MatrixRequest = z.infer<typeof matrixRequest>;

interface PlannedRun {
  role: "executor" | "verifier" | "team_arm";
  /** A team arm's planner and executor strengths. */
  arm?: ArmDetail;
  runtime: string;
  model: string;
  domain: string;
  caseId: string;
  repeat: number;
}

function suitesOrThrow(wanted: readonly string[] | undefined): Suite[] {
  const loaded = loadSuites();
  if (!loaded.ok)
    throw new AppError(
      "internal_error",
      `the shipped eval suites do not load: ${loaded.errors.map((e) => `${e.file} ${e.field}: ${e.message}`).join("; ")}`,
    );
  if (!wanted) return loaded.suites;
  const unknown = wanted.filter((d) => !loaded.suites.some((s) => s.domain === d));
  if (unknown.length) {
    throw new AppError("validation_failed", `unknown suite(s): ${unknown.join(", ")}`, {
      errors: [{ path: "suites", message: `known: ${loaded.suites.map((s) => s.domain).join(", ")}` }],
    });
  }
  return loaded.suites.filter((s) => wanted.includes(s.domain));
}

const caseOf = (suites: readonly Suite[], domain: string, id: string): EvalCase | undefined =>
  suites.find((s) => s.domain === domain)?.cases.find((c) => c.id === id);

/**
 * What the sample can resolve, said before it runs, per matrix cell (one domain's cases: the unit a
 * verdict is given for). Worst case: half the cases pass, and the cell's SE is the sample SD over √n,
 * so 0.5·√(n/(n−1))/√n = 0.5/√(n−1). A cell that resolves with fewer cases did so because its pass
 * rate sits far from one half, which nobody can promise in advance.
 */
export function declaredResolution(
  design: MatrixDesign,
  cells: { domain: string; role: string; runtime: string; model: string; n: number }[],
) {
  return {
    declared_mde: design.declared_mde,
    alpha: design.alpha,
    power: design.power,
    cells: cells.map((c) => {
      const mde = c.n > 1 ? achievedMde(0.5 / Math.sqrt(c.n - 1), design.alpha, design.power) : null;
      return { ...c, achievable_mde: mde, resolvable: mde !== null && mde <= design.declared_mde };
    }),
  };
}

export async function startRun(env: Env, db: Db, body: MatrixRequest, actor: string, now: Date) {
  const suites = suitesOrThrow(body.suites);
  const cfg = await readSection(db, evalConfig);
  if (body.employee_id && !(await findEmployee(db, body.employee_id))) throw notFound(`employee ${body.employee_id}`);
  const models = dedupe([...(body.models ?? []), ...(body.compare ? [body.compare.weak, body.compare.strong] : [])]);
  if (body.team_2x2)
    checkTeamArms({
      ...body.team_2x2,
      ...(body.compare ? { compare: body.compare } : {}),
      ...(body.employee_id ? { employee_id: body.employee_id } : {}),
    });
  if (body.budget_usd !== undefined) {
    const priced = body.team_2x2 ? dedupe([...models, body.team_2x2.verifier]) : models;
    const unpriced = priced.filter((m) => reservationUsd(cfg, m.model) === null).map((m) => m.model);
    if (unpriced.length) {
      throw new AppError(
        "validation_failed",
        `a run with a budget needs a price for every model it uses; none for ${unpriced.join(", ")}`,
        {
          errors: [{ path: "budget_usd", message: `set [eval] prices for ${unpriced.join(", ")}` }],
          extra: { reason: "price_missing", models: unpriced },
        },
      );
    }
  }
  if (body.cases) {
    const known = new Set(suites.flatMap((s) => s.cases.map((c) => `${c.domain}/${c.id}`)));
    const unknown = body.cases.filter((c) => !known.has(c));
    if (unknown.length)
      throw new AppError("validation_failed", `unknown case(s): ${unknown.join(", ")}`, {
        errors: [{ path: "cases", message: "not in the suites asked for" }],
      });
  }
  const wantedCase = (c: EvalCase) => !body.cases || body.cases.includes(`${c.domain}/${c.id}`);
  const design: MatrixDesign = { ...DEFAULT_DESIGN, ...body.design, k: body.k };
  const planned: PlannedRun[] = [];
  const cellSizes: { domain: string; role: string; runtime: string; model: string; n: number }[] = [];
  for (const role of body.roles) {
    if (role === "planner") continue;
    for (const m of models) {
      for (const suite of suites) {
        const cases = suite.cases.filter((c) => wantedCase(c) && (role === "executor" || c.transcript !== undefined));
        if (cases.length === 0) continue;
        cellSizes.push({ domain: suite.domain, role, runtime: m.runtime, model: m.model, n: cases.length });
        for (const c of cases)
          for (let r = 1; r <= body.k; r++)
            planned.push({ role, runtime: m.runtime, model: m.model, domain: c.domain, caseId: c.id, repeat: r });
      }
    }
  }
  let teamRows: number | undefined;
  if (body.team_2x2 && body.compare) {
    const cases = suites.flatMap((s) => s.cases.filter((c) => wantedCase(c) && c.team_acceptance !== undefined));
    if (cases.length === 0)
      throw new AppError("validation_failed", "no case asked for declares a team_acceptance, which the team 2×2 is judged on", {
        errors: [{ path: "team_2x2", message: "no case with team_acceptance" }],
      });
    teamRows = cases.length;
    for (const c of cases)
      for (let r = 1; r <= body.k; r++)
        for (const arm of ARMS) {
          const planner = arm.planner === "weak" ? body.compare.weak : body.compare.strong;
          planned.push({
            role: "team_arm",
            arm,
            runtime: planner.runtime,
            model: planner.model,
            domain: c.domain,
            caseId: c.id,
            repeat: r,
          });
        }
  }
  if (planned.length === 0)
    throw new AppError("validation_failed", "nothing to run: no case fits the roles asked for", {
      errors: [{ path: "roles", message: "no case" }],
    });
  if (planned.length > 2_000)
    throw new AppError("validation_failed", `${planned.length} runs is more than one measurement may hold (2000)`, {
      errors: [{ path: "k", message: "fewer runs" }],
    });
  const runId = newId("evr");
  const at = now.toISOString();
  const resolution = {
    ...declaredResolution(design, cellSizes),
    // The 2×2's difference φ_planner − φ_executor per case lies in [−1, 1]: its SD is at most 1.
    ...(teamRows !== undefined
      ? {
          team_2x2: {
            rows: teamRows,
            achievable_mde: teamRows > 1 ? achievedMde(1 / Math.sqrt(teamRows - 1), design.alpha, design.power) : null,
          },
        }
      : {}),
  };
  const rows = planned.map((p, i) => ({
    runId,
    seq: i + 1,
    role: p.role,
    runtime: p.runtime,
    model: p.model,
    domain: p.domain,
    caseId: p.caseId,
    repeat: p.repeat,
    status: "pending" as const,
    ...(p.arm ? { detail: { planner: p.arm.planner, executor: p.arm.executor } } : {}),
    updatedAt: at,
  }));
  // D1 binds at most 100 parameters per statement: rows go in chunks.
  const chunks: BatchItem<"sqlite">[] = [];
  for (let i = 0; i < rows.length; i += 7) chunks.push(db.insert(evalJobs).values(rows.slice(i, i + 7)));
  await db.batch([
    db.insert(evalRuns).values({
      id: runId,
      status: "running",
      request: body as unknown as Record<string, unknown>,
      design: design as unknown as Record<string, unknown>,
      resolution: resolution as unknown as Record<string, unknown>,
      totalJobs: rows.length,
      budgetUsd: body.budget_usd ?? null,
      createdBy: actor,
      createdAt: at,
    }),
    ...chunks,
    appendEvent(
      db,
      {
        type: "eval.run_started",
        subject: runId,
        payload: { run_id: runId, total_jobs: rows.length, models, roles: body.roles, by: actor },
      },
      now,
    ),
  ]);
  await dispatchMore(env, runId, now);
  return { run_id: runId, status: "running" as const, total_jobs: rows.length, declared_resolution: resolution };
}

function dedupe(models: { runtime: (typeof RUNTIMES)[number]; model: string }[]) {
  const seen = new Set<string>();
  return models.filter((m) => {
    const key = `${m.runtime}\u0000${m.model}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function verifierPrompt(c: EvalCase): string {
  const t = c.transcript!;
  const files = Object.entries(t.files ?? {}).map(([p, content]) => `--- ${p}\n${content}`);
  const missing = (t.missing_files ?? []).map((p) => `--- ${p}\n(absent)`);
  return [
    "# Role: verifier",
    "Judge independently whether the recorded run below meets every acceptance criterion.",
    'Answer with JSON only: {"verdict":"PASS"|"FAIL","reasons":["…"]}.',
    "",
    "## Acceptance criteria",
    ...c.acceptance_criteria.map((a, i) => `${i + 1}. ${a}`),
    "",
    "## The run's answer",
    t.text,
    ...(t.exit_status !== undefined ? ["", `Exit status: ${t.exit_status}`] : []),
    "",
    "## Files after the run",
    ...files,
    ...missing,
  ].join("\n");
}

/** The job one run sends; null when its case is gone (a suite changed under a running measurement). */
async function jobFor(db: Db, run: EvalRunRow, row: EvalJobRow, suites: readonly Suite[], cfg: EvalConfig) {
  const c = caseOf(suites, row.domain, row.caseId);
  if (!c) return null;
  const request = run.request as unknown as MatrixRequest;
  if (row.role === "executor") {
    const employee = request.employee_id ? await findEmployee(db, request.employee_id) : undefined;
    const payload = caseJobPayload({
      case: c,
      runtime: row.runtime,
      model: row.model,
      run_id: run.id,
      employee,
      timeout_ms: cfg.case_timeout_ms,
    });
    return { kind: "eval_case" as const, payload };
  }
  const payload = utilityPayload.parse({
    runtime: row.runtime,
    model: row.model,
    prompt: verifierPrompt(c),
    timeout_ms: cfg.case_timeout_ms,
    output_schema: "verdict",
  });
  return { kind: "utility" as const, payload };
}

/**
 * Sends pending runs while fewer than `[eval] parallel` are in flight and the budget holds their
 * reservations. Each send is guarded (still pending, still under the limit), so two owner calls
 * dispatching at once never exceed it. A budget that cannot hold the next run stops the measurement:
 * what has not run is skipped and the report covers what did.
 */
export async function dispatchMore(env: Env, runId: string, now: Date): Promise<void> {
  const db = getDb(env.DB);
  const cfg = await readSection(db, evalConfig);
  const suites = suitesOrThrow(undefined);
  for (let guard = 0; guard < 100; guard++) {
    const run = await db.select().from(evalRuns).where(eq(evalRuns.id, runId)).get();
    if (!run || run.status !== "running") return;
    const [counts] = await db
      .select({
        inflight: sql<number>`SUM(CASE WHEN ${evalJobs.status} = 'dispatched' THEN 1 ELSE 0 END)`,
        pending: sql<number>`SUM(CASE WHEN ${evalJobs.status} = 'pending' THEN 1 ELSE 0 END)`,
        held: sql<number>`COALESCE(SUM(CASE WHEN ${evalJobs.status} = 'dispatched' THEN ${evalJobs.reserveUsd} WHEN ${evalJobs.status} = 'done' THEN COALESCE(${evalJobs.costUsd}, ${evalJobs.reserveUsd}) ELSE 0 END), 0)`,
      })
      .from(evalJobs)
      .where(eq(evalJobs.runId, runId));
    const inflight = Number(counts?.inflight ?? 0);
    const pending = Number(counts?.pending ?? 0);
    if (pending === 0) {
      if (inflight === 0) await finalize(env, runId, now);
      return;
    }
    if (inflight >= cfg.parallel) return;
    const next = await db
      .select()
      .from(evalJobs)
      .where(and(eq(evalJobs.runId, runId), eq(evalJobs.status, "pending")))
      .orderBy(asc(evalJobs.seq))
      .limit(1)
      .get();
    if (!next) return;
    const reserve = reservationOf(cfg, run, next);
    if (run.budgetUsd !== null && (reserve === null || Number(counts?.held ?? 0) + reserve > run.budgetUsd)) {
      await stop(env, runId, "budget", now);
      return;
    }
    if (next.role === "team_arm") {
      if ((await openNextArm(env, run, next, suites, reserve, cfg.parallel, now)) === "stop") return;
      continue;
    }
    const job = await jobFor(db, run, next, suites, cfg);
    if (!job) {
      await db
        .update(evalJobs)
        .set({ status: "skipped", detail: { reason: "case_gone" }, updatedAt: now.toISOString() })
        .where(and(eq(evalJobs.runId, runId), eq(evalJobs.seq, next.seq), eq(evalJobs.status, "pending")));
      continue;
    }
    const prepared = prepareJob(
      db,
      { kind: job.kind, payload: job.payload, owner: { kind: "eval_run", id: runId } } as Parameters<typeof prepareJob>[1],
      now,
    );
    const room = sql`(SELECT COUNT(*) FROM ${evalJobs} WHERE ${evalJobs.runId} = ${runId} AND ${evalJobs.status} = 'dispatched') < ${cfg.parallel}
      AND EXISTS (SELECT 1 FROM ${evalJobs} WHERE ${evalJobs.runId} = ${runId} AND ${evalJobs.seq} = ${next.seq} AND ${evalJobs.status} = 'pending')`;
    const [, , claimed] = await db.batch([
      insertWhere(db, jobs, jobRowOf(prepared.jobId, job.kind, job.payload, runId, now), room),
      appendEventWhere(
        db,
        {
          type: "job.queued",
          subject: prepared.jobId,
          payload: { job_id: prepared.jobId, kind: job.kind, runtime: job.payload.runtime, owner: { kind: "eval_run", id: runId } },
          dedupeKey: `job:${prepared.jobId}:queued`,
        },
        now,
        room,
      ),
      db
        .update(evalJobs)
        .set({ status: "dispatched", jobId: prepared.jobId, reserveUsd: reserve, updatedAt: now.toISOString() })
        .where(
          and(
            eq(evalJobs.runId, runId),
            eq(evalJobs.seq, next.seq),
            eq(evalJobs.status, "pending"),
            sql`(SELECT COUNT(*) FROM ${evalJobs} e2 WHERE e2.run_id = ${runId} AND e2.status = 'dispatched') < ${cfg.parallel}`,
          ),
        ),
    ]);
    if (rowsChanged(claimed) === 0) return; // another dispatcher took the slot or the run
    try {
      await dispatchJob(env, prepared.message);
    } catch (err) {
      console.error(`eval: run ${runId} job ${prepared.jobId} could not be queued`, err);
      await recordEnd(
        env,
        prepared.jobId,
        { status: "failed", error: { code: "dispatch_failed", message: "the dispatch queue refused the job" } },
        now,
      );
    }
  }
}

function jobRowOf(jobId: string, kind: string, payload: { runtime: string }, runId: string, now: Date) {
  const at = now.toISOString();
  return {
    id: jobId,
    kind,
    runtime: payload.runtime,
    status: "queued" as const,
    ownerKind: "eval_run",
    ownerId: runId,
    payload: payload as unknown as Record<string, unknown>,
    attempt: 0,
    createdAt: at,
    updatedAt: at,
  };
}

/** What a run holds of the budget while it runs: a team arm, its planner, executor and verifier. */
function reservationOf(cfg: EvalConfig, run: EvalRunRow, row: EvalJobRow): number | null {
  if (row.role !== "team_arm") return reservationUsd(cfg, row.model);
  const request = run.request as unknown as MatrixRequest;
  if (!request.compare || !request.team_2x2) return null;
  const arm = armOf(row);
  const parts = [
    reservationUsd(cfg, (arm.planner === "weak" ? request.compare.weak : request.compare.strong).model),
    reservationUsd(cfg, (arm.executor === "weak" ? request.compare.weak : request.compare.strong).model),
    reservationUsd(cfg, request.team_2x2.verifier.model),
  ];
  return parts.some((p) => p === null) ? null : parts.reduce<number>((sum, p) => sum + p!, 0);
}

async function verifierModelOf(db: Db, runId: string): Promise<string | undefined> {
  const run = await db.select({ request: evalRuns.request }).from(evalRuns).where(eq(evalRuns.id, runId)).get();
  return (run?.request as unknown as MatrixRequest | undefined)?.team_2x2?.verifier.model;
}

const teamRequest = (run: EvalRunRow): TeamArmsRequest | null => {
  const r = run.request as unknown as MatrixRequest;
  return r.compare && r.team_2x2 && r.employee_id
    ? { compare: r.compare, verifier: r.team_2x2.verifier, employee_id: r.employee_id }
    : null;
};

/**
 * A pending arm takes its slot (the same guarded claim as a job: still pending, under `parallel`),
 * then its round is opened. A dispatch guard that refuses for now gives the slot back (the `eval`
 * tick tries again); an arm whose team cannot form ends unscored, with why.
 */
async function openNextArm(
  env: Env,
  run: EvalRunRow,
  row: EvalJobRow,
  suites: readonly Suite[],
  reserve: number | null,
  parallel: number,
  now: Date,
): Promise<"stop" | "next"> {
  const db = getDb(env.DB);
  const at = now.toISOString();
  const arm = armOf(row);
  const c = caseOf(suites, row.domain, row.caseId);
  const request = teamRequest(run);
  const where = and(eq(evalJobs.runId, run.id), eq(evalJobs.seq, row.seq));
  if (!c || !request) {
    await db
      .update(evalJobs)
      .set({ status: "skipped", detail: { ...arm, reason: c ? "request_incomplete" : "case_gone" }, updatedAt: at })
      .where(and(where, eq(evalJobs.status, "pending")));
    return "next";
  }
  const [claimed] = await db.batch([
    db
      .update(evalJobs)
      .set({ status: "dispatched", reserveUsd: reserve, detail: { ...arm, phase: "round" }, updatedAt: at })
      .where(
        and(
          where,
          eq(evalJobs.status, "pending"),
          sql`(SELECT COUNT(*) FROM ${evalJobs} e2 WHERE e2.run_id = ${run.id} AND e2.status = 'dispatched') < ${parallel}`,
        ),
      )
      .returning({ seq: evalJobs.seq }),
  ]);
  if (claimed.length === 0) return "stop"; // another dispatcher took the slot or the row
  let opened: Awaited<ReturnType<typeof openArm>>;
  try {
    opened = await openArm(env, db, { runId: run.id, row, case: c, request, actor: run.createdBy }, now);
  } catch (err) {
    // Not retried blindly: a half-opened arm's task may exist (isolated-goal.ts ends it), and a second
    // try would open a second round. The arm ends unscored, with why.
    console.error(`eval: run ${run.id} arm ${row.seq} could not be opened`, err);
    await db
      .update(evalJobs)
      .set({ status: "done", verdict: "unscored", detail: { ...arm, reason: "arm_open_failed" }, updatedAt: at })
      .where(and(where, eq(evalJobs.status, "dispatched"), isNull(evalJobs.jobId)));
    return "next";
  }
  if (opened.kind === "retry") {
    await db
      .update(evalJobs)
      .set({ status: "pending", reserveUsd: null, detail: { ...arm }, updatedAt: at })
      .where(and(where, eq(evalJobs.status, "dispatched"), isNull(evalJobs.jobId)));
    return "stop";
  }
  const detail: ArmDetail =
    opened.kind === "opened" ? { ...arm, phase: "round", task_id: opened.task_id } : { ...arm, reason: opened.reason };
  await db
    .update(evalJobs)
    .set(
      opened.kind === "opened"
        ? { detail: detail as unknown as Record<string, unknown>, updatedAt: at }
        : { status: "done", verdict: "unscored", detail: { ...detail, detail: opened.detail }, updatedAt: at },
    )
    .where(and(where, eq(evalJobs.status, "dispatched")));
  if (opened.kind === "opened") await advanceArm(env, run, { ...row, detail: detail as unknown as Record<string, unknown> }, suites, now);
  return "next";
}

/**
 * An arm whose round is over gets its fixed verifier: one `utility` job reading the arm's isolated
 * workspace. Guarded on the row still waiting for it (no job yet), so the tick and a job's end
 * racing here queue one verifier. A round that never ran members is not judged: the workspace would
 * show nothing the arm did.
 */
/** How long an arm may sit claimed without its round's task recorded before it counts as lost. */
const ARM_OPEN_LOST_MS = 10 * 60_000;

async function advanceArm(env: Env, run: EvalRunRow, row: EvalJobRow, suites: readonly Suite[], now: Date): Promise<boolean> {
  const db = getDb(env.DB);
  const arm = armOf(row);
  if (arm.phase !== "round" || row.jobId) return false;
  if (!arm.task_id) {
    // Claimed but never recorded as opened: the Worker stopped in between. Past the window it ends
    // unscored rather than holding its run open forever (a second open could run a second round).
    if (now.getTime() - Date.parse(row.updatedAt) < ARM_OPEN_LOST_MS) return false;
    await db
      .update(evalJobs)
      .set({ status: "done", verdict: "unscored", detail: { ...arm, reason: "arm_open_lost" }, updatedAt: now.toISOString() })
      .where(and(eq(evalJobs.runId, run.id), eq(evalJobs.seq, row.seq), eq(evalJobs.status, "dispatched"), isNull(evalJobs.jobId)));
    return true;
  }
  const task = await db.select({ status: tasks.status }).from(tasks).where(eq(tasks.id, arm.task_id)).get();
  if (task?.status === "assigned") return false;
  const at = now.toISOString();
  const where = and(eq(evalJobs.runId, run.id), eq(evalJobs.seq, row.seq), eq(evalJobs.status, "dispatched"), isNull(evalJobs.jobId));
  const round = await armRound(db, arm.task_id);
  const settled = {
    status: task?.status ?? "gone",
    ...(round.phase ? { phase: round.phase } : {}),
    ...(round.reason ? { reason: round.reason } : {}),
  };
  const c = caseOf(suites, row.domain, row.caseId);
  const request = teamRequest(run);
  if (!round.ran || !c || !request) {
    const reason = !round.ran ? "round_not_run" : c ? "request_incomplete" : "case_gone";
    await db
      .update(evalJobs)
      .set({ status: "done", verdict: "unscored", detail: { ...arm, round: settled, reason }, updatedAt: at })
      .where(where);
    return true;
  }
  const cfg = await readSection(db, evalConfig);
  const payload = armVerifierJob(run.id, row, c, request.verifier, cfg.case_timeout_ms);
  const prepared = prepareJob(db, { kind: "utility", payload, owner: { kind: "eval_run", id: run.id } }, now);
  const waiting = sql`EXISTS (SELECT 1 FROM ${evalJobs} WHERE ${evalJobs.runId} = ${run.id} AND ${evalJobs.seq} = ${row.seq} AND ${evalJobs.status} = 'dispatched' AND ${evalJobs.jobId} IS NULL)`;
  const [, , claimed] = await db.batch([
    insertWhere(db, jobs, jobRowOf(prepared.jobId, "utility", payload, run.id, now), waiting),
    appendEventWhere(
      db,
      {
        type: "job.queued",
        subject: prepared.jobId,
        payload: { job_id: prepared.jobId, kind: "utility", runtime: payload.runtime, owner: { kind: "eval_run", id: run.id } },
        dedupeKey: `job:${prepared.jobId}:queued`,
      },
      now,
      waiting,
    ),
    db
      .update(evalJobs)
      .set({ jobId: prepared.jobId, detail: { ...arm, phase: "verify", round: settled }, updatedAt: at })
      .where(where),
  ]);
  if (rowsChanged(claimed) === 0) return false;
  try {
    await dispatchJob(env, prepared.message);
  } catch (err) {
    console.error(`eval: run ${run.id} arm ${row.seq} verifier ${prepared.jobId} could not be queued`, err);
    await recordEnd(
      env,
      prepared.jobId,
      { status: "failed", error: { code: "dispatch_failed", message: "the dispatch queue refused the job" } },
      now,
    );
  }
  return true;
}

/**
 * The `eval` tick: arms whose rounds ended get their verifier (the round's end reaches no eval code,
 * so this is how an arm moves on), arms the dispatch guard refused are tried again, and a run whose
 * last arm ended is finalized.
 */
export async function evalTick(env: Env, now: Date): Promise<Record<string, unknown>> {
  const db = getDb(env.DB);
  const running = (await db.select().from(evalRuns).where(eq(evalRuns.status, "running")).all()).filter((run) => teamRequest(run));
  if (running.length === 0) return { runs: 0, arms_moved_on: 0 };
  const suites = suitesOrThrow(undefined);
  let verifying = 0;
  for (const run of running) {
    const arms = await db
      .select()
      .from(evalJobs)
      .where(and(eq(evalJobs.runId, run.id), eq(evalJobs.status, "dispatched"), eq(evalJobs.role, "team_arm"), isNull(evalJobs.jobId)))
      .all();
    for (const row of arms) if (await advanceArm(env, run, row, suites, now)) verifying++;
    await dispatchMore(env, run.id, now);
  }
  return { runs: running.length, arms_moved_on: verifying };
}

async function stop(env: Env, runId: string, reason: string, now: Date) {
  const db = getDb(env.DB);
  const at = now.toISOString();
  const [stopped] = await db.batch([
    db
      .update(evalRuns)
      .set({ status: "stopped", stopReason: reason })
      .where(and(eq(evalRuns.id, runId), eq(evalRuns.status, "running")))
      .returning({ id: evalRuns.id }),
    db
      .update(evalJobs)
      .set({ status: "skipped", detail: { reason }, updatedAt: at })
      .where(and(eq(evalJobs.runId, runId), eq(evalJobs.status, "pending"))),
    appendEvent(db, { type: "eval.run_stopped", subject: runId, payload: { run_id: runId, reason } }, now),
  ]);
  if (stopped.length === 0) return;
  // What is still in flight finishes and is counted; the report waits for it.
  const inflight = await db
    .select({ n: sql<number>`COUNT(*)` })
    .from(evalJobs)
    .where(and(eq(evalJobs.runId, runId), eq(evalJobs.status, "dispatched")))
    .get();
  if (Number(inflight?.n ?? 0) === 0) await finalize(env, runId, now);
}

type EndOf = Pick<JobEnd, "status" | "result" | "error">;

/** Owner handler of `eval_run` jobs: the run is scored once (keyed by its job), then more go out. */
export async function onEvalJobEnd(env: Env, end: JobEnd): Promise<void> {
  const now = (await loadClock(env)).now();
  await recordEnd(env, end.job_id, end, now);
  await dispatchMore(env, end.owner.id, now);
}

async function recordEnd(env: Env, jobId: string, end: EndOf, now: Date) {
  const db = getDb(env.DB);
  const row = await db.select().from(evalJobs).where(eq(evalJobs.jobId, jobId)).get();
  if (!row || row.status !== "dispatched") return;
  const cfg = await readSection(db, evalConfig);
  const c = caseOf(suitesOrThrow(undefined), row.domain, row.caseId);
  const result = end.status === "completed" ? end.result : undefined;
  let verdict: string;
  let detail: Record<string, unknown>;
  if (row.role === "executor") {
    ({ verdict, detail } = scoreCaseRun(c, { result, error: end.error }));
  } else if (row.role === "team_arm") {
    const scored = scoreArm(result, end.error?.code);
    verdict = scored.verdict;
    detail = { ...armOf(row), phase: "verify", ...scored.detail };
  } else {
    const answer = answerOf(result);
    // A failed job gave no reply at all: no observation. Offline text is not a verdict.
    verdict = !result ? "failed" : answer.offline ? "unparseable" : parseVerifierReply(answer.text ?? "");
    detail = result
      ? {
          reply_head: (answer.text ?? "").slice(0, 300),
          ...(result.message_recovered_from_stream === true ? { message_recovered_from_stream: true } : {}),
        }
      : { reason: end.error?.code ?? "no_result" };
  }
  // A team arm's job is its fixed verifier's: priced at the verifier's model, not the arm's planner's.
  const pricedAs = row.role === "team_arm" ? await verifierModelOf(db, row.runId) : row.model;
  const cost = result && pricedAs ? costFromUsage(cfg, pricedAs, result.usage, result.cost_usd) : null;
  await db
    .update(evalJobs)
    .set({ status: "done", verdict, detail, costUsd: cost, updatedAt: now.toISOString() })
    .where(and(eq(evalJobs.runId, row.runId), eq(evalJobs.seq, row.seq), eq(evalJobs.status, "dispatched")));
}

/** The last run ended: the report and the matrix file, once (guarded on the run having none yet). */
async function finalize(env: Env, runId: string, now: Date): Promise<void> {
  const db = getDb(env.DB);
  const run = await db.select().from(evalRuns).where(eq(evalRuns.id, runId)).get();
  if (!run || run.report) return;
  const suites = suitesOrThrow(undefined);
  const rows = await db.select().from(evalJobs).where(eq(evalJobs.runId, runId)).orderBy(asc(evalJobs.seq)).all();
  const runs: MatrixRun[] = [];
  for (const r of rows) {
    if (r.status !== "done" || !r.verdict) continue;
    if (r.role === "executor" && (r.verdict === "PASS" || r.verdict === "FAIL" || r.verdict === "unscored")) {
      runs.push({
        role: "executor",
        domain: r.domain,
        case_id: r.caseId,
        runtime: r.runtime,
        model: r.model,
        verdict: r.verdict,
      } as ExecutorRun);
    }
    const gold = caseOf(suites, r.domain, r.caseId)?.transcript?.gold;
    if (r.role === "verifier" && gold && (r.verdict === "PASS" || r.verdict === "FAIL" || r.verdict === "unparseable")) {
      runs.push({
        role: "verifier",
        domain: r.domain,
        case_id: r.caseId,
        runtime: r.runtime,
        model: r.model,
        gold,
        reply: r.verdict,
      } as VerifierRun);
    }
  }
  const request = run.request as unknown as MatrixRequest;
  const report = buildMatrixReport({
    design: run.design as unknown as MatrixDesign,
    generated_at: now.toISOString(),
    runs,
    ...(request.compare ? { compare: { weak: request.compare.weak, strong: request.compare.strong } } : {}),
    ...(request.team_2x2 ? { team_2x2: teamArmRuns(rows) } : {}),
  });
  let toml: string | null = null;
  let refusal: Record<string, unknown> | null = null;
  try {
    toml = serializeMatrix(report);
  } catch (err) {
    if (!(err instanceof MatrixRefusedError)) throw err;
    refusal = { reason: err.reason, path: err.path, message: err.message };
  }
  const measured = report.cells.some((c) => c.n > 0);
  const at = now.toISOString();
  const statements: BatchItem<"sqlite">[] = [
    db
      .update(evalRuns)
      .set({
        status: run.status === "running" ? "done" : run.status,
        report: report as unknown as Record<string, unknown>,
        matrixToml: toml,
        matrixRefusal: refusal,
        endedAt: at,
      })
      .where(and(eq(evalRuns.id, runId), sql`${evalRuns.report} IS NULL`)),
    appendEvent(
      db,
      {
        type: "eval.run_done",
        subject: runId,
        payload: {
          run_id: runId,
          status: run.status === "running" ? "done" : run.status,
          cells: report.cells.length,
          matrix_written: toml !== null && measured,
          ...(refusal ? { matrix_refusal: refusal } : {}),
        },
        dedupeKey: `eval.run_done:${runId}`,
      },
      now,
    ),
  ];
  if (toml && measured) {
    statements.push(
      db
        .insert(evalMatrix)
        .values({ id: 1, runId, toml, updatedAt: at })
        .onConflictDoUpdate({ target: evalMatrix.id, set: { runId, toml, updatedAt: at } }),
    );
  }
  await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
}

/** `GET /v1/eval/matrix/:run_id`: progress and declared resolution up front, the report when done. */
export async function runView(db: Db, runId: string) {
  const run = await db.select().from(evalRuns).where(eq(evalRuns.id, runId)).get();
  if (!run) throw notFound(`eval run ${runId}`);
  const counts = await db
    .select({
      status: evalJobs.status,
      n: sql<number>`COUNT(*)`,
      cost: sql<number | null>`SUM(${evalJobs.costUsd})`,
      unknown: sql<number>`SUM(CASE WHEN ${evalJobs.status} = 'done' AND ${evalJobs.costUsd} IS NULL THEN 1 ELSE 0 END)`,
    })
    .from(evalJobs)
    .where(eq(evalJobs.runId, runId))
    .groupBy(evalJobs.status)
    .all();
  const by = Object.fromEntries(counts.map((c) => [c.status, Number(c.n)]));
  const known = counts.reduce((s, c) => s + (c.cost === null ? 0 : Number(c.cost)), 0);
  const unknownCost = counts.reduce((s, c) => s + Number(c.unknown ?? 0), 0);
  return {
    run_id: run.id,
    status: run.status,
    ...(run.stopReason ? { stop_reason: run.stopReason } : {}),
    request: run.request,
    declared_resolution: run.resolution,
    progress: {
      total: run.totalJobs,
      done: by.done ?? 0,
      in_flight: by.dispatched ?? 0,
      pending: by.pending ?? 0,
      skipped: by.skipped ?? 0,
    },
    // Spend nobody reported is unknown, not zero: said apart.
    spend: { reported_usd: known, runs_with_unknown_cost: unknownCost, ...(run.budgetUsd !== null ? { budget_usd: run.budgetUsd } : {}) },
    ...(run.report ? { report: run.report } : {}),
    ...(run.matrixToml ? { matrix_toml: run.matrixToml } : {}),
    ...(run.matrixRefusal ? { matrix_refusal: run.matrixRefusal } : {}),
    created_at: run.createdAt,
    ...(run.endedAt ? { ended_at: run.endedAt } : {}),
  };
}
