import { and, eq, inArray } from "drizzle-orm";
import { getDb, type Db } from "../db/client";
import { gvuRounds, type EmployeeRow, type EvolutionRequestRow, type GvuRoundRow, type GvuRoundStatus } from "../db/schema";
import { getAgentLock } from "../durable-objects/agent-lock-rpc";
import { getEvolutionSemaphore } from "../durable-objects/evolution-semaphore-rpc";
import type { Env } from "../env";
import { readSection } from "../lib/config";
import { appendEvent } from "../lib/events";
import { newId } from "../lib/ids";
import { answerOf } from "../jobs/model-answer";
import { modelWorkConfig } from "../jobs/model-work";
import type { JobEnd } from "../jobs/job-end";
import { JOB_LIMITS, jsonStringBytes, utf8Bytes } from "../jobs/limits";
import { utilityPayload } from "../jobs/payloads";
import { dispatchJob, prepareJob, type PreparedJob } from "../jobs/submit";
import { loadClock } from "../lib/clock";
import { findEmployee } from "../tasks/employees";
import { employeeEvolutionConfig, type EvolutionConfig } from "./config";
import type { Contract } from "./contract";
import { gvuPrecheck, onGeneration, startGvuLoop, type GvuLoopState } from "./gvu-loop";
import { versionSummaries } from "./gvu-metrics";
import { buildGeneratorPrompt, parseGeneratorOutput, type GvuCallHeader } from "./gvu-prompt";
import type { GeneratorOutput, TextGradient } from "./gvu-types";
import {
  buildJudgePrompt,
  parseJudgeReply,
  verifyAfterJudge,
  verifyBeforeJudge,
  type VerificationResult,
  type VerifyInput,
} from "./gvu-verify";
import { applyOrAskApproval } from "./gvu-apply";
import { findRound, finishRound, guardedBatch, roundStep } from "./gvu-round-store";
import { listSoulVersions, loadContract, loadSoul, type CurrentSoul } from "./soul-store";
import { promptTooLarge } from "./soul-consolidate";
import { consolidationDue } from "./soul-consolidation-run";
import { gvuMayWriteSoul } from "./soul-run";
import { acceptedEmergencies, endRequest, isRequestTaken, takeRequest } from "./triggers";

/**
 * The legacy GVU round (seed 003 §4.2; issue 23 item 4), run on `[evolution] legacy_soul_evolution =
 * true` with `gvu_enabled`: an accepted emergency evolution request becomes a round that holds the
 * employee's lock and a semaphore slot (holder: the request, so `endRequest` gives both back) and
 * runs at most `max_gvu_generations` generations of
 *
 *   generator job → L1 → L2 → judge job → L3 → L4
 *
 * the first refusal of a generation ending it with a TextGradient for the next. An approved
 * proposal is applied (gvu-apply.ts: the version row before the pointer, then a 24 h observation),
 * or waits for a manager with `require_approval`. The generator and judge are utility jobs owned by
 * the round (`gvu_round`); every step is one guarded write of the round row keyed by the job it
 * waited for, so a repeated owner call changes nothing and a Worker restart or a runner crash (its
 * job retried by the inbox, or ended failed/dead) only delays the round: a job that ended without a
 * usable answer spends its generation (an unreadable generator reply, a judge that never answered:
 * fail closed). The `gvu` tick starts rounds and re-delivers a job end whose owner call was lost.
 */

/** The lock and slot lease; renewed at every step, so only a round whose Worker vanished lets them lapse. */
export const GVU_LOCK_MS = 30 * 60_000;
export const MODEL_JOB_TIMEOUT_MS = 10 * 60_000;
const ACTIVE: readonly GvuRoundStatus[] = ["generating", "judging"];

export interface ModelSeat {
  runtime: EmployeeRow["runtime"];
  model?: string;
}

/** Generator and judge run where `model_work` says, else on the employee's own runtime and model (like the AEE round). */
async function seatFor(db: Db, employee: EmployeeRow): Promise<ModelSeat> {
  const work = await readSection(db, modelWorkConfig);
  return work.runtime
    ? { runtime: work.runtime, ...(work.model ? { model: work.model } : {}) }
    : { runtime: employee.runtime, model: employee.modelPreferred };
}

/**
 * A generator or judge job owned by the round; null when its prompt does not fit a job (64 KiB: a
 * SOUL near its 50 KB cap with a long trigger). The round then fails honestly rather than cutting
 * the SOUL it is asked about.
 */
