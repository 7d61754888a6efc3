import { and, eq } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { getDb, type Db } from "../db/client";
import { aeeJobs, aeeRejections, aeeRounds, type AeeRoundRow, type EmployeeRow, type EvolutionRequestRow } from "../db/schema";
import { getAgentLock } from "../durable-objects/agent-lock-rpc";
import { getEvolutionSemaphore } from "../durable-objects/evolution-semaphore-rpc";
import type { Env } from "../env";
import { findCase, scoreCaseRun } from "../eval/case-job";
import type { Suite } from "../eval/suites";
import { loadClock } from "../lib/clock";
import { appendEvent } from "../lib/events";
import { newId } from "../lib/ids";
import type { JobEnd } from "../jobs/job-end";
import { findEmployee } from "../tasks/employees";
import {
  allCaseRefs,
  batchOf,
  caseJob,
  caseResultsOf,
  caseTextOf,
  caseTimeoutMs,
  caseTitle,
  dispatchAll,
  isRoundConflict,
  modelJob,
  planFor,
  planOf,
  recordedTranscripts,
  roundCases,
  roundHistory,
  roundUpdate,
  ROUND_LOCK_MS,
  stateOf,
  stepJobs,
  suitesOrThrow,
  type NewRoundJob,
  type RoundPlan,
} from "./aee-context";
import { employeeEvolutionConfig } from "./config";
import { commitAccepted, finishAbandoned } from "./aee-commit";
import type { GateContext } from "./aee-gate";
import { uncoveredCases } from "./aee-intent";
import { measure, type CaseResult, type MeasureVector } from "./aee-measure";
import { generatorPrompt, judgePrompt, readGenerator, readJudge, type ModelReading } from "./aee-prompts";
import {
  failGeneration,
  feedbackFor,
  recordChampion,
  startRound,
  submitCandidate,
  submitMeasure,
  type AttemptRecord,
  type RoundState,
} from "./aee-round";
import type { EvolutionConfig } from "./config";
import { isLive, type PlaybookEntry } from "./playbook";
import { loadPlaybook } from "./playbook-store";
import { loadContract, loadSoul } from "./soul-store";
import { detectStagnation } from "./stagnation";
import { capacityReport } from "./sweep";
import { acceptedEmergencies, endRequest, isRequestTaken, takeRequest } from "./triggers";

/**
 * The AEE round orchestrator (seed 003 §12.5 run.rs), around the pure round of aee-round.ts. An
 * emergency evolution request on the AEE path (`legacy_soul_evolution = false`) becomes a round when
 * the employee's lock and a semaphore slot are free (the request already passed the cooldown when it
 * was accepted); the round holds both until it ends. Its steps, each one guarded write of the round
 * row with the jobs it submits:
 *
 *   champion_cases → champion_judge → generate → (Gate) → candidate_cases → judge → (commit gate)
 *                                        ↑____________ refused, attempts left ____________|
 *
 * then the commit (aee-commit.ts), or a wait for a person when `[evolution] require_approval`. The
 * Gate runs in the Worker with zero model cost before any case or judge job exists for the
 * candidate: a refused candidate never buys a judge call. Every job is owned by the round; its end
 * (completed, failed or dead) is recorded once, keyed by the job, and advances the round; the
 * `playbook` tick advances any round whose owner call was lost. All state is in D1, so a Worker
 * restart or a runner crash (its jobs fail or die, and are ended) only delays a round.
 */

export type StartOutcome =
  | { request_id: string; outcome: "started" | "skipped"; round_id: string }
  | { request_id: string; outcome: "waiting"; reason: "round_running" | "agent_locked" | "semaphore_full" }
  | { request_id: string; outcome: "failed"; reason: string }
  | { request_id: string; outcome: "legacy_path" | "taken" };

/** Accepted emergency requests on the AEE path become rounds, oldest first. */
export async function startRounds(env: Env, now: Date, limit = 20): Promise<StartOutcome[]> {
  const db = getDb(env.DB);
  const requests = await acceptedEmergencies(db, limit);
  const out: StartOutcome[] = [];
  for (const req of requests) out.push(await startRoundFor(env, db, req, now));
  return out;
}

