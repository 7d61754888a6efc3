import { and, asc, eq, inArray, lte, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { getDb, type Db } from "../db/client";
import { guarded } from "../db/guard";
import { aeeJobs, aeeRounds, jobs, playbookEntries, playbookSettleItems, type PlaybookSettleRow, type SettleStatus } from "../db/schema";
import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import { appendEvent } from "../lib/events";
import type { JobEnd } from "../jobs/job-end";
import { findEmployee } from "../tasks/employees";
import { batchOf, caseJob, caseResultsOf, caseTimeoutMs, dispatchAll, stepJobs, suitesOrThrow } from "./aee-context";
import { employeeEvolutionConfig } from "./config";
import { endOrphanedRequests, resolvePendingCommits } from "./aee-commit";
import { advanceRound, recordJobEnd, startRounds } from "./aee-run";
import type { CaseResult } from "./aee-measure";
import { changedEntries, isPlaybookConflict, loadPlaybook, playbookWrite } from "./playbook-store";
import { applySettlements, settleVerdict, type SettleItem } from "./settle";
import { pruneInjections, recordDueApplications } from "./playbook-applications";
import { sweepPlaybook } from "./sweep";

/**
 * Per-entry observation windows (seed 003 §12.5.4 settle.rs + pending.rs) run by the `playbook` tick:
 * an item whose window ended has its own linked cases run again on the playbook as it is now (case
 * jobs owned by the item), and only that entry is confirmed (probation → active) or rolled back;
 * the rest of its batch is judged by its own items. Also here: the lifecycle sweep (§12.3 sweep.rs)
 * and the tick itself, which starts rounds, resumes rounds whose job ends were lost, and applies or
 * discards commits waiting for approval, and records the applications of closed conversations' entries.
 */
const MAX_WRITE_RETRIES = 4;

export async function settleDue(env: Env, now: Date, limit = 20): Promise<{ measuring: number; decided: number }> {
  const db = getDb(env.DB);
  const rows = await db
    .select()
    .from(playbookSettleItems)
    .where(and(eq(playbookSettleItems.status, "pending"), lte(playbookSettleItems.dueAt, now.toISOString())))
    .orderBy(asc(playbookSettleItems.dueAt))
    .limit(limit)
    .all();
  let measuring = 0;
  let decided = 0;
  for (const row of rows) {
    const r = await beginSettle(env, db, row, now);
    if (r === "measuring") measuring++;
    else if (r === "decided") decided++;
  }
  return { measuring, decided };
}

const statusGuard = (db: Db, row: Pick<PlaybookSettleRow, "id" | "status">, set: Partial<PlaybookSettleRow> & { status: SettleStatus }) =>
  db
    .update(playbookSettleItems)
    .set({ ...set, status: sql`${guarded(sql`${playbookSettleItems.status} = ${row.status}`, set.status)}` })
    .where(eq(playbookSettleItems.id, row.id));

async function beginSettle(env: Env, db: Db, row: PlaybookSettleRow, now: Date): Promise<"measuring" | "decided" | "skipped"> {
  const item = row.item as unknown as SettleItem;
  const stored = await loadPlaybook(db, row.agentId);
  const entry = stored.playbook.entries.find((e) => e.entry_id === row.entryId);
  const employee = await findEmployee(db, row.agentId);
  // Nothing to measure: the outcome is decided from the playbook alone (superseded, missing).
  if (!entry || !employee || entry.version !== item.after_version || entry.state === "retired") {
    await decide(env, db, row, [], now);
    return "decided";
  }
  const suites = suitesOrThrow();
  const attempt = row.attempt + 1;
  const timeout = await caseTimeoutMs(db);
  const plan = { runtime: employee.runtime, model: employee.modelPreferred, tools: employee.capabilities ?? {} };
  const jobsToRun = item.cases.flatMap(
    (ref) =>
      caseJob(
        db,
        { kind: "playbook_settle", id: row.id },
        row.agentId,
        plan,
        suites,
        ref,
        "settle_case",
        attempt,
        stored.playbook.entries,
        timeout,
        now,
      ) ?? [],
  );
  if (jobsToRun.length === 0) {
    await decide(env, db, row, [], now);
    return "decided";
  }
  try {
    await db.batch(batchOf([statusGuard(db, row, { status: "measuring", attempt }), ...jobsToRun.flatMap((j) => j.statements)]));
  } catch (err) {
    if (
      String(err).includes("playbook_settle_items.status") ||
      String((err as Error)?.cause ?? "").includes("playbook_settle_items.status")
    )
      return "skipped";
    throw err;
  }
  await dispatchAll(env, jobsToRun);
  return "measuring";
}

/** Owner handler of `playbook_settle` jobs: each case's end recorded once; the last one decides the item. */
export async function onSettleJobEnd(env: Env, end: JobEnd): Promise<void> {
  const now = (await loadClock(env)).now();
  const db = getDb(env.DB);
  await recordJobEnd(db, end, now);
  await finishSettle(env, db, end.owner.id, now);
}

async function finishSettle(env: Env, db: Db, itemId: string, now: Date): Promise<void> {
  const row = await db.select().from(playbookSettleItems).where(eq(playbookSettleItems.id, itemId)).get();
  if (!row || row.status !== "measuring") return;
  const { rows, running } = await stepJobs(db, itemId, "settle_case", row.attempt);
  if (running) return;
  await decide(env, db, row, caseResultsOf(rows), now);
}

/** The item's verdict from its own cases, applied to its own entry only, in one guarded write. */
async function decide(env: Env, db: Db, row: PlaybookSettleRow, observed: CaseResult[], now: Date): Promise<void> {
  const item = row.item as unknown as SettleItem;
  const employee = await findEmployee(db, row.agentId);
  const cfg = employee ? await employeeEvolutionConfig(db, employee) : null;
  const settleHours = cfg?.aee_settle_hours ?? 24;
  const verdict = settleVerdict(item, observed, { now, settle_hours: settleHours, ...(cfg ? { band: cfg.noise_band.cases } : {}) });
  for (let attempt = 0; attempt < MAX_WRITE_RETRIES; attempt++) {
    const stored = await loadPlaybook(db, row.agentId);
    const applied = applySettlements(stored.playbook, [{ item, verdict }], now);
    const result = applied.outcomes[0]?.result ?? "not_due";
    const requeued = applied.requeue[0];
    const status: SettleStatus =
      result === "accepted"
        ? "accepted"
        : result === "rolled_back"
          ? "rolled_back"
          : result === "superseded"
            ? "superseded"
            : result === "missing"
              ? "missing"
              : "pending";
    const changed = changedEntries(stored.playbook, applied.playbook);
    const at = now.toISOString();
    const statements: BatchItem<"sqlite">[] = [
      statusGuard(db, row, {
        status,
        ...(requeued ? { item: requeued as unknown as Record<string, unknown>, dueAt: requeued.due_at } : {}),
        verdict: { ...verdict, observed: observed.map((o) => ({ case_ref: o.case_ref, verdict: o.verdict })) } as unknown as Record<
          string,
          unknown
        >,
        ...(status !== "pending" ? { settledAt: at } : {}),
      }),
      ...(changed.length ? playbookWrite(db, row.agentId, stored.revision, changed, now) : []),
      appendEvent(
        db,
        {
          type: "playbook.entry_settled",
          subject: row.agentId,
          payload: {
            agent_id: row.agentId,
            entry_id: row.entryId,
            round_id: row.roundId,
            settle_id: row.id,
            result: result === "not_due" ? "requeued" : result,
            verdict,
          },
        },
        now,
      ),
    ];
    try {
      await db.batch(batchOf(statements));
    } catch (err) {
      if (isPlaybookConflict(err)) continue;
      if (
        String(err).includes("playbook_settle_items.status") ||
        String((err as Error)?.cause ?? "").includes("playbook_settle_items.status")
      )
        return;
      throw err;
    }
    return;
  }
  console.error(`aee: settle ${row.id} could not be written: the playbook kept changing; the tick tries again`);
}

/** The lifecycle sweep (stale / archive / capacity) over every playbook with entries it could move. */
export async function sweepPlaybooks(env: Env, now: Date, limit = 100): Promise<{ swept: number; changes: number }> {
  const db = getDb(env.DB);
  const agents = await db
    .selectDistinct({ agentId: playbookEntries.agentId })
    .from(playbookEntries)
    .where(inArray(playbookEntries.state, ["active", "stale"]))
    .orderBy(asc(playbookEntries.agentId))
    .limit(limit)
    .all();
  let swept = 0;
  let changes = 0;
  for (const { agentId } of agents) {
    for (let attempt = 0; attempt < MAX_WRITE_RETRIES; attempt++) {
      const stored = await loadPlaybook(db, agentId);
      const out = sweepPlaybook(stored.playbook, now);
      if (out.changes.length === 0) break;
      try {
        await db.batch(
          batchOf([
            ...playbookWrite(db, agentId, stored.revision, changedEntries(stored.playbook, out.playbook), now),
            appendEvent(
              db,
              { type: "playbook.swept", subject: agentId, payload: { agent_id: agentId, changes: out.changes, capacity: out.capacity } },
              now,
            ),
          ]),
        );
      } catch (err) {
        if (isPlaybookConflict(err)) continue;
        throw err;
      }
      swept++;
      changes += out.changes.length;
      break;
    }
  }
  return { swept, changes };
}

/**
 * Jobs of running rounds and measuring settle items whose end the owner call never delivered (it
 * gave up, or the Worker stopped mid-way): their end is read from the job row, then the round or the
 * item moves on. Rounds and items are advanced either way, which is a no-op when nothing ended.
 */
async function resume(env: Env, now: Date): Promise<{ rounds: number; settles: number; recovered: number }> {
  const db = getDb(env.DB);
  const stuck = await db
    .select({ jobId: aeeJobs.jobId, status: jobs.status, result: jobs.result, error: jobs.error })
    .from(aeeJobs)
    .innerJoin(jobs, eq(jobs.id, aeeJobs.jobId))
    .where(and(eq(aeeJobs.status, "dispatched"), inArray(jobs.status, ["completed", "failed", "dead"])))
    .limit(200)
    .all();
  for (const j of stuck)
    await recordJobEnd(
      db,
      {
        job_id: j.jobId,
        status: j.status as "completed" | "failed" | "dead",
        result: j.result ?? undefined,
        error: j.error ?? undefined,
        reason: "recovered_by_tick",
      },
      now,
    );
  const rounds = await db.select({ id: aeeRounds.id }).from(aeeRounds).where(eq(aeeRounds.status, "running")).limit(100).all();
  for (const r of rounds) await advanceRound(env, r.id, now);
  const items = await db
    .select({ id: playbookSettleItems.id })
    .from(playbookSettleItems)
    .where(eq(playbookSettleItems.status, "measuring"))
    .limit(100)
    .all();
  for (const i of items) await finishSettle(env, db, i.id, now);
  return { rounds: rounds.length, settles: items.length, recovered: stuck.length };
}

/** The `playbook` tick (every minute): rounds, approvals, settle windows, applications, the sweep. */
export async function playbookTick(env: Env, now: Date): Promise<Record<string, unknown>> {
  const started = await startRounds(env, now);
  const resumed = await resume(env, now);
  const approvals = await resolvePendingCommits(env, now);
  const orphans = await endOrphanedRequests(env, getDb(env.DB), now);
  const settle = await settleDue(env, now);
  // Before the sweep: an entry used in a conversation that just closed is not `unused`.
  const applications = await recordDueApplications(getDb(env.DB), now);
  const injectionsPruned = await pruneInjections(getDb(env.DB), now);
  const sweep = await sweepPlaybooks(env, now);
  return {
    rounds_started: started.filter((s) => s.outcome === "started").length,
    rounds_skipped: started.filter((s) => s.outcome === "skipped").length,
    requests_waiting: started.filter((s) => s.outcome === "waiting").length,
    rounds_resumed: resumed.rounds,
    job_ends_recovered: resumed.recovered,
    commits_applied: approvals.filter((a) => a.outcome === "applied").length,
    commits_discarded: approvals.filter((a) => a.outcome === "discarded").length,
    requests_ended: orphans,
    settle_measuring: settle.measuring,
    settle_decided: settle.decided,
    applications_recorded: applications.applications,
    injections_pruned: injectionsPruned,
    entries_swept: sweep.changes,
  };
}
