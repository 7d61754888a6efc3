import { and, asc, eq } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { actionChangedEvent, checkConsumable, consumption, enqueueDeliveries, pollApproval, prepareApproval } from "../approvals/broker";
import type { ApprovalAction } from "../approvals/action-hash";
import { getDb, type Db } from "../db/client";
import { aeeRounds, evolutionRequests, playbookSettleItems, type AeeRoundRow } from "../db/schema";
import type { Env } from "../env";
import { findCase } from "../eval/case-job";
import { appendEvent } from "../lib/events";
import { newId } from "../lib/ids";
import { findEmployee } from "../tasks/employees";
import { batchOf, isRoundConflict, planOf, roundUpdate, stateOf, suitesOrThrow } from "./aee-context";
import { employeeEvolutionConfig } from "./config";
import type { CaseResult } from "./aee-measure";
import { abandonRound, commitRound, discardCommit, type CommitResult, type RoundState } from "./aee-round";
import type { EvolutionConfig } from "./config";
import type { EntryChange } from "./playbook-merge";
import type { PlaybookEntry } from "./playbook";
import { changedEntries, isPlaybookConflict, loadPlaybook, playbookWrite } from "./playbook-store";
import { settleItemsFor, type SettleItem } from "./settle";
import { endRequest } from "./triggers";

/**
 * The end of an AEE round (seed 003 §12.5): the commit, the only step that writes the playbook's
 * content; the abandonment, which writes nothing but the failure notes of the entries the refused
 * attempts targeted (§12.5: byte-identical otherwise); and governed evolution (issue 23 item 5):
 * with `[evolution] require_approval` the commit that would apply becomes a `playbook_commit`
 * approval whose params are the exact diff, and applies only once a manager approved that hash.
 */
export const PLAYBOOK_APPROVAL_TTL_SECS = 3 * 86_400;
const MAX_WRITE_RETRIES = 4;

/** The entry fields a diff shows (what the rule is and where it stands, not its bookkeeping). */
function diffView(e: PlaybookEntry) {
  return {
    entry_id: e.entry_id,
    category: e.category,
    signals_match: e.signals_match,
    content: e.content,
    eval_cases: e.eval_cases,
    assertions: e.assertions,
    state: e.state,
    version: e.version,
  };
}

/** The `playbook_commit` action: the exact diff a person approves (its hash is the approval's `action_hash`). */
export function commitAction(
  row: Pick<AeeRoundRow, "id" | "agentId">,
  state: RoundState,
  preparedAt: string,
  changes: readonly EntryChange[],
): ApprovalAction {
  return {
    kind: "playbook_commit",
    subject: row.agentId,
    params: {
      employee_id: row.agentId,
      round_id: row.id,
      champion_fingerprint: state.champion_fingerprint,
      prepared_at: preparedAt,
      delta: state.accepted!.delta,
      diff: changes.map((c) => ({
        op: c.op,
        entry_id: c.entry_id,
        before: c.before ? diffView(c.before) : null,
        after: diffView(c.after),
      })),
    },
  };
}

function settleRows(db: Db, agentId: string, items: readonly SettleItem[], now: Date) {
  return items.map((item) =>
    db.insert(playbookSettleItems).values({
      id: newId("pst"),
      agentId,
      entryId: item.entry_id,
      roundId: item.round_id,
      item: item as unknown as Record<string, unknown>,
      status: "pending",
      dueAt: item.due_at,
      createdAt: now.toISOString(),
    }),
  );
}

function shadowResultsOf(row: AeeRoundRow): CaseResult[] {
  return (((row.candidate as { results?: CaseResult[] } | null)?.results ?? []) as CaseResult[]).map((r) => ({
    case_ref: r.case_ref,
    verdict: r.verdict,
  }));
}

const caseExists = (ref: string) => findCase(suitesOrThrow(), ref) !== undefined;