async function failRequest(env: Env, db: Db, req: EvolutionRequestRow, reason: string, now: Date): Promise<StartOutcome> {
  try {
    await db.batch(batchOf([takeRequest(db, req.id)]));
  } catch {
    return { request_id: req.id, outcome: "taken" };
  }
  await endRequest(env, req.id, { status: "failed", reason }, now);
  return { request_id: req.id, outcome: "failed", reason };
}

async function startRoundFor(env: Env, db: Db, req: EvolutionRequestRow, now: Date): Promise<StartOutcome> {
  const employee = await findEmployee(db, req.agentId);
  if (!employee) return failRequest(env, db, req, "employee_gone", now);
  const cfg = await employeeEvolutionConfig(db, employee);
  // The legacy SOUL path (chapter 4) takes its own requests.
  if (cfg.legacy_soul_evolution) return { request_id: req.id, outcome: "legacy_path" };
  if (!cfg.gvu_enabled) return failRequest(env, db, req, "gvu_disabled", now);
  const running = await db
    .select({ id: aeeRounds.id })
    .from(aeeRounds)
    .where(and(eq(aeeRounds.agentId, req.agentId), eq(aeeRounds.status, "running")))
    .get();
  if (running) return { request_id: req.id, outcome: "waiting", reason: "round_running" };

  const lock = getAgentLock(env, req.agentId);
  const held = await lock.acquire({ holder: req.id, ttl_ms: ROUND_LOCK_MS, now: now.getTime() });
  if (!held.ok) return { request_id: req.id, outcome: "waiting", reason: "agent_locked" };
  const semaphore = getEvolutionSemaphore(env);
  const slot = await semaphore.acquire({ holder: req.id, limit: cfg.global_concurrency, ttl_ms: ROUND_LOCK_MS, now: now.getTime() });
  const letGo = () =>
    Promise.all([lock.release({ holder: req.id }), semaphore.release({ holder: req.id })]).catch((err: unknown) =>
      console.error(`aee: could not release ${req.id}`, err),
    );
  if (!slot.ok) {
    await lock.release({ holder: req.id });
    return { request_id: req.id, outcome: "waiting", reason: "semaphore_full" };
  }
  try {
    return await beginRound(env, db, req, employee, cfg, now);
  } catch (err) {
    await letGo();
    if (isRoundConflict(err) || isRequestTaken(err)) return { request_id: req.id, outcome: "taken" };
    throw err;
  }
}

async function beginRound(
  env: Env,
  db: Db,
  req: EvolutionRequestRow,
  employee: EmployeeRow,
  cfg: EvolutionConfig,
  now: Date,
): Promise<StartOutcome> {
  const suites = suitesOrThrow();
  const stored = await loadPlaybook(db, req.agentId);
  const entries = stored.playbook.entries;
  const all = allCaseRefs(suites);
  const history = await roundHistory(db, req.agentId);
  const seq = history.nextSeq;
  const cases = roundCases(entries, all, seq);
  const stagnation = detectStagnation(history.summaries);
  const roundId = newId("aer");
  const state = startRound({
    round_id: roundId,
    agent_id: req.agentId,
    round_seq: seq,
    playbook: stored.playbook,
    strategy: cfg.strategy,
    // The request's prediction error report is the mistake this round digests.
    material: { open_mistakes: req.context.trim() ? 1 : 0, innovation_seeds: uncoveredCases(entries, all).length },
    stagnant: stagnation.stagnant,
    all_cases: cases,
    now,
  });
  const plan = await planFor(db, employee, cases);
  const at = now.toISOString();
  const base = {
    id: roundId,
    agentId: req.agentId,
    roundSeq: seq,
    requestId: req.id,
    attempt: 0,
    state: state as unknown as Record<string, unknown>,
    context: req.context,
    plan: plan as unknown as Record<string, unknown>,
    version: 1,
    createdAt: at,
    updatedAt: at,
  };
  const common = { agent_id: req.agentId, round_id: roundId, round_seq: seq, request_id: req.id };
  if (state.phase === "skipped") {
    await db.batch(
      batchOf([
        takeRequest(db, req.id),
        db.insert(aeeRounds).values({ ...base, status: "skipped", step: "done", endReason: "no_material", endedAt: at }),
        appendEvent(
          db,
          { type: "evolution.round_skipped", subject: req.agentId, payload: { ...common, reason: "no_material", intent: state.intent } },
          now,
        ),
      ]),
    );
    await endRequest(env, req.id, { status: "done", reason: "no_material" }, now);
    return { request_id: req.id, outcome: "skipped", round_id: roundId };
  }
  const timeout = await caseTimeoutMs(db);
  const jobs = cases.flatMap(
    (ref) =>
      caseJob(db, { kind: "aee_round", id: roundId }, req.agentId, plan, suites, ref, "champion_case", 0, entries, timeout, now) ?? [],
  );
  await db.batch(
    batchOf([
      takeRequest(db, req.id),
      db.insert(aeeRounds).values({ ...base, status: "running", step: "champion_cases" }),
      ...jobs.flatMap((j) => j.statements),
      appendEvent(
        db,
        {
          type: "evolution.round_started",
          subject: req.agentId,
          payload: {
            ...common,
            intent: state.intent,
            cases,
            heldout: state.heldout,
            champion_fingerprint: state.champion_fingerprint,
            stagnant: stagnation.stagnant,
          },
        },
        now,
      ),
    ]),
  );
  await dispatchAll(env, jobs);
  return { request_id: req.id, outcome: "started", round_id: roundId };
}

