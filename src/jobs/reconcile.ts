import { and, asc, eq, gt, inArray, lte, or } from "drizzle-orm";
import type { Db } from "../db/client";
import { jobs } from "../db/schema";
import type { Env } from "../env";
import { appendEvent } from "../lib/events";
import { dispatchMessage, type DispatchMessage } from "../queues/dispatch-message";
import type { RunnerConfig } from "./config";
import type { InboxLayout } from "./inbox-config";
import { enqueueRouted, heldJobsRouted } from "./inbox-routing";
import type { NotifyOwner } from "./job-end";
import { OWNER_KINDS, type OwnerKind } from "./owner-kinds";
import { REDACTED_SECRET } from "./submit";
import { RUNTIMES, type Runtime } from "./payloads";

/** Rows examined per page, pages per tick, and messages per enqueueMany call (payloads can be 64 KiB). */
const PAGE = 500;
const PAGES_PER_TICK = 10;
const ID_CHUNK = 90; // D1 allows 100 bound parameters per query
const ADOPT_CHUNK = 50;

export interface ReconcileSummary {
  examined: number;
  redispatched: number;
  invalid: number;
}

/**
 * Jobs `queued` in D1 that never reached the inbox (a submission just before the Worker stopped, a
 * dispatch message lost or refused) are re-dispatched from their row, straight into the inbox,
 * once `reconcile_grace_ms` has passed since submission. Only rows the inbox never reported on are
 * candidates (`inbox_seq = 0`); the inbox ignores a job it already holds, so a repeat is harmless.
 * A job past its queue-time limit is taken in all the same and given up by the inbox at once as
 * `no_runner`, so its owner is told through the inbox like every other ending. A row that can never
 * run is given up here and its owner told through `notifyOwner` (the composition root's table).
 */
export async function reconcileQueuedJobs(
  env: Env,
  db: Db,
  now: Date,
  config: RunnerConfig,
  layout: InboxLayout,
  notifyOwner: NotifyOwner,
): Promise<ReconcileSummary> {
  const summary: ReconcileSummary = { examined: 0, redispatched: 0, invalid: 0 };
  const cutoff = new Date(now.getTime() - config.reconcile_grace_ms).toISOString();
  let after: { createdAt: string; id: string } | null = null;
  for (let page = 0; page < PAGES_PER_TICK; page++) {
    const rows: { id: string; createdAt: string; runtime: string }[] = await db
      .select({ id: jobs.id, createdAt: jobs.createdAt, runtime: jobs.runtime })
      .from(jobs)
      .where(
        and(
          eq(jobs.status, "queued"),
          eq(jobs.inboxSeq, 0),
          lte(jobs.createdAt, cutoff),
          after ? or(gt(jobs.createdAt, after.createdAt), and(eq(jobs.createdAt, after.createdAt), gt(jobs.id, after.id))) : undefined,
        ),
      )
      .orderBy(asc(jobs.createdAt), asc(jobs.id))
      .limit(PAGE);
    if (rows.length === 0) break;
    summary.examined += rows.length;
    // A row whose runtime is unknown is not looked for: it cannot form a dispatch message anyway.
    const known = rows.flatMap((r) => (isRuntime(r.runtime) ? [{ id: r.id, runtime: r.runtime }] : []));
    const held = new Set(await heldJobsRouted(env, layout, known));
    const missing = rows.filter((r) => !held.has(r.id)).map((r) => r.id);
    for (let i = 0; i < missing.length; i += ID_CHUNK) {
      const full = await db
        .select()
        .from(jobs)
        .where(and(inArray(jobs.id, missing.slice(i, i + ID_CHUNK)), eq(jobs.status, "queued")));
      const messages: DispatchMessage[] = [];
      for (const row of full) {
        const parsed = dispatchMessage.safeParse({
          job_id: row.id,
          kind: row.kind,
          payload: row.payload,
          owner: { kind: row.ownerKind, id: row.ownerId },
          enqueued_at: row.createdAt,
        });
        if (parsed.success && hasRedactedSecret(parsed.data)) {
          // The row kept no member token, so the job cannot be rebuilt: it would run with "[redacted]"
          // and every handoff would be refused. It dies, and its owner (the round) fails the stage.
          const error = {
            code: "member_token_unrecoverable",
            message: "the stage job never reached the runner inbox, and its D1 row does not keep the member token it needs",
          };
          if (await giveUp(env, db, row, error, now, notifyOwner)) summary.invalid++;
        } else if (parsed.success) messages.push(parsed.data);
        else {
          const issues = parsed.error.issues.map((x) => `${x.path.join(".")}: ${x.message}`).join("; ");
          const error = { code: "invalid_job", message: `the stored job cannot be dispatched: ${issues}`.slice(0, 1_000) };
          if (await giveUp(env, db, row, error, now, notifyOwner)) summary.invalid++;
        }
      }
      for (let j = 0; j < messages.length; j += ADOPT_CHUNK) {
        const { accepted } = await enqueueRouted(env, layout, {
          messages: messages.slice(j, j + ADOPT_CHUNK),
          maxAttempts: config.max_attempts,
          maxQueueMs: config.max_queue_ms,
          now: now.getTime(),
        });
        summary.redispatched += accepted.length;
      }
    }
    after = rows[rows.length - 1]!;
    if (rows.length < PAGE) break;
  }
  return summary;
}

function isRuntime(name: string): name is Runtime {
  return (RUNTIMES as readonly string[]).includes(name);
}

function hasRedactedSecret(message: DispatchMessage): boolean {
  return message.kind === "team_stage" && message.payload.member_token === REDACTED_SECRET;
}

/**
 * A stored job that can never run — it no longer forms a dispatch message (written under older
 * limits), or its row lacks a secret it needs — is dead in D1 alone, and its owner is told directly.
 */
async function giveUp(
  env: Env,
  db: Db,
  row: typeof jobs.$inferSelect,
  error: { code: string; message: string },
  now: Date,
  notifyOwner: NotifyOwner,
): Promise<boolean> {
  const at = now.toISOString();
  const [updated] = await db.batch([
    db
      .update(jobs)
      .set({ status: "dead", error, updatedAt: at, finishedAt: at })
      .where(and(eq(jobs.id, row.id), eq(jobs.status, "queued"), eq(jobs.inboxSeq, 0)))
      .returning({ id: jobs.id }),
    appendEvent(
      db,
      {
        type: "job.dead",
        subject: row.id,
        payload: { job_id: row.id, kind: row.kind, owner: { kind: row.ownerKind, id: row.ownerId }, reason: error.code, error },
        dedupeKey: `reconcile:${row.id}:invalid`,
      },
      now,
    ),
  ]);
  if (updated.length === 0) return false;
  if (!(OWNER_KINDS as readonly string[]).includes(row.ownerKind)) {
    console.error(`reconcile: job ${row.id} has unknown owner kind '${row.ownerKind}'; nobody to tell`);
    return true;
  }
  await notifyOwner(env, {
    job_id: row.id,
    kind: row.kind,
    owner: { kind: row.ownerKind as OwnerKind, id: row.ownerId },
    status: "dead",
    attempt: row.attempt,
    at,
    error,
    reason: error.code,
  });
  return true;
}