function modelJob(db: Db, roundId: string, seat: ModelSeat, prompt: string, now: Date): PreparedJob | null {
  const payload = utilityPayload.safeParse({
    runtime: seat.runtime,
    ...(seat.model ? { model: seat.model } : {}),
    prompt,
    timeout_ms: MODEL_JOB_TIMEOUT_MS,
  });
  if (!payload.success) return null;
  return prepareJob(db, { kind: "utility", payload: payload.data, owner: { kind: "gvu_round", id: roundId } }, now);
}

/**
 * A prompt that does not fit a job, told apart by cause (issue 39): the SOUL past its consolidation
 * target (the `gvu` tick consolidates it, then retries the request) or the other inputs (the event
 * and the round's outcome tell the operator what to shorten; no consolidation is started for it).
 */
function tooLarge(prompt: string, soul: CurrentSoul) {
  return promptTooLarge({
    prompt_bytes: jsonStringBytes(prompt),
    soul_bytes: utf8Bytes(soul.content),
    soul_json_bytes: jsonStringBytes(soul.content),
    limit: JOB_LIMITS.promptBytes,
  });
}

export type GvuStartOutcome =
  | { request_id: string; outcome: "started" | "skipped"; round_id: string }
  | { request_id: string; outcome: "waiting"; reason: "round_running" | "agent_locked" | "semaphore_full" }
  | { request_id: string; outcome: "failed"; reason: string }
  | { request_id: string; outcome: "aee_path" | "taken" };

/** Accepted emergency requests of employees on the legacy path become GVU rounds, oldest first. */
export async function startGvuRounds(env: Env, now: Date, limit = 20): Promise<GvuStartOutcome[]> {
  const db = getDb(env.DB);
  const requests = await acceptedEmergencies(db, limit);
  const out: GvuStartOutcome[] = [];
  for (const req of requests) out.push(await startFor(env, db, req, now));
  return out;
}

async function startFor(env: Env, db: Db, req: EvolutionRequestRow, now: Date): Promise<GvuStartOutcome> {
  const employee = await findEmployee(db, req.agentId);
  // An unknown employee is the AEE orchestrator's to record (it takes every request not on the legacy path).
  if (!employee) return { request_id: req.id, outcome: "aee_path" };
  const cfg = await employeeEvolutionConfig(db, employee);
  if (!cfg.legacy_soul_evolution) return { request_id: req.id, outcome: "aee_path" };
  const active = await db
    .select({ id: gvuRounds.id, status: gvuRounds.status })
    .from(gvuRounds)
    .where(and(eq(gvuRounds.employeeId, req.agentId), inArray(gvuRounds.status, [...ACTIVE, "awaiting_approval"])))
    .get();
  if (active?.status === "generating" || active?.status === "judging")
    return { request_id: req.id, outcome: "waiting", reason: "round_running" };
  const soul = await loadSoul(db, req.agentId);
  if (!soul) return { request_id: req.id, outcome: "aee_path" };
  const head = (await listSoulVersions(db, req.agentId)).find((v) => v.version === soul.version);
  // The request already passed the cooldown when it was accepted (and set the next one): not checked again here.
  const pre = gvuPrecheck({
    gvu_enabled: cfg.gvu_enabled,
    legacy_soul_evolution: true,
    locked: false,
    observing: head?.status === "observing" || active?.status === "awaiting_approval",
    cooldown_until: null,
    now,
  });
  if (!pre.run) {
    const reason = active?.status === "awaiting_approval" && pre.outcome.reason === "observing" ? "awaiting_approval" : pre.outcome.reason;
    return skipRound(env, db, req, soul, cfg, reason, now);
  }
  // A SOUL at its cap cannot take an append (L1 soul_too_large, every generation): rather than spend
  // three generator calls on it again, the round waits for the consolidation the `gvu` tick starts.
  const atCap = await consolidationDue(db, req.agentId, soul, cfg);
  if (atCap) return skipRound(env, db, req, soul, cfg, "soul_at_cap", now);

  const lock = getAgentLock(env, req.agentId);
  const held = await lock.acquire({ holder: req.id, ttl_ms: GVU_LOCK_MS, now: now.getTime() });
  if (!held.ok) return { request_id: req.id, outcome: "waiting", reason: "agent_locked" };
  const semaphore = getEvolutionSemaphore(env);
  const slot = await semaphore.acquire({ holder: req.id, limit: cfg.global_concurrency, ttl_ms: GVU_LOCK_MS, now: now.getTime() });
  const letGo = () =>
    Promise.all([lock.release({ holder: req.id }), semaphore.release({ holder: req.id })]).catch((err: unknown) =>
      console.error(`gvu: could not release ${req.id}`, err),
    );
  if (!slot.ok) {
    await lock.release({ holder: req.id });
    return { request_id: req.id, outcome: "waiting", reason: "semaphore_full" };
  }
  try {
    return await beginRound(env, db, req, employee, soul, cfg, now);
  } catch (err) {
    await letGo();
    if (isRequestTaken(err)) return { request_id: req.id, outcome: "taken" };
    throw err;
  }
}

