import { and, asc, eq, inArray, lt, sql } from "drizzle-orm";
import { getDb, type Db } from "../db/client";
import { events, gvuRounds, jobs, soulHeads, soulVersions } from "../db/schema";
import { getAgentLock } from "../durable-objects/agent-lock-rpc";
import { getEvolutionSemaphore } from "../durable-objects/evolution-semaphore-rpc";
import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import { appendEvent } from "../lib/events";
import { newId } from "../lib/ids";
import type { JobEnd } from "../jobs/job-end";
import { answerOf } from "../jobs/model-answer";
import { modelWorkConfig } from "../jobs/model-work";
import { utf8Bytes } from "../jobs/limits";
import { utilityPayload } from "../jobs/payloads";
import { dispatchJob, prepareJob } from "../jobs/submit";
import { brokerAvailability } from "../approvals/channels";
import { readSection } from "../lib/config";
import { findEmployee } from "../tasks/employees";
import { employeeEvolutionConfig, type EvolutionConfig } from "./config";
import {
  buildConsolidationPrompt,
  checkConsolidation,
  consolidationNeed,
  CONSOLIDATE_TARGET_BYTES,
  type ConsolidationNeed,
  type EndedRound,
} from "./soul-consolidate";
import {
  deniedFor,
  holderOf,
  openConsolidationApprovals,
  requestConsolidationApproval,
  writeConsolidation,
} from "./soul-consolidation-apply";
import { gvuMayWriteSoul } from "./soul-run";
import { findSoulVersion, loadContract, loadSoul, MAX_SOUL_BYTES, type CurrentSoul } from "./soul-store";
import { isStateConflict, loadEvolutionState, saveEvolutionState } from "./state";

/**
 * The consolidate path (seed 003 v3 "capデッドロック解除", WP0.2): a SOUL that needs consolidating
 * (soul-consolidate.ts) gets one utility job owned by `soul_consolidation` (id `<employee>@v<version>`),
 * started by the `gvu` tick when the employee's evolution cooldown has run out. It shares only that
 * cooldown with the evolution rounds (seed §12: "両者は同じcooldownのみを共有する"): starting one sets
 * `cooldown_until`, so an emergency trigger meanwhile is refused `cooldown`, and a cooldown a trigger
 * set holds the consolidation back. It holds the employee's lock and a semaphore slot while its job
 * runs. The job's end applies the checked result as a new SOUL version (`source: consolidation`) in
 * one batch guarded by the head still being the version it rewrote, or records why not; either way
 * the SOUL is untouched until a result passed every check, and a refused one is tried again only on
 * the next cooldown. Under `require_approval` the checked result is a `soul_consolidation` approval
 * instead, applied by the `gvu` tick once a person approved it (soul-consolidation-apply.ts).
 */

export const CONSOLIDATION_OWNER = "soul_consolidation" as const;
export const CONSOLIDATION_LEASE_MS = 30 * 60_000;
const JOB_TIMEOUT_MS = 10 * 60_000;
const OUTCOME_EVENTS = { failed: "evolution.soul_consolidation_failed" } as const;

const ownerId = (employeeId: string, version: number) => `${employeeId}@v${version}`;
const outcomeKey = (jobId: string) => `soul_consolidation:${jobId}`;

export function parseOwnerId(id: string): { employeeId: string; version: number } | null {
  const at = id.lastIndexOf("@v");
  const version = Number(id.slice(at + 2));
  if (at <= 0 || !Number.isInteger(version) || version < 1) return null;
  return { employeeId: id.slice(0, at), version };
}

/** Legacy rounds that ended on `version` without applying (abandoned, failed): the evidence of a SOUL at its cap. */
async function endedRoundsOn(db: Db, employeeId: string, version: number): Promise<EndedRound[]> {
  const rows = await db
    .select({ status: gvuRounds.status, generations: gvuRounds.generations, outcome: gvuRounds.outcome })
    .from(gvuRounds)
    .where(
      and(eq(gvuRounds.employeeId, employeeId), eq(gvuRounds.baseVersion, version), inArray(gvuRounds.status, ["abandoned", "failed"])),
    )
    .limit(20)
    .all();
  return rows.map((r) => ({ status: r.status, generations: r.generations ?? [], outcome: r.outcome ?? null }));
}