/** The statements that apply a commit: the changed entries, their settle windows, the round committed, the trail. */
function applyStatements(
  db: Db,
  row: AeeRoundRow,
  result: Extract<CommitResult, { ok: true }>,
  readRevision: number,
  settle: readonly SettleItem[],
  now: Date,
  before: PlaybookEntry[],
) {
  const changed = changedEntries({ agent_id: row.agentId, entries: before }, result.playbook);
  const at = now.toISOString();
  const changes = result.changes.map((c) => ({ op: c.op, entry_id: c.entry_id, version: c.after.version, content: c.after.content }));
  const verdict = result.state.accepted!.verdict;
  return [
    roundUpdate(
      db,
      row,
      {
        status: "committed",
        step: "done",
        state: result.state as unknown as Record<string, unknown>,
        candidate: row.candidate,
        endReason: verdict.reason,
        endedAt: at,
      },
      now,
    ),
    ...playbookWrite(db, row.agentId, readRevision, changed, now),
    ...settleRows(db, row.agentId, settle, now),
    appendEvent(
      db,
      {
        type: "playbook.committed",
        subject: row.agentId,
        payload: { agent_id: row.agentId, round_id: row.id, changes, settle_due_at: settle[0]?.due_at ?? null },
      },
      now,
    ),
    appendEvent(
      db,
      {
        type: "evolution.round_committed",
        subject: row.agentId,
        payload: {
          agent_id: row.agentId,
          round_id: row.id,
          round_seq: row.roundSeq,
          verdict: verdict.verdict,
          reason: verdict.reason,
          dims: verdict.dims,
          changes,
        },
      },
      now,
    ),
  ];
}

/**
 * A candidate the commit gate accepted: committed now, or (require_approval) put to a person. The
 * commit lands only on the playbook the round measured (same champion) and the revision it read.
 */
export async function commitAccepted(
  env: Env,
  db: Db,
  row: AeeRoundRow,
  state: RoundState,
  cfg: EvolutionConfig,
  now: Date,
): Promise<void> {
  for (let attempt = 0; attempt < MAX_WRITE_RETRIES; attempt++) {
    const stored = await loadPlaybook(db, row.agentId);
    const shadow = shadowResultsOf(row);
    const result = commitRound(state, stored.playbook, { now, caseExists, settle_hours: cfg.aee_settle_hours, shadow_results: shadow });
    if (!result.ok) {
      await finishAbandoned(env, db, row, result.state, now, result.reason);
      return;
    }
    if (cfg.require_approval) {
      await askApproval(env, db, row, state, result, shadow, now);
      return;
    }
    try {
      await db.batch(batchOf(applyStatements(db, row, result, stored.revision, result.settle, now, [...stored.playbook.entries])));
    } catch (err) {
      if (isPlaybookConflict(err)) continue; // written meanwhile (a settle, a retire): measure the champion again
      throw err;
    }
    if (row.requestId) await endRequest(env, row.requestId, { status: "done", reason: "committed" }, now);
    return;
  }
  throw new Error(`aee: round ${row.id} could not commit: the playbook kept changing`);
}

async function askApproval(
  env: Env,
  db: Db,
  row: AeeRoundRow,
  state: RoundState,
  result: Extract<CommitResult, { ok: true }>,
  shadow: CaseResult[],
  now: Date,
) {
  const preparedAt = now.toISOString();
  const action = commitAction(row, state, preparedAt, result.changes);
  const candidate = (row.candidate ?? {}) as Record<string, unknown>;
  const evidence = {
    round_id: row.id,
    round_seq: row.roundSeq,
    intent: state.intent,
    heldout_cases: state.heldout,
    cases: planOf(row).cases,
    scores: { champion: state.champion, candidate: state.accepted!.measure, verdict: state.accepted!.verdict },
    judge_output: { champion: (row.champion as { judge?: unknown } | null)?.judge ?? null, candidate: candidate.judge ?? null },
    case_results: candidate.results ?? [],
    advisories: candidate.advisories ?? [],
  };
  const prepared = await prepareApproval(
    env,
    db,
    { action, evidence, ttlSecs: PLAYBOOK_APPROVAL_TTL_SECS, requestedBy: `aee_round:${row.id}` },
    now,
  );
  const base = { agent_id: row.agentId, round_id: row.id, approval_id: prepared.approvalId, action_hash: prepared.actionHash };
  if (prepared.status === "no_channel") {
    // Nobody can decide: fail closed, the commit is discarded at once.
    await db.batch(
      batchOf([
        ...prepared.statements,
        roundUpdate(
          db,
          row,
          {
            status: "abandoned",
            step: "done",
            state: discardCommit(state) as unknown as Record<string, unknown>,
            candidate: row.candidate,
            approvalId: prepared.approvalId,
            endReason: "approval_no_channel",
            endedAt: now.toISOString(),
          },
          now,
        ),
        appendEvent(db, { type: "playbook.commit_discarded", subject: row.agentId, payload: { ...base, reason: "no_channel" } }, now),
      ]),
    );
    if (row.requestId) await endRequest(env, row.requestId, { status: "failed", reason: "approval_no_channel" }, now);
    return;
  }
  await db.batch(
    batchOf([
      ...prepared.statements,
      roundUpdate(
        db,
        row,
        {
          status: "awaiting_approval",
          step: "approval",
          state: state as unknown as Record<string, unknown>,
          candidate: row.candidate,
          approvalId: prepared.approvalId,
          commitPlan: { prepared_at: preparedAt, shadow_results: shadow, action_hash: prepared.actionHash },
        },
        now,
      ),
      appendEvent(
        db,
        {
          type: "playbook.commit_requested",
          subject: row.agentId,
          payload: { ...base, changes: (action.params.diff as unknown[]).length },
        },
        now,
      ),
    ]),
  );
  await enqueueDeliveries(env, db, prepared.deliveries, now);
  // The lock and the slot are not held while a person decides; the champion check at apply time guards.
  if (row.requestId) await endRequest(env, row.requestId, { status: "done", reason: "awaiting_approval" }, now);
}