/** A request that gets no round after all: recorded as a round that ended at once (skipped, or failed before its first job). */
async function skipRound(
  env: Env,
  db: Db,
  req: EvolutionRequestRow,
  soul: CurrentSoul,
  cfg: EvolutionConfig,
  reason: string,
  now: Date,
  status: Extract<GvuRoundStatus, "skipped" | "failed"> = "skipped",
  more: Record<string, unknown> = {},
): Promise<GvuStartOutcome> {
  const roundId = newId("gvu");
  const at = now.toISOString();
  try {
    await db.batch([
      takeRequest(db, req.id),
      db.insert(gvuRounds).values({
        id: roundId,
        employeeId: req.agentId,
        requestId: req.id,
        status,
        baseVersion: soul.version,
        maxGenerations: cfg.max_gvu_generations,
        gradients: [],
        generations: [],
        triggerContext: req.context,
        outcome: { kind: status, reason, ...more },
        createdAt: at,
        updatedAt: at,
        endedAt: at,
      }),
      appendEvent(
        db,
        {
          type: `evolution.gvu_${status}`,
          subject: req.agentId,
          payload: { agent_id: req.agentId, request_id: req.id, round_id: roundId, reason, ...more },
        },
        now,
      ),
    ]);
  } catch (err) {
    if (isRequestTaken(err)) return { request_id: req.id, outcome: "taken" };
    throw err;
  }
  await endRequest(env, req.id, { status: status === "skipped" ? "done" : "failed", reason: `${status}_${reason}` }, now);
  return status === "skipped"
    ? { request_id: req.id, outcome: "skipped", round_id: roundId }
    : { request_id: req.id, outcome: "failed", reason };
}

interface RoundInputs {
  soul: CurrentSoul;
  contract: Contract;
  history: ReturnType<typeof versionSummaries>;
}

async function roundInputs(db: Db, employeeId: string): Promise<RoundInputs | null> {
  const [soul, contract, rows] = await Promise.all([
    loadSoul(db, employeeId),
    loadContract(db, employeeId),
    listSoulVersions(db, employeeId),
  ]);
  if (!soul) return null;
  return { soul, contract, history: versionSummaries(rows) };
}

function generatorPrompt(inputs: RoundInputs, context: string, gradients: readonly TextGradient[], header: GvuCallHeader): string {
  return buildGeneratorPrompt({
    soul: inputs.soul.content,
    trigger_context: context,
    history: inputs.history,
    gradients,
    contract: inputs.contract,
    header,
  });
}

async function beginRound(
  env: Env,
  db: Db,
  req: EvolutionRequestRow,
  employee: EmployeeRow,
  soul: CurrentSoul,
  cfg: EvolutionConfig,
  now: Date,
): Promise<GvuStartOutcome> {
  const inputs = await roundInputs(db, req.agentId);
  if (!inputs) throw new Error(`gvu: ${req.agentId} has no SOUL`);
  const roundId = newId("gvu");
  const loop = startGvuLoop(cfg.max_gvu_generations);
  const seat = await seatFor(db, employee);
  const prompt = generatorPrompt(inputs, req.context, [], { employee: employee.name, round_id: roundId, generation: 1 });
  const job = modelJob(db, roundId, seat, prompt, now);
  if (!job) {
    const { reason, ...why } = tooLarge(prompt, inputs.soul);
    return skipRound(env, db, req, soul, cfg, reason, now, "failed", why);
  }
  const at = now.toISOString();
  await db.batch([
    takeRequest(db, req.id),
    db.insert(gvuRounds).values({
      id: roundId,
      employeeId: req.agentId,
      requestId: req.id,
      status: "generating",
      baseVersion: soul.version,
      maxGenerations: loop.max_generations,
      attempts: 0,
      phase: "generate",
      pendingJobId: job.jobId,
      gradients: [],
      generations: [],
      triggerContext: req.context,
      createdAt: at,
      updatedAt: at,
    }),
    ...job.statements,
    appendEvent(
      db,
      {
        type: "evolution.gvu_started",
        subject: req.agentId,
        payload: {
          agent_id: req.agentId,
          request_id: req.id,
          round_id: roundId,
          base_version: soul.version,
          max_generations: loop.max_generations,
          job_id: job.jobId,
          runtime: seat.runtime,
        },
      },
      now,
    ),
  ]);
  await dispatchOrLog(env, job);
  return { request_id: req.id, outcome: "started", round_id: roundId };
}