/** Owner handler of `aee_round` jobs: the job's end is recorded once, then the round moves on if it can. */
export async function onAeeJobEnd(env: Env, end: JobEnd): Promise<void> {
  const now = (await loadClock(env)).now();
  await recordJobEnd(getDb(env.DB), end, now);
  await advanceRound(env, end.owner.id, now);
}

/** What a round's (or settle window's) job yielded, recorded once: a case verdict, or a model's answer. */
export async function recordJobEnd(
  db: Db,
  end: Pick<JobEnd, "job_id" | "status" | "result" | "error" | "reason">,
  now: Date,
): Promise<void> {
  const row = await db.select().from(aeeJobs).where(eq(aeeJobs.jobId, end.job_id)).get();
  if (!row || row.status !== "dispatched") return;
  let outcome: Record<string, unknown>;
  if (row.caseRef !== null) {
    const suites = suitesOrThrow();
    const scored = scoreCaseRun(findCase(suites, row.caseRef), {
      result: end.status === "completed" ? end.result : undefined,
      error: end.error,
    });
    outcome = {
      status: end.status,
      verdict: scored.verdict,
      detail: scored.detail,
      ...(scored.text !== undefined ? { text: scored.text.slice(0, 4_000) } : {}),
      ...(typeof end.result?.runtime === "string" ? { runtime: end.result.runtime } : {}),
      ...(end.status !== "completed" ? { error: end.error?.code ?? end.reason ?? end.status } : {}),
    };
  } else {
    const text = typeof end.result?.text === "string" ? end.result.text.slice(0, 16_000) : undefined;
    outcome = {
      status: end.status,
      ...(end.status === "completed"
        ? {
            result: {
              ...(text !== undefined ? { text } : {}),
              ...(typeof end.result?.runtime === "string" ? { runtime: end.result.runtime } : {}),
              ...(typeof end.result?.model === "string" ? { model: end.result.model } : {}),
            },
          }
        : {}),
      ...(end.error
        ? { error: { code: end.error.code, message: end.error.message.slice(0, 500) } }
        : end.status !== "completed"
          ? { error: { code: end.reason ?? end.status, message: "" } }
          : {}),
    };
  }
  await db
    .update(aeeJobs)
    .set({ status: "done", outcome, endedAt: now.toISOString() })
    .where(and(eq(aeeJobs.jobId, end.job_id), eq(aeeJobs.status, "dispatched")));
}

/** A model job's recorded end in the shape the readers take. */
function modelEnd(outcome: Record<string, unknown> | null) {
  const o = outcome ?? {};
  return {
    status: typeof o.status === "string" ? o.status : "failed",
    result: (o.result as Record<string, unknown> | undefined) ?? undefined,
    error: (o.error as { code: string; message: string } | undefined) ?? undefined,
  };
}

