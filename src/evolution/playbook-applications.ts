import { and, asc, eq, inArray, isNull, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { conversations, playbookInjections } from "../db/schema";
import { appendEvent } from "../lib/events";
import { insertWhere } from "../lib/guarded-insert";
import type { ErrorCategory } from "../prediction";
import { batchOf } from "./aee-context";
import { recordApplications } from "./playbook-merge";
import type { Application } from "./playbook";
import { changedEntries, isPlaybookConflict, loadPlaybook, playbookWrite } from "./playbook-store";

/**
 * The entries' applications (seed 003 §12.3 `applications`, capsule style: an outcome and a score):
 * a chat turn records which entries its prompt carried, and once the conversation has closed each of
 * them gets one application judged by the conversation's prediction error. That is what moves
 * `success_streak` (the optimize intent's targets, the settle-accepted streak) and the net score the
 * selection ranks by, and what keeps a used entry from being swept as `unused`.
 */
export const APPLICATIONS_PER_TICK = 200;

/** A recorded injection's row is kept this long (for a look at what a turn carried), then pruned. */
export const INJECTIONS_KEPT_MS = 7 * 24 * 3600_000;
/** Rows pruned per tick at most, so one tick's delete stays small after a long downtime. */
export const INJECTIONS_PRUNED_PER_TICK = 2000;

/**
 * A closed conversation's outcome for the entries it carried: the router's own reading of the error.
 * negligible or moderate (nothing to evolve) is a success; significant or critical (the error that
 * triggers reflection or evolution) a failure. The score is the inferred satisfaction, when known.
 */
export function applicationFor(
  error: { category?: unknown; inferred_satisfaction?: unknown } | undefined,
  conversationId: string,
  at: string,
): Application | null {
  const category = error?.category as ErrorCategory | undefined;
  if (category !== "negligible" && category !== "moderate" && category !== "significant" && category !== "critical") return null;
  const s = error?.inferred_satisfaction;
  return {
    at,
    outcome: category === "negligible" || category === "moderate" ? "success" : "failed",
    ...(typeof s === "number" && Number.isFinite(s) && s >= 0 && s <= 1 ? { score: s } : {}),
    conversation_id: conversationId,
  };
}

/**
 * The rows a chat turn writes for the entries its prompt carries, in the turn's own batch and under its
 * guard (a turn that does not land leaves none).
 */
export function injectionStatements(
  db: Db,
  turn: { agent_id: string; conversation_id: string; turn: number; entry_ids: readonly string[] },
  now: Date,
  guard: SQL,
): BatchItem<"sqlite">[] {
  const at = now.toISOString();
  return [...new Set(turn.entry_ids)].map((entryId) =>
    insertWhere(
      db,
      playbookInjections,
      { conversationId: turn.conversation_id, turn: turn.turn, entryId, agentId: turn.agent_id, at },
      guard,
    ).onConflictDoNothing(),
  );
}

/**
 * The `playbook` tick's step: every closed conversation whose injections are not recorded yet becomes
 * applications on its entries, one guarded write per employee (the playbook's revision), with the
 * injections stamped in the same batch so nothing is counted twice. Whole conversations at a time.
 */
export async function recordDueApplications(
  db: Db,
  now: Date,
  limit = APPLICATIONS_PER_TICK,
): Promise<{ conversations: number; applications: number }> {
  const pending = await db
    .selectDistinct({ conversationId: playbookInjections.conversationId })
    .from(playbookInjections)
    .innerJoin(conversations, eq(conversations.id, playbookInjections.conversationId))
    .where(and(isNull(playbookInjections.recordedAt), eq(conversations.status, "closed")))
    .orderBy(asc(playbookInjections.conversationId))
    .limit(limit)
    .all();
  if (pending.length === 0) return { conversations: 0, applications: 0 };
  const rows = await db
    .select({
      conversationId: playbookInjections.conversationId,
      entryId: playbookInjections.entryId,
      agentId: playbookInjections.agentId,
      outcome: conversations.outcome,
      closedAt: conversations.closedAt,
    })
    .from(playbookInjections)
    .innerJoin(conversations, eq(conversations.id, playbookInjections.conversationId))
    .where(
      and(
        isNull(playbookInjections.recordedAt),
        inArray(
          playbookInjections.conversationId,
          pending.map((p) => p.conversationId),
        ),
      ),
    )
    .all();
  const byAgent = new Map<string, typeof rows>();
  for (const row of rows) byAgent.set(row.agentId, [...(byAgent.get(row.agentId) ?? []), row]);
  let applications = 0;
  let recorded = 0;
  for (const [agentId, mine] of byAgent) {
    const apps = new Map<string, { entry_id: string; application: Application }>();
    for (const r of mine) {
      const app = applicationFor(
        (r.outcome as { error?: Record<string, unknown> } | null)?.error,
        r.conversationId,
        r.closedAt ?? now.toISOString(),
      );
      if (app) apps.set(`${r.entryId}\n${r.conversationId}`, { entry_id: r.entryId, application: app });
    }
    const conversationIds = [...new Set(mine.map((r) => r.conversationId))];
    for (let attempt = 0; attempt < 4; attempt++) {
      const stored = await loadPlaybook(db, agentId);
      const next = recordApplications(stored.playbook, [...apps.values()]);
      const changed = changedEntries(stored.playbook, next);
      const ids = new Set(changed.map((e) => e.entry_id));
      const landed = [...apps.values()].filter((a) => ids.has(a.entry_id));
      const stamp = db
        .update(playbookInjections)
        .set({ recordedAt: now.toISOString() })
        .where(
          and(
            eq(playbookInjections.agentId, agentId),
            inArray(playbookInjections.conversationId, conversationIds),
            isNull(playbookInjections.recordedAt),
          ),
        );
      const event = appendEvent(
        db,
        {
          type: "playbook.applications_recorded",
          subject: agentId,
          payload: {
            agent_id: agentId,
            applications: landed.map((a) => ({
              entry_id: a.entry_id,
              conversation_id: a.application.conversation_id,
              outcome: a.application.outcome,
            })),
          },
        },
        now,
      );
      try {
        await db.batch(batchOf([...(changed.length ? [...playbookWrite(db, agentId, stored.revision, changed, now), event] : []), stamp]));
      } catch (err) {
        if (isPlaybookConflict(err)) continue;
        throw err;
      }
      applications += landed.length;
      recorded += conversationIds.length;
      break;
    }
  }
  return { conversations: recorded, applications };
}

/**
 * Drops injection rows nobody reads again: recorded ones past `INJECTIONS_KEPT_MS` (their applications
 * live in the playbook and in `playbook.applications_recorded`), and unrecorded ones that old whose
 * conversation no longer exists (the join that records them can never match). Without it the table
 * grows by every entry of every chat turn for good.
 */
export async function pruneInjections(db: Db, now: Date, limit = INJECTIONS_PRUNED_PER_TICK): Promise<number> {
  const before = new Date(now.getTime() - INJECTIONS_KEPT_MS).toISOString();
  const doomed = sql`SELECT rowid FROM ${playbookInjections} WHERE ${playbookInjections.at} < ${before} AND (${playbookInjections.recordedAt} IS NOT NULL OR NOT EXISTS (SELECT 1 FROM ${conversations} WHERE ${conversations.id} = ${playbookInjections.conversationId})) LIMIT ${limit}`;
  const res = await db.run(sql`DELETE FROM ${playbookInjections} WHERE rowid IN (${doomed})`);
  return res.meta.changes ?? 0;
}