/** A job the queue refused stays `queued` in D1: the reconciler re-dispatches it, and the round waits for it. */
async function dispatchOrLog(env: Env, job: PreparedJob) {
  try {
    await dispatchJob(env, job.message);
  } catch (err) {
    console.error(`gvu: job ${job.jobId} could not be queued now; the reconciler will`, err);
  }
}

function loopOf(round: GvuRoundRow): GvuLoopState {
  return {
    max_generations: round.maxGenerations,
    attempts: round.attempts,
    gradients: round.gradients as unknown as TextGradient[],
    outcome: null,
  };
}

/** Owner handler of `gvu_round` jobs: the generation (or its judge) the round waited for ended. */
export async function onGvuJobEnd(env: Env, end: JobEnd): Promise<void> {
  const now = (await loadClock(env)).now();
  await advanceRound(env, end, now);
}

export async function advanceRound(env: Env, end: JobEnd, now: Date): Promise<void> {
  const db = getDb(env.DB);
  const round = await findRound(db, end.owner.id);
  if (!round || round.pendingJobId !== end.job_id || !ACTIVE.includes(round.status)) return;
  const employee = await findEmployee(db, round.employeeId);
  const inputs = await roundInputs(db, round.employeeId);
  const cfg = employee ? await employeeEvolutionConfig(db, employee) : null;
  if (cfg) {
    // Still working: the lease on the lock and slot runs on.
    await Promise.all([
      getAgentLock(env, round.employeeId).acquire({ holder: round.requestId, ttl_ms: GVU_LOCK_MS, now: now.getTime() }),
      getEvolutionSemaphore(env).acquire({
        holder: round.requestId,
        limit: cfg.global_concurrency,
        ttl_ms: GVU_LOCK_MS,
        now: now.getTime(),
      }),
    ]).catch((err: unknown) => console.error(`gvu: could not renew ${round.requestId}`, err));
  }
  if (!employee || !inputs || !cfg)
    return finishRound(env, db, round, end.job_id, "failed", { kind: "failed", reason: "employee_gone" }, now);
  // The employee left the legacy path mid-round (`legacy_soul_evolution` switched off): its SOUL is
  // read-only again (seed §12.2), so the round stops before spending another model call.
  if (!gvuMayWriteSoul(cfg))
    return finishRound(env, db, round, end.job_id, "discarded", { kind: "discarded", reason: "legacy_path_off" }, now);
  // The SOUL moved under the round (an operator's edit): its proposals were made for a SOUL that is gone.
  if (inputs.soul.version !== round.baseVersion)
    return finishRound(
      env,
      db,
      round,
      end.job_id,
      "discarded",
      { kind: "discarded", reason: "soul_changed", current_version: inputs.soul.version },
      now,
    );

  const answer = end.status === "completed" ? answerOf(end.result) : null;
  // The offline runtime answers with labelled text: never a proposal or a verdict.
  const reply = answer && !answer.offline ? answer.text : null;
  const why = end.status !== "completed" ? `job_${end.status}` : answer?.offline ? "offline_runtime" : null;
  const loop = loopOf(round);
  const generations = [...(round.generations ?? [])];

  let result: VerificationResult | "unparseable";
  let proposal: GeneratorOutput | null = null;
  if (round.phase === "judge") {
    proposal = round.proposal as unknown as GeneratorOutput;
    const input: VerifyInput = { current_soul: inputs.soul.content, proposal, contract: inputs.contract, versions: inputs.history };
    result = verifyAfterJudge(input, reply);
    const judged = parseJudgeReply(reply);
    generations.push({
      attempt: loop.attempts + 1,
      proposal: proposal.proposed_changes,
      judge: judged.ok
        ? { approved: judged.approved, score: judged.score, feedback: judged.feedback }
        : { unparseable: true, ...(why ? { why } : {}) },
      ...(result.approved
        ? { verdict: "approved", confidence: result.confidence }
        : { verdict: "rejected", layer: result.layer, reason: result.reason, gradient: result.gradient }),
      job_id: end.job_id,
    });
  } else {
    const parsed = reply === null ? null : parseGeneratorOutput(reply);
    if (!parsed || !parsed.ok) {
      result = "unparseable";
      generations.push({
        attempt: loop.attempts + 1,
        verdict: "rejected",
        layer: "generator",
        reason: why ?? "unparseable",
        job_id: end.job_id,
      });
    } else {
      proposal = parsed.output;
      const input: VerifyInput = { current_soul: inputs.soul.content, proposal, contract: inputs.contract, versions: inputs.history };
      const before = verifyBeforeJudge(input);
      if (before.status === "needs_judge") {
        // L1 and L2 passed: the judge (L3) is asked; nothing else changes until it answers.
        const seat = await seatFor(db, employee);
        const prompt = buildJudgePrompt({
          ...input,
          header: { employee: employee.name, round_id: round.id, generation: loop.attempts + 1 },
        });
        const job = modelJob(db, round.id, seat, prompt, now);
        if (!job) return finishRound(env, db, round, end.job_id, "failed", { kind: "failed", ...tooLarge(prompt, inputs.soul) }, now);
        const ok = await guardedBatch(db, [
          roundStep(
            db,
            round.id,
            end.job_id,
            "judging",
            { phase: "judge", pendingJobId: job.jobId, proposal: proposal as unknown as Record<string, unknown> },
            now,
          ),
          ...job.statements,
          appendEvent(
            db,
            {
              type: "evolution.gvu_judge_requested",
              subject: round.employeeId,
              payload: { agent_id: round.employeeId, round_id: round.id, attempt: loop.attempts + 1, job_id: job.jobId },
            },
            now,
          ),
        ]);
        if (ok) await dispatchOrLog(env, job);
        return;
      }
      result = before.result;
      const r = before.result as Extract<VerificationResult, { approved: false }>;
      generations.push({
        attempt: loop.attempts + 1,
        proposal: proposal.proposed_changes,
        verdict: "rejected",
        layer: r.layer,
        reason: r.reason,
        gradient: r.gradient,
        job_id: end.job_id,
      });
    }
  }

  const next = onGeneration(loop, result);
  const generationEvent = appendEvent(
    db,
    {
      type: "evolution.gvu_generation",
      subject: round.employeeId,
      payload: { agent_id: round.employeeId, round_id: round.id, ...generations[generations.length - 1] },
    },
    now,
  );
  if (next.outcome?.kind === "applied" && proposal && result !== "unparseable" && result.approved) {
    await applyOrAskApproval(
      env,
      db,
      {
        round,
        waitedFor: end.job_id,
        proposal,
        verification: result,
        generations,
        attempts: next.attempts,
        inputs,
        employee,
        extra: [generationEvent],
      },
      now,
    );
    return;
  }
  if (next.outcome?.kind === "abandoned") {
    await finishRound(env, db, round, end.job_id, "abandoned", { kind: "abandoned", last_gradient: next.outcome.last_gradient }, now, {
      attempts: next.attempts,
      gradients: next.gradients as unknown as Record<string, unknown>[],
      generations,
      extra: [generationEvent],
    });
    return;
  }
  // Refused, attempts left: the next generation, with every refusal so far as TextGrad feedback.
  const seat = await seatFor(db, employee);
  const header = { employee: employee.name, round_id: round.id, generation: next.attempts + 1 };
  const prompt = generatorPrompt(inputs, round.triggerContext, next.gradients, header);
  const job = modelJob(db, round.id, seat, prompt, now);
  if (!job)
    return finishRound(env, db, round, end.job_id, "failed", { kind: "failed", ...tooLarge(prompt, inputs.soul) }, now, {
      attempts: next.attempts,
      gradients: next.gradients as unknown as Record<string, unknown>[],
      generations,
      extra: [generationEvent],
    });
  const ok = await guardedBatch(db, [
    roundStep(
      db,
      round.id,
      end.job_id,
      "generating",
      {
        phase: "generate",
        pendingJobId: job.jobId,
        attempts: next.attempts,
        gradients: next.gradients as unknown as Record<string, unknown>[],
        generations,
        proposal: null,
      },
      now,
    ),
    ...job.statements,
    generationEvent,
  ]);
  if (ok) await dispatchOrLog(env, job);
}