interface Ctx {
  env: Env;
  db: Db;
  row: AeeRoundRow;
  employee: EmployeeRow;
  cfg: EvolutionConfig;
  plan: RoundPlan;
  suites: Suite[];
  now: Date;
}

/**
 * Moves a running round on as far as its ended jobs allow. Idempotent and safe to run concurrently:
 * each step lands only on the round version it read, and a loser simply stops.
 */
export async function advanceRound(env: Env, roundId: string, now: Date): Promise<void> {
  const db = getDb(env.DB);
  for (let guard = 0; guard < 12; guard++) {
    const row = await db.select().from(aeeRounds).where(eq(aeeRounds.id, roundId)).get();
    if (!row || row.status !== "running") return;
    const employee = await findEmployee(db, row.agentId);
    if (!employee) {
      await finishAbandoned(env, db, row, { ...stateOf(row), phase: "abandoned" }, now, "employee_gone");
      return;
    }
    if (guard === 0 && row.requestId)
      await getAgentLock(env, row.agentId)
        .acquire({ holder: row.requestId, ttl_ms: ROUND_LOCK_MS, now: now.getTime() })
        .catch((err: unknown) => console.error(`aee: could not renew the lock of ${row.id}`, err));
    const ctx: Ctx = {
      env,
      db,
      row,
      employee,
      cfg: await employeeEvolutionConfig(db, employee),
      plan: planOf(row),
      suites: suitesOrThrow(),
      now,
    };
    let moved: boolean;
    try {
      moved = await STEPS[row.step](ctx);
    } catch (err) {
      if (isRoundConflict(err)) return; // another advance of this round landed first
      throw err;
    }
    if (!moved) return;
  }
}

type Step = (ctx: Ctx) => Promise<boolean>;

const STEPS: Record<AeeRoundRow["step"], Step> = {
  champion_cases: championCases,
  champion_judge: championJudge,
  generate,
  candidate_cases: candidateCases,
  judge,
  // Waits for a person (the tick polls the approval); nothing to advance here.
  approval: async () => false,
  done: async () => false,
};

/** Whether the round's judge can run: the offline runtime judges nothing (the judge is then absent, never 0). */
const judgeRuns = (plan: RoundPlan) => plan.model_work.runtime !== "offline";

async function championCases(ctx: Ctx): Promise<boolean> {
  const { rows, running } = await stepJobs(ctx.db, ctx.row.id, "champion_case", 0);
  if (running) return false;
  const results = caseResultsOf(rows);
  const contract = await loadContract(ctx.db, ctx.row.agentId);
  const base = await measure({ case_results: results, contract, candidate_texts: [], existing: [], context: ctx.row.context });
  const stored = await loadPlaybook(ctx.db, ctx.row.agentId);
  if (judgeRuns(ctx.plan) && !base.zeroed) {
    const job = modelJob(
      ctx.db,
      ctx.row,
      ctx.plan,
      "champion_judge",
      0,
      judgePrompt({
        employee_name: ctx.plan.employee_name,
        round_id: ctx.row.id,
        subject: "champion",
        context: ctx.row.context,
        entries: stored.playbook.entries,
        results,
      }),
      ctx.now,
    );
    await ctx.db.batch(
      batchOf([roundUpdate(ctx.db, ctx.row, { step: "champion_judge", champion: { results } }, ctx.now), ...job.statements]),
    );
    await dispatchAll(ctx.env, [job]);
    return true;
  }
  return championMeasured(ctx, results, base, { status: judgeRuns(ctx.plan) ? "not_run" : "offline_runtime" });
}

async function championJudge(ctx: Ctx): Promise<boolean> {
  const { rows, running } = await stepJobs(ctx.db, ctx.row.id, "champion_judge", 0);
  if (running) return false;
  const results = (ctx.row.champion?.results ?? []) as CaseResult[];
  const reading = rows[0] ? readJudge(modelEnd(rows[0].outcome)) : ({ ok: false, reason: "job_failed", detail: "no judge job" } as const);
  const contract = await loadContract(ctx.db, ctx.row.agentId);
  const vector = await measure(
    { case_results: results, contract, candidate_texts: [], existing: [], context: ctx.row.context },
    { judge: async () => (reading.ok ? reading.value.score : null) },
  );
  return championMeasured(ctx, results, vector, judgeRecord(reading));
}