/** Whether this employee's SOUL needs consolidating now (gvu_enabled covers every evolution path, this one too). */
export async function consolidationDue(
  db: Db,
  employeeId: string,
  soul: CurrentSoul,
  cfg: Pick<EvolutionConfig, "gvu_enabled" | "legacy_soul_evolution" | "can_modify_own_soul">,
): Promise<ConsolidationNeed | null> {
  if (!cfg.gvu_enabled) return null;
  const soulBytes = utf8Bytes(soul.content);
  if (soulBytes <= CONSOLIDATE_TARGET_BYTES) return null;
  const appends = gvuMayWriteSoul(cfg);
  return consolidationNeed({
    soul_bytes: soulBytes,
    appends,
    rounds_on_version: appends ? await endedRoundsOn(db, employeeId, soul.version) : [],
  });
}

export type ConsolidationOutcome =
  | { employee_id: string; outcome: "started"; job_id: string; need: ConsolidationNeed }
  | {
      employee_id: string;
      outcome: "waiting";
      reason: "running" | "round_running" | "observing" | "awaiting_approval" | "cooldown" | "agent_locked" | "semaphore_full" | "taken";
    }
  | { employee_id: string; outcome: "not_needed" }
  | { employee_id: string; outcome: "blocked"; reason: "denied" | "no_channel" }
  | { employee_id: string; outcome: "failed"; reason: "prompt_too_large" };

/** Employees whose current SOUL is past the consolidation target (the only ones that can need it), `limit` at a time. */
async function candidates(db: Db, limit: number): Promise<string[]> {
  const rows = await db
    .select({ employeeId: soulHeads.employeeId })
    .from(soulHeads)
    .innerJoin(soulVersions, and(eq(soulVersions.employeeId, soulHeads.employeeId), eq(soulVersions.version, soulHeads.version)))
    .where(sql`length(CAST(${soulVersions.content} AS BLOB)) > ${CONSOLIDATE_TARGET_BYTES}`)
    .orderBy(asc(soulHeads.employeeId))
    .limit(limit)
    .all();
  return rows.map((r) => r.employeeId);
}

/** Part of the `gvu` tick: start a consolidation for each SOUL that needs one, and settle any job end whose owner call was lost. */
export async function consolidateSouls(env: Env, now: Date, limit = 20): Promise<ConsolidationOutcome[]> {
  const db = getDb(env.DB);
  await recoverLostEnds(env, db, now);
  const out: ConsolidationOutcome[] = [];
  for (const id of await candidates(db, limit)) out.push(await startFor(env, db, id, now));
  return out;
}

async function activeJob(db: Db, employeeId: string): Promise<boolean> {
  const prefix = `${employeeId}@v`;
  const row = await db
    .select({ id: jobs.id })
    .from(jobs)
    .where(
      and(
        eq(jobs.ownerKind, CONSOLIDATION_OWNER),
        inArray(jobs.status, ["queued", "leased"]),
        sql`substr(${jobs.ownerId}, 1, ${prefix.length}) = ${prefix}`,
      ),
    )
    .get();
  return row !== undefined;
}

