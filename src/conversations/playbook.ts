import { and, desc, eq, inArray } from "drizzle-orm";
import type { Db } from "../db/client";
import { playbookEntries, predictionLog } from "../db/schema";
import { entryOfRow } from "../evolution/playbook-store";
import { signalsFromError, selectEntries } from "../evolution/selection";
import { LIVE_STATES, type PlaybookEntry } from "../evolution/playbook";
import type { ErrorCategory } from "../prediction";

/** The rows a turn writes for the entries its prompt carries (their applications follow the close). */
export { injectionStatements as playbookInjectionStatements } from "../evolution/playbook-applications";

/** A playbook entry as a conversation turn's prompt shows it (seed 003 §12.4). */
export interface SelectedEntry {
  entry_id: string;
  category: string;
  content: string;
}

/**
 * The playbook entries selected for one turn (seed 003 §12.4: signal match first, then score, within
 * a token budget; only `content` reaches the prompt). The turn's signals are the vocabulary tokens of
 * the latest prediction error for this user and employee (else the employee's latest), and the turn's
 * own text for keyword patterns. An employee without live entries gets none, and the prompt carries
 * no playbook block. A stored row that no longer validates is left out (and logged), never injected.
 */
export async function selectPlaybookEntries(
  db: Db,
  employeeId: string,
  turnText: string,
  opts: { user_id?: string } = {},
): Promise<SelectedEntry[]> {
  const rows = await db
    .select()
    .from(playbookEntries)
    .where(and(eq(playbookEntries.agentId, employeeId), inArray(playbookEntries.state, [...LIVE_STATES])))
    .all();
  if (rows.length === 0) return [];
  const entries: PlaybookEntry[] = [];
  for (const row of rows) {
    try {
      entries.push(entryOfRow(row));
    } catch (err) {
      console.error(`conversations: playbook entry ${row.entryId} of ${employeeId} does not validate; not injected`, err);
    }
  }
  return selectEntries(entries, { tokens: await lastErrorSignals(db, employeeId, opts.user_id), text: turnText });
}

/** The signal tokens of the latest prediction error (the pair's, else the employee's); none before any. */
async function lastErrorSignals(db: Db, employeeId: string, userId: string | undefined): Promise<string[]> {
  const latest = (where: ReturnType<typeof and>) =>
    db.select({ detail: predictionLog.detail }).from(predictionLog).where(where).orderBy(desc(predictionLog.id)).limit(1).get();
  const row =
    (userId !== undefined ? await latest(and(eq(predictionLog.agentId, employeeId), eq(predictionLog.userId, userId))) : undefined) ??
    (await latest(and(eq(predictionLog.agentId, employeeId))));
  const error = row?.detail?.error as Record<string, unknown> | undefined;
  if (!error || typeof error.category !== "string") return [];
  return signalsFromError({
    category: error.category as ErrorCategory,
    unexpected_correction: error.unexpected_correction === true,
    unexpected_follow_up: error.unexpected_follow_up === true,
    topic_surprise: typeof error.topic_surprise === "number" ? error.topic_surprise : 0,
    inferred_satisfaction: typeof error.inferred_satisfaction === "number" ? error.inferred_satisfaction : 1,
    // The stored error keeps no metrics; feedback unknown raises no signal (unknown is not zero).
    actual: { feedback_signal: null },
  });
}