function judgeRecord(reading: ModelReading<{ score: number; reasons?: string[] | undefined }>): Record<string, unknown> {
  return reading.ok
    ? { status: "scored", score: reading.value.score, reasons: reading.value.reasons ?? [] }
    : { status: reading.reason, detail: reading.detail };
}

async function championMeasured(ctx: Ctx, results: CaseResult[], vector: MeasureVector, judge: Record<string, unknown>): Promise<boolean> {
  const state = recordChampion(stateOf(ctx.row), vector);
  return nextGeneration(ctx, state, { champion: { results, vector, judge } as unknown as Record<string, unknown> }, []);
}

/** The generator's next attempt, with what the earlier attempts of the round were told. */
async function nextGeneration(ctx: Ctx, state: RoundState, set: Partial<AeeRoundRow>, extra: BatchItem<"sqlite">[]): Promise<boolean> {
  const stored = await loadPlaybook(ctx.db, ctx.row.agentId);
  const attempt = state.attempts.length + 1;
  const held = new Set(state.heldout);
  const champion = (set.champion ?? ctx.row.champion ?? {}) as { results?: CaseResult[] };
  const intent = state.intent;
  if (intent.kind !== "run") throw new Error(`round ${ctx.row.id} has no intent to run`);
  const prompt = generatorPrompt({
    employee_name: ctx.plan.employee_name,
    round_id: ctx.row.id,
    round_seq: ctx.row.roundSeq,
    attempt,
    intent,
    context: ctx.row.context,
    entries: stored.playbook.entries,
    cases: ctx.plan.cases.filter((c) => !held.has(c)).map((ref) => ({ ref, title: caseTitle(ctx.suites, ref) })),
    champion_results: (champion.results ?? []).filter((r) => !held.has(r.case_ref)),
    feedback: feedbackFor(state),
  });
  const job = modelJob(ctx.db, ctx.row, ctx.plan, "generator", attempt, prompt, ctx.now);
  await ctx.db.batch(
    batchOf([
      roundUpdate(
        ctx.db,
        ctx.row,
        { ...set, step: "generate", attempt, state: state as unknown as Record<string, unknown>, candidate: null },
        ctx.now,
      ),
      ...extra,
      ...job.statements,
    ]),
  );
  await dispatchAll(ctx.env, [job]);
  return true;
}

/** Telemetry of a refused attempt: its row per gate and its event (a dedup refusal is audited on its own too). */
function refusalStatements(ctx: Ctx, a: AttemptRecord, duplicate?: { entry_id: string; similarity: number }): BatchItem<"sqlite">[] {
  const payload = {
    agent_id: ctx.row.agentId,
    round_id: ctx.row.id,
    attempt: a.attempt,
    stage: a.stage,
    check: a.check,
    reason: a.reason,
    detail: a.detail.slice(0, 500),
  };
  return [
    ctx.db
      .insert(aeeRejections)
      .values({
        agentId: ctx.row.agentId,
        roundId: ctx.row.id,
        attempt: a.attempt,
        stage: a.stage,
        gate: a.check,
        reason: a.reason,
        detail: a.detail.slice(0, 1_000),
        at: ctx.now.toISOString(),
      })
      .onConflictDoNothing(),
    appendEvent(
      ctx.db,
      { type: "evolution.round_attempt_refused", subject: ctx.row.agentId, payload, dedupeKey: `aee:${ctx.row.id}:attempt:${a.attempt}` },
      ctx.now,
    ),
    ...(duplicate
      ? [
          appendEvent(
            ctx.db,
            {
              type: "playbook.dedup_refused",
              subject: ctx.row.agentId,
              payload: { ...payload, duplicate_of: duplicate.entry_id, similarity: duplicate.similarity },
            },
            ctx.now,
          ),
        ]
      : []),
  ];
}