/**
 * A round that commits nothing: the failure notes of its refused attempts land on the entries they
 * targeted, nothing else of the playbook changes (§12.5), the round records why, and its request ends.
 */
export async function finishAbandoned(
  env: Env,
  db: Db,
  row: AeeRoundRow,
  state: RoundState,
  now: Date,
  reason: string,
  extra: BatchItem<"sqlite">[] = [],
): Promise<void> {
  for (let attempt = 0; attempt < MAX_WRITE_RETRIES; attempt++) {
    const stored = await loadPlaybook(db, row.agentId);
    const ended = abandonRound(state, stored.playbook, now);
    const changed = changedEntries(stored.playbook, ended.playbook);
    const at = now.toISOString();
    try {
      await db.batch(
        batchOf([
          roundUpdate(
            db,
            row,
            {
              status: "abandoned",
              step: "done",
              state: ended.state as unknown as Record<string, unknown>,
              candidate: row.candidate,
              endReason: reason,
              endedAt: at,
            },
            now,
          ),
          ...(changed.length ? playbookWrite(db, row.agentId, stored.revision, changed, now) : []),
          ...extra,
          appendEvent(
            db,
            {
              type: "evolution.round_abandoned",
              subject: row.agentId,
              payload: {
                agent_id: row.agentId,
                round_id: row.id,
                round_seq: row.roundSeq,
                reason,
                attempts: ended.state.attempts.length,
                noted_entries: changed.map((e) => e.entry_id),
              },
            },
            now,
          ),
        ]),
      );
    } catch (err) {
      if (isPlaybookConflict(err)) continue;
      throw err;
    }
    if (row.requestId) await endRequest(env, row.requestId, { status: "failed", reason }, now);
    return;
  }
  throw new Error(`aee: round ${row.id} could not be abandoned: the playbook kept changing`);
}

export type ApprovalResolution = { round_id: string; outcome: "pending" | "applied" | "discarded" | "unusable"; reason?: string };

/** The commits waiting for a person: applied once approved (exact hash), discarded when denied or expired. */
export async function resolvePendingCommits(env: Env, now: Date, limit = 50): Promise<ApprovalResolution[]> {
  const db = getDb(env.DB);
  const rows = await db
    .select()
    .from(aeeRounds)
    .where(eq(aeeRounds.status, "awaiting_approval"))
    .orderBy(asc(aeeRounds.updatedAt))
    .limit(limit)
    .all();
  const out: ApprovalResolution[] = [];
  for (const row of rows) {
    try {
      out.push(await resolveOne(env, db, row, now));
    } catch (err) {
      if (isRoundConflict(err)) continue;
      throw err;
    }
  }
  return out;
}

async function resolveOne(env: Env, db: Db, row: AeeRoundRow, now: Date): Promise<ApprovalResolution> {
  const approval = row.approvalId ? await pollApproval(db, row.approvalId, now) : null;
  // An approval that cannot be read is no approval: fail closed, as if it had expired.
  const status = approval?.status ?? "expired";
  if (status === "pending") return { round_id: row.id, outcome: "pending" };
  if (status !== "approved") {
    await discard(db, row, `approval_${status}`, now);
    return { round_id: row.id, outcome: "discarded", reason: `approval_${status}` };
  }
  return applyApproved(env, db, row, approval!.decided_by ?? null, now);
}