async function startFor(env: Env, db: Db, employeeId: string, now: Date): Promise<ConsolidationOutcome> {
  const employee = await findEmployee(db, employeeId);
  const soul = await loadSoul(db, employeeId);
  if (!employee || !soul) return { employee_id: employeeId, outcome: "not_needed" };
  const cfg = await employeeEvolutionConfig(db, employee);
  const need = await consolidationDue(db, employeeId, soul, cfg);
  if (!need) return { employee_id: employeeId, outcome: "not_needed" };
  const waiting = (reason: Extract<ConsolidationOutcome, { outcome: "waiting" }>["reason"]) =>
    ({ employee_id: employeeId, outcome: "waiting", reason }) as const;
  // One at a time per employee: a repeated tick finds the job still queued or leased.
  if (await activeJob(db, employeeId)) return waiting("running");
  const round = await db
    .select({ id: gvuRounds.id })
    .from(gvuRounds)
    .where(and(eq(gvuRounds.employeeId, employeeId), inArray(gvuRounds.status, ["generating", "judging", "awaiting_approval"])))
    .get();
  if (round) return waiting("round_running");
  // A version under observation is judged first: rewriting it would leave nothing to judge.
  if ((await findSoulVersion(db, employeeId, soul.version))?.status === "observing") return waiting("observing");
  // One request at a time: a result waiting for (or just given) a person's decision is resolved first.
  if ((await openConsolidationApprovals(db, employeeId, 1)).length > 0) return waiting("awaiting_approval");
  if (cfg.require_approval) {
    // Governed: the result will be a `soul_consolidation` approval. Not started (no model call spent)
    // when a person already denied consolidating this very version, or when nobody could decide.
    const denied = await deniedFor(db, employeeId, soul.version);
    const reachable = denied ? true : (await brokerAvailability(env, db, now)).available;
    const reason = denied ? ("denied" as const) : reachable ? null : ("no_channel" as const);
    if (reason) {
      await db.batch([
        appendEvent(
          db,
          {
            type: "evolution.soul_consolidation_blocked",
            subject: employeeId,
            payload: { agent_id: employeeId, version: soul.version, need, reason, ...(denied ? { approval_id: denied } : {}) },
            dedupeKey: `soul_consolidation_blocked:${employeeId}:${soul.version}:${reason}`,
          },
          now,
        ),
      ]);
      return { employee_id: employeeId, outcome: "blocked", reason };
    }
  }
  const state = await loadEvolutionState(db, employeeId);
  if (state.cooldown_until && Date.parse(state.cooldown_until) > now.getTime()) return waiting("cooldown");

  const jobId = newId("job");
  const holder = holderOf(jobId);
  const lock = getAgentLock(env, employeeId);
  const held = await lock.acquire({ holder, ttl_ms: CONSOLIDATION_LEASE_MS, now: now.getTime() });
  if (!held.ok) return waiting("agent_locked");
  const semaphore = getEvolutionSemaphore(env);
  const slot = await semaphore.acquire({ holder, limit: cfg.global_concurrency, ttl_ms: CONSOLIDATION_LEASE_MS, now: now.getTime() });
  const letGo = () => release(env, employeeId, holder);
  if (!slot.ok) {
    await lock.release({ holder });
    return waiting("semaphore_full");
  }
  try {
    const [work, contract] = await Promise.all([readSection(db, modelWorkConfig), loadContract(db, employeeId)]);
    const payload = utilityPayload.safeParse({
      runtime: work.runtime ?? employee.runtime,
      ...(work.runtime ? (work.model ? { model: work.model } : {}) : { model: employee.modelPreferred }),
      prompt: buildConsolidationPrompt({ employee: employee.name, version: soul.version, soul: soul.content, contract }),
      timeout_ms: JOB_TIMEOUT_MS,
    });
    if (!payload.success) {
      // A SOUL far over its cap does not fit a prompt (64 KiB): said once per version; the operator must shorten it.
      await letGo();
      await db.batch([
        appendEvent(
          db,
          {
            type: OUTCOME_EVENTS.failed,
            subject: employeeId,
            payload: { agent_id: employeeId, base_version: soul.version, need, reason: "prompt_too_large", bytes: utf8Bytes(soul.content) },
            dedupeKey: `soul_consolidation_prompt:${employeeId}:${soul.version}`,
          },
          now,
        ),
      ]);
      return { employee_id: employeeId, outcome: "failed", reason: "prompt_too_large" };
    }
    const job = prepareJob(
      db,
      { kind: "utility", payload: payload.data, owner: { kind: CONSOLIDATION_OWNER, id: ownerId(employeeId, soul.version) } },
      now,
      jobId,
    );
    const cooldownUntil = new Date(now.getTime() + cfg.gvu_cooldown_minutes * 60_000).toISOString();
    try {
      await db.batch([
        // The shared cooldown: set here as a trigger sets it, and only it (no last_trigger_*: this is not a trigger).
        saveEvolutionState(db, state, { ...state, cooldown_until: cooldownUntil }, now),
        ...job.statements,
        appendEvent(
          db,
          {
            type: "evolution.soul_consolidation_started",
            subject: employeeId,
            payload: {
              agent_id: employeeId,
              job_id: jobId,
              base_version: soul.version,
              need,
              bytes: utf8Bytes(soul.content),
              target_bytes: CONSOLIDATE_TARGET_BYTES,
              cooldown_until: cooldownUntil,
              runtime: payload.data.runtime,
              ...(cfg.require_approval ? { requires_approval: true } : {}),
            },
          },
          now,
        ),
      ]);
    } catch (err) {
      await letGo();
      // Someone else saved the evolution state first (a trigger, another tick): try again next tick.
      if (isStateConflict(String((err as Error)?.message ?? err) + String((err as { cause?: unknown })?.cause ?? "")))
        return waiting("taken");
      throw err;
    }
    try {
      await dispatchJob(env, job.message);
    } catch (err) {
      console.error(`soul consolidation: job ${jobId} could not be queued now; the reconciler will`, err);
    }
    return { employee_id: employeeId, outcome: "started", job_id: jobId, need };
  } catch (err) {
    await letGo();
    throw err;
  }
}

function release(env: Env, employeeId: string, holder: string) {
  return Promise.all([getAgentLock(env, employeeId).release({ holder }), getEvolutionSemaphore(env).release({ holder })]).catch(
    (err: unknown) => console.error(`soul consolidation: could not release ${holder}`, err),
  );
}