/** After a refused attempt: the next generation, or the end of the round when the attempts are spent. */
async function afterRefusal(ctx: Ctx, state: RoundState, duplicate?: { entry_id: string; similarity: number }): Promise<boolean> {
  const last = state.attempts[state.attempts.length - 1]!;
  const telemetry = refusalStatements(ctx, last, duplicate);
  if (state.phase === "abandoned") {
    await finishAbandoned(ctx.env, ctx.db, ctx.row, state, ctx.now, state.end_reason ?? "attempts_exhausted", telemetry);
    return false;
  }
  return nextGeneration(ctx, state, {}, telemetry);
}

async function gateContext(ctx: Ctx): Promise<GateContext & { caseExists: (ref: string) => boolean }> {
  const [stored, contract, soul] = await Promise.all([
    loadPlaybook(ctx.db, ctx.row.agentId),
    loadContract(ctx.db, ctx.row.agentId),
    loadSoul(ctx.db, ctx.row.agentId),
  ]);
  return {
    now: ctx.now,
    caseExists: (ref) => findCase(ctx.suites, ref) !== undefined,
    playbook: stored.playbook,
    contract,
    ...(soul ? { persona: soul.content } : {}),
    caseText: (ref) => caseTextOf(ctx.suites, ref),
    // No prompt of this codebase plants a literal canary yet: G-Canary-Static then checks the directives alone.
    canaries: [],
    transcripts: recordedTranscripts(ctx.suites),
  };
}

async function generate(ctx: Ctx): Promise<boolean> {
  const attempt = ctx.row.attempt;
  const { rows, running } = await stepJobs(ctx.db, ctx.row.id, "generator", attempt);
  if (running) return false;
  const state = stateOf(ctx.row);
  const reading = rows[0]
    ? readGenerator(modelEnd(rows[0].outcome))
    : ({ ok: false, reason: "job_failed", detail: "no generator job" } as const);
  if (!reading.ok)
    return afterRefusal(ctx, failGeneration(state, reading.reason, reading.detail, { final: reading.reason === "offline_runtime" }));
  const gateCtx = await gateContext(ctx);
  const { state: next, gate } = submitCandidate(state, reading.value, gateCtx);
  if (gate === null) {
    await finishAbandoned(ctx.env, ctx.db, ctx.row, next, ctx.now, "champion_moved");
    return false;
  }
  if (!gate.pass) return afterRefusal(ctx, next, gate.duplicate);
  // The shadow playbook is measured by its cases: the round's own, and whatever the candidate links.
  const linked = gate.changes.filter((c) => c.op !== "retire").flatMap((c) => c.after.eval_cases);
  const refs = [...new Set([...ctx.plan.cases, ...linked])].sort();
  const timeout = await caseTimeoutMs(ctx.db);
  const jobs: NewRoundJob[] = refs.flatMap(
    (ref) =>
      caseJob(
        ctx.db,
        { kind: "aee_round", id: ctx.row.id },
        ctx.row.agentId,
        ctx.plan,
        ctx.suites,
        ref,
        "candidate_case",
        attempt,
        gate.shadow.entries,
        timeout,
        ctx.now,
      ) ?? [],
  );
  const candidate = {
    attempt,
    delta: reading.value,
    changes: gate.changes.map((c) => ({
      op: c.op,
      entry_id: c.entry_id,
      version: c.after.version,
      content: c.after.content,
      eval_cases: c.after.eval_cases,
    })),
    changed_ids: gate.changes.map((c) => c.entry_id),
    candidate_texts: gate.changes.filter((c) => c.op !== "retire").map((c) => c.after.content),
    advisories: gate.advisories,
    capacity: gate.capacity,
    gate_ran: gate.ran,
    shadow_live: gate.shadow.entries.filter(isLive),
  };
  await ctx.db.batch(
    batchOf([
      roundUpdate(
        ctx.db,
        ctx.row,
        {
          step: "candidate_cases",
          state: next as unknown as Record<string, unknown>,
          candidate: candidate as unknown as Record<string, unknown>,
        },
        ctx.now,
      ),
      ...jobs.flatMap((j) => j.statements),
      appendEvent(
        ctx.db,
        {
          type: "evolution.round_candidate_passed_gate",
          subject: ctx.row.agentId,
          payload: {
            agent_id: ctx.row.agentId,
            round_id: ctx.row.id,
            attempt,
            changes: candidate.changes.map((c) => ({ op: c.op, entry_id: c.entry_id })),
            advisories: gate.advisories,
            capacity: capacityReport(gate.shadow.entries),
          },
        },
        ctx.now,
      ),
    ]),
  );
  await dispatchAll(ctx.env, jobs);
  return true;
}