async function discard(db: Db, row: AeeRoundRow, reason: string, now: Date, before: BatchItem<"sqlite">[] = []) {
  await db.batch(
    batchOf([
      ...before,
      roundUpdate(
        db,
        row,
        {
          status: "abandoned",
          step: "done",
          state: discardCommit(stateOf(row)) as unknown as Record<string, unknown>,
          endReason: reason,
          endedAt: now.toISOString(),
        },
        now,
      ),
      appendEvent(
        db,
        {
          type: "playbook.commit_discarded",
          subject: row.agentId,
          payload: { agent_id: row.agentId, round_id: row.id, approval_id: row.approvalId, reason },
        },
        now,
      ),
    ]),
  );
}

/**
 * Approved: the commit is rebuilt from the playbook as it is now, at the time it was prepared, and
 * its action hashed again. Anything that differs from what the person approved (the playbook moved,
 * an entry it changes was changed) refuses it as `action_changed`, audited, and discards it.
 */
async function applyApproved(env: Env, db: Db, row: AeeRoundRow, approvedBy: string | null, now: Date): Promise<ApprovalResolution> {
  const plan = (row.commitPlan ?? {}) as { prepared_at?: string; shadow_results?: CaseResult[] };
  const state = stateOf(row);
  const employee = await findEmployee(db, row.agentId);
  const cfg: Pick<EvolutionConfig, "aee_settle_hours"> = employee ? await employeeEvolutionConfig(db, employee) : { aee_settle_hours: 24 };
  for (let attempt = 0; attempt < MAX_WRITE_RETRIES; attempt++) {
    const stored = await loadPlaybook(db, row.agentId);
    const preparedAt = plan.prepared_at ?? row.updatedAt;
    const result = commitRound(state, stored.playbook, {
      now: new Date(preparedAt),
      caseExists,
      settle_hours: cfg.aee_settle_hours,
      shadow_results: plan.shadow_results ?? [],
    });
    if (!result.ok) {
      await discard(db, row, "action_changed", now, [
        appendEvent(
          db,
          {
            type: "approval.action_changed",
            subject: row.approvalId!,
            payload: { approval_id: row.approvalId, reason: "action_changed", detail: `${result.reason}: ${result.detail}`, by: "aee" },
          },
          now,
        ),
      ]);
      return { round_id: row.id, outcome: "discarded", reason: "action_changed" };
    }
    const action = commitAction(row, state, preparedAt, result.changes);
    const check = await checkConsumable(db, row.approvalId!, action);
    if (!check.ok) {
      if (check.reason === "action_changed") {
        await discard(db, row, "action_changed", now, [actionChangedEvent(db, row.approvalId!, check, "aee", now)]);
        return { round_id: row.id, outcome: "discarded", reason: "action_changed" };
      }
      console.error(`aee: approval ${row.approvalId} of round ${row.id} cannot be used (${check.reason})`);
      return { round_id: row.id, outcome: "unusable", reason: check.reason };
    }
    // The window starts when the change applies, not when it was asked for.
    const settle = settleItemsFor(result.changes, plan.shadow_results ?? [], { round_id: row.id, now, settle_hours: cfg.aee_settle_hours });
    const use = consumption(db, row.approvalId!, check.hash, "aee", now);
    try {
      await db.batch(
        batchOf([
          use.event(),
          ...applyStatements(db, row, result, stored.revision, settle, now, [...stored.playbook.entries]),
          appendEvent(
            db,
            {
              type: "playbook.commit_approved",
              subject: row.agentId,
              payload: { agent_id: row.agentId, round_id: row.id, approval_id: row.approvalId, approved_by: approvedBy },
            },
            now,
          ),
          use.consume(),
        ]),
      );
    } catch (err) {
      if (isPlaybookConflict(err)) continue;
      throw err;
    }
    return { round_id: row.id, outcome: "applied" };
  }
  throw new Error(`aee: round ${row.id} could not apply its approved commit: the playbook kept changing`);
}

/** Rounds that ended while their request still runs (the Worker stopped in between): the request ends now. */
export async function endOrphanedRequests(env: Env, db: Db, now: Date): Promise<number> {
  const rows = await db
    .select({ requestId: aeeRounds.requestId, status: aeeRounds.status, endReason: aeeRounds.endReason })
    .from(aeeRounds)
    .innerJoin(evolutionRequests, and(eq(evolutionRequests.id, aeeRounds.requestId), eq(evolutionRequests.status, "running")))
    .all();
  let n = 0;
  for (const r of rows) {
    if (!r.requestId || r.status === "running") continue;
    const failed = r.status === "abandoned";
    await endRequest(
      env,
      r.requestId,
      { status: failed ? "failed" : "done", reason: r.status === "awaiting_approval" ? "awaiting_approval" : (r.endReason ?? r.status) },
      now,
    );
    n++;
  }
  return n;
}