/** Owner handler of `soul_consolidation` jobs: apply the checked result, or record why not; then give back the lock and slot. */
export async function onConsolidationJobEnd(env: Env, end: JobEnd): Promise<void> {
  const now = (await loadClock(env)).now();
  await settleConsolidation(env, end, now);
}

export async function settleConsolidation(env: Env, end: JobEnd, now: Date): Promise<void> {
  const owner = parseOwnerId(end.owner.id);
  if (!owner) return;
  try {
    await settle(env, getDb(env.DB), owner, end, now);
  } finally {
    await release(env, owner.employeeId, holderOf(end.job_id));
  }
}

async function settle(env: Env, db: Db, owner: { employeeId: string; version: number }, end: JobEnd, now: Date): Promise<void> {
  const { employeeId, version: base } = owner;
  const fail = async (reason: string, detail?: string) => {
    const state = await loadEvolutionState(db, employeeId);
    // Keyed by the job like the success: a repeated owner call, or one after the success, writes nothing.
    await db.batch([
      appendEvent(
        db,
        {
          type: OUTCOME_EVENTS.failed,
          subject: employeeId,
          payload: {
            agent_id: employeeId,
            job_id: end.job_id,
            base_version: base,
            reason,
            ...(detail ? { detail } : {}),
            retry_after: state.cooldown_until,
          },
          dedupeKey: outcomeKey(end.job_id),
        },
        now,
      ),
    ]);
  };
  const employee = await findEmployee(db, employeeId);
  const soul = await loadSoul(db, employeeId);
  if (!employee || !soul) return fail("employee_gone");
  if (soul.version !== base) return fail("soul_changed", `the SOUL is at version ${soul.version}`);
  const cfg = await employeeEvolutionConfig(db, employee);
  if (!cfg.gvu_enabled) return fail("gvu_disabled");
  // Off the legacy path the engine rewrites only a SOUL over its cap (seed §12: AEE never writes SOUL.md).
  if (!gvuMayWriteSoul(cfg) && utf8Bytes(soul.content) <= MAX_SOUL_BYTES) return fail("legacy_path_off");
  const answer = end.status === "completed" ? answerOf(end.result) : null;
  if (end.status !== "completed") return fail(`job_${end.status}`, end.error?.code);
  // The offline runtime answers with labelled text: never a SOUL.
  if (!answer || answer.offline) return fail("offline_runtime");
  const check = checkConsolidation({ original: soul.content, reply: answer.text, contract: await loadContract(db, employeeId) });
  if (!check.ok) return fail(check.reason, check.detail);

  if (cfg.require_approval)
    // Governed: a person sees the exact change and decides; the `gvu` tick applies it (soul-consolidation-apply.ts).
    return requestConsolidationApproval(
      env,
      db,
      { employeeId, jobId: end.job_id, base: soul, check, outcomeKey: outcomeKey(end.job_id) },
      now,
    );
  const applied = await writeConsolidation(
    db,
    { employeeId, base: soul, check, jobId: end.job_id, cfg, dedupeKey: outcomeKey(end.job_id) },
    now,
  );
  if (applied !== "applied") return fail("soul_changed", "the head moved while the result was applied");
}

/** A consolidation job that ended without its owner call (a Worker that stopped): settled from its row. */
async function recoverLostEnds(env: Env, db: Db, now: Date, graceMs = 2 * 60_000): Promise<void> {
  const stale = new Date(now.getTime() - graceMs).toISOString();
  const rows = await db
    .select()
    .from(jobs)
    .where(
      and(
        eq(jobs.ownerKind, CONSOLIDATION_OWNER),
        inArray(jobs.status, ["completed", "failed", "dead"]),
        lt(jobs.updatedAt, stale),
        sql`NOT EXISTS (SELECT 1 FROM ${events} WHERE ${events.dedupeKey} = 'soul_consolidation:' || ${jobs.id})`,
      ),
    )
    .limit(10)
    .all();
  for (const job of rows) {
    await settleConsolidation(
      env,
      {
        job_id: job.id,
        kind: job.kind,
        owner: { kind: CONSOLIDATION_OWNER, id: job.ownerId },
        status: job.status as JobEnd["status"],
        attempt: job.attempt,
        at: job.finishedAt ?? job.updatedAt,
        ...(job.result ? { result: job.result } : {}),
        ...(job.error ? { error: job.error } : {}),
        reason: "recovered_by_tick",
      },
      now,
    );
  }
}
