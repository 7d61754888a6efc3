import { and, asc, eq, gt, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { batchable } from "../db/raw";
import { guarded } from "../db/guard";
import { councilDialogs, councilSessions, councilVotes, nodes } from "../db/schema";
import type { Env } from "../env";
import { dispatchJob } from "../jobs/submit";
import type { InsertedNodeEvent } from "../nodes/events";
import { enqueuePushes } from "../nodes/webhook";
import { readSection } from "../lib/config";
import { reputationConfig } from "../nodes/reputation-config";
import { projectsConfig } from "../projects/config";
import { startDecomposition } from "../projects/decompose";
import { advanceDispatch } from "../projects/dispatch";
import { planEffects, swarmTaskIdFor } from "./effects";
import { nextCheckAt } from "./machine";
import type { Effect } from "./machine-types";
import type { CouncilRules } from "./rules";
import { COUNCIL_RULES, HOUR } from "./rules";
import type { Candidate } from "./selection";
import type { DialogRecord, SessionState, VoteRecord } from "./session";

export interface StoredSession {
  state: SessionState;
  version: number;
}

export async function loadSession(db: Db, sessionId: string): Promise<StoredSession | null> {
  const row = await db
    .select({ state: councilSessions.state, version: councilSessions.version })
    .from(councilSessions)
    .where(eq(councilSessions.id, sessionId))
    .get();
  return row ? { state: row.state as unknown as SessionState, version: row.version } : null;
}

export function loadDialogs(db: Db, sessionId: string) {
  return db.select().from(councilDialogs).where(eq(councilDialogs.sessionId, sessionId)).orderBy(asc(councilDialogs.seq)).all();
}

/** The dialogs not yet folded into the state (`seq` after its `dialog_count`), oldest first. */
export function loadDialogsAfter(db: Db, sessionId: string, seq: number) {
  return db
    .select()
    .from(councilDialogs)
    .where(and(eq(councilDialogs.sessionId, sessionId), gt(councilDialogs.seq, seq)))
    .orderBy(asc(councilDialogs.seq))
    .all();
}

export function loadVotes(db: Db, sessionId: string) {
  return db
    .select()
    .from(councilVotes)
    .where(eq(councilVotes.sessionId, sessionId))
    .orderBy(asc(councilVotes.createdAt), asc(councilVotes.nodeId))
    .all();
}

export function toDialogRecord(r: typeof councilDialogs.$inferSelect): DialogRecord {
  return {
    id: r.id,
    seq: r.seq,
    node_id: r.nodeId,
    role: r.role as DialogRecord["role"],
    phase: r.phase as DialogRecord["phase"],
    dialog_type: r.dialogType as DialogRecord["dialog_type"],
    content: r.content,
    reply_to: r.replyTo,
    amendment_type: r.amendmentType as DialogRecord["amendment_type"],
    amendment_target: r.amendmentTarget,
    amendment_content: r.amendmentContent,
    created_at: r.createdAt,
  };
}

export function toVoteRecord(r: typeof councilVotes.$inferSelect): VoteRecord {
  return {
    node_id: r.nodeId,
    dialog_id: r.dialogId,
    kind: r.kind,
    vote: r.vote,
    weight: r.weight,
    confidence: r.confidence,
    conditions: r.conditions,
    reasoning: r.reasoning,
    proposal_hash: r.proposalHash,
    created_at: r.createdAt,
  };
}

/** Nodes that could deliberate now (the SQL side of `memberIneligibility`, suspension included; the pure check runs again). */
export async function loadMemberPool(db: Db, now: Date, rules: CouncilRules = COUNCIL_RULES): Promise<Candidate[]> {
  const since = new Date(now.getTime() - rules.heartbeatWindowHours * HOUR).toISOString();
  const rows = await db
    .select()
    .from(nodes)
    .where(
      and(
        sql`${nodes.reputation} >= ${rules.memberMinReputation}`,
        sql`${nodes.modelTier} >= ${rules.memberMinTier}`,
        sql`${nodes.lastHeartbeatAt} >= ${since}`,
        sql`(${nodes.cooldownUntil} IS NULL OR ${nodes.cooldownUntil} <= ${now.toISOString()})`,
        sql`${nodes.suspendedAt} IS NULL`,
      ),
    )
    .all();
  return rows.map(toCandidate);
}

export function toCandidate(n: typeof nodes.$inferSelect): Candidate {
  return {
    node_id: n.id,
    reputation: n.reputation,
    model_tier: n.modelTier,
    last_heartbeat_at: n.lastHeartbeatAt,
    last_dialog_at: n.lastDialogAt,
    cooldown_until: n.cooldownUntil,
    suspended_at: n.suspendedAt,
  };
}

/**
 * The session row update, guarded by the version the caller loaded (a concurrent save aborts the
 * batch) and by the dialogs it saw: `seenSeq` is the last dialog folded into the state before this
 * save's own input, and a dialog written directly since then aborts it too, so no save (a phase
 * change, a replacement) ever rests on a trail it did not see (machine-dialog.ts).
 */
export function sessionUpdate(db: Db, state: SessionState, version: number, seenSeq: number, now: Date) {
  const unseen = sql`EXISTS (SELECT 1 FROM council_dialogs WHERE session_id = ${state.session_id} AND seq > ${seenSeq})`;
  return batchable(
    db,
    sql`
    UPDATE council_sessions SET
      version = ${guarded(sql`version = ${version} AND NOT ${unseen}`, version + 1)},
      phase = ${state.phase},
      state = ${JSON.stringify(state)},
      next_check_at = ${nextCheckAt(state)},
      updated_at = ${now.toISOString()}
    WHERE id = ${state.session_id}`,
  );
}

/**
 * Saves a transition: the guarded session row and every effect's statements in one batch; then
 * hands submitted jobs to the dispatch queue and node events to the push queue. Those two happen
 * after the commit: a refused job is caught by the session's deadline (template fallback), a
 * refused push leaves the event pending for heartbeats.
 */
export async function saveTransition(
  env: Env,
  db: Db,
  state: SessionState,
  version: number,
  seenSeq: number,
  effects: readonly Effect[],
  rules: CouncilRules,
  now: Date,
  head: BatchItem<"sqlite">[] = [],
) {
  // Reputation effects (a decision, a veto, a lapse) need the policy; nothing else reads it.
  const reputation = effects.some((e) => e.kind === "reputation") ? await readSection(db, reputationConfig) : undefined;
  const plan = planEffects(db, state, version + 1, effects, rules, now, reputation);
  const statements: BatchItem<"sqlite">[] = [...head, sessionUpdate(db, state, version, seenSeq, now), ...plan.statements];
  const results = await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  await afterCommit(
    env,
    plan.jobs,
    plan.notifyIndexes.map((i) => results[i + head.length + 1]),
  );
  // An approved project is decomposed at once; the projects tick is the backstop if this fails.
  if (state.project_id && effects.some((e) => e.kind === "project_status" && e.to === "approved")) {
    await startDecomposition(env, db, state.project_id, now).catch((err: unknown) =>
      console.error(`council: could not start the decomposition of ${state.project_id}; the projects tick will`, err),
    );
  }
  // An approved general proposal's task is offered to its first eligible node at once (seed 004's
  // auto-dispatch); the projects tick is the backstop and moves the offers on.
  if (state.kind === "general" && effects.some((e) => e.kind === "execute_decision")) {
    const taskId = swarmTaskIdFor(state.session_id);
    await readSection(db, projectsConfig)
      .then((config) => advanceDispatch(env, db, taskId, now, config))
      .catch((err: unknown) => console.error(`council: could not offer swarm task ${taskId}; the projects tick will`, err));
  }
}

export async function afterCommit(
  env: Env,
  jobs: { message: Parameters<typeof dispatchJob>[1]; jobId: string }[],
  notifyResults: unknown[],
) {
  for (const job of jobs) {
    try {
      await dispatchJob(env, job.message);
    } catch (err) {
      console.error(`council: the dispatch queue refused job ${job.jobId}; the session's deadline will fall back`, err);
    }
  }
  const inserted = notifyResults.flatMap((r) => (Array.isArray(r) ? (r as InsertedNodeEvent[]) : []));
  await enqueuePushes(env, inserted);
}