interface Candidate {
  attempt: number;
  delta: unknown;
  changed_ids: string[];
  candidate_texts: string[];
  shadow_live: PlaybookEntry[];
  results?: (CaseResult & { reply_head?: string })[];
}

async function candidateMeasureInput(ctx: Ctx, c: Candidate, results: CaseResult[]) {
  const [stored, contract] = await Promise.all([loadPlaybook(ctx.db, ctx.row.agentId), loadContract(ctx.db, ctx.row.agentId)]);
  const changed = new Set(c.changed_ids);
  return {
    case_results: results,
    contract,
    candidate_texts: c.candidate_texts,
    existing: stored.playbook.entries.filter((e) => isLive(e) && !changed.has(e.entry_id)),
    context: ctx.row.context,
  };
}

async function candidateCases(ctx: Ctx): Promise<boolean> {
  const c = ctx.row.candidate as unknown as Candidate;
  const { rows, running } = await stepJobs(ctx.db, ctx.row.id, "candidate_case", c.attempt);
  if (running) return false;
  const results = caseResultsOf(rows);
  const input = await candidateMeasureInput(ctx, c, results);
  const base = await measure(input);
  if (judgeRuns(ctx.plan) && !base.zeroed) {
    const job = modelJob(
      ctx.db,
      ctx.row,
      ctx.plan,
      "judge",
      c.attempt,
      judgePrompt({
        employee_name: ctx.plan.employee_name,
        round_id: ctx.row.id,
        subject: `candidate ${c.attempt}`,
        context: ctx.row.context,
        entries: c.shadow_live,
        results,
      }),
      ctx.now,
    );
    await ctx.db.batch(
      batchOf([
        roundUpdate(ctx.db, ctx.row, { step: "judge", candidate: { ...c, results } as unknown as Record<string, unknown> }, ctx.now),
        ...job.statements,
      ]),
    );
    await dispatchAll(ctx.env, [job]);
    return true;
  }
  return candidateMeasured(ctx, { ...c, results }, base, { status: base.zeroed ? "not_run" : "offline_runtime" });
}

async function judge(ctx: Ctx): Promise<boolean> {
  const c = ctx.row.candidate as unknown as Candidate;
  const { rows, running } = await stepJobs(ctx.db, ctx.row.id, "judge", c.attempt);
  if (running) return false;
  const results = c.results ?? [];
  const reading = rows[0] ? readJudge(modelEnd(rows[0].outcome)) : ({ ok: false, reason: "job_failed", detail: "no judge job" } as const);
  const vector = await measure(await candidateMeasureInput(ctx, c, results), {
    judge: async () => (reading.ok ? reading.value.score : null),
  });
  return candidateMeasured(ctx, c, vector, judgeRecord(reading));
}

/** The commit gate on a measured candidate: refused → the next attempt (or the end); accepted → the commit. */
async function candidateMeasured(ctx: Ctx, c: Candidate, vector: MeasureVector, judgeRec: Record<string, unknown>): Promise<boolean> {
  const history = await roundHistory(ctx.db, ctx.row.agentId);
  const { state, verdict } = submitMeasure(stateOf(ctx.row), vector, {
    band: ctx.cfg.noise_band,
    ...(history.ledger ? { ledger: history.ledger } : {}),
  });
  const measured = { ...c, vector, judge: judgeRec, verdict };
  if (!verdict.commit) {
    const row = { ...ctx.row, candidate: measured as unknown as Record<string, unknown> };
    return afterRefusal({ ...ctx, row }, state);
  }
  await commitAccepted(ctx.env, ctx.db, { ...ctx.row, candidate: measured as unknown as Record<string, unknown> }, state, ctx.cfg, ctx.now);
  return false;
}
