import { desc, eq, inArray, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { batchable } from "../db/raw";
import { guarded, isGuardFailure, isUniqueFailure } from "../db/guard";
import { councilTermMembers, councilTerms, nodes } from "../db/schema";
import { appendEvent } from "../lib/events";
import { newId } from "../lib/ids";
import type { Random } from "./random";
import { COUNCIL_RULES, DAY, type CouncilRules } from "./rules";
import { memberIneligibility, pickTopAndRandom, selectMembers } from "./selection";
import { loadMemberPool, toCandidate } from "./session-store";
import { efficiency, reelect, termCheck, type DissolutionReason, type TermMemberFacts } from "./terms";

export type TermRow = typeof councilTerms.$inferSelect;

export function activeTerm(db: Db) {
  return db.select().from(councilTerms).where(eq(councilTerms.status, "active")).get();
}

export async function termMembers(db: Db, termId: string): Promise<(TermMemberFacts & { joined_at: string; retained: boolean })[]> {
  const rows = await db
    .select({ m: councilTermMembers, n: nodes })
    .from(councilTermMembers)
    .innerJoin(nodes, eq(nodes.id, councilTermMembers.nodeId))
    .where(eq(councilTermMembers.termId, termId))
    .orderBy(councilTermMembers.joinedAt, councilTermMembers.nodeId)
    .all();
  return rows.map(({ m, n }) => ({
    node_id: m.nodeId,
    requests: m.requests,
    responses: m.responses,
    last_heartbeat_at: n.lastHeartbeatAt,
    webhook_verified: n.webhookVerified && n.webhookUrl !== null,
    reputation: n.reputation,
    joined_at: m.joinedAt,
    retained: m.retained,
  }));
}

function newTermStatements(
  db: Db,
  number: number,
  members: { node_id: string; retained: boolean }[],
  now: Date,
  detail: Record<string, unknown>,
) {
  const id = newId("term");
  const at = now.toISOString();
  const statements: BatchItem<"sqlite">[] = [
    db.insert(councilTerms).values({
      id,
      number,
      status: "active",
      startedAt: at,
      endsAt: new Date(now.getTime() + COUNCIL_RULES.termDays * DAY).toISOString(),
    }),
    db.insert(councilTermMembers).values(members.map((m) => ({ termId: id, nodeId: m.node_id, joinedAt: at, retained: m.retained }))),
    appendEvent(
      db,
      { type: "council.term_started", subject: id, payload: { term_id: id, number, members: members.map((m) => m.node_id), ...detail } },
      now,
    ),
  ];
  return { id, statements };
}

async function nextNumber(db: Db): Promise<number> {
  const last = await db.select({ n: councilTerms.number }).from(councilTerms).orderBy(desc(councilTerms.number)).limit(1).get();
  return (last?.n ?? 0) + 1;
}

/**
 * The term a new proposal uses: the active one while it is within 7 days and 10 sessions; one past
 * either is dissolved here and re-elected (the hourly tick checks the other triggers). With no
 * term, 5–9 members are selected from the eligible pool. Null when fewer than 5 are eligible.
 * Two proposals racing to form a term: the unique index on the active term lets one win.
 */
export async function ensureTerm(db: Db, now: Date, random: Random, rules: CouncilRules = COUNCIL_RULES): Promise<TermRow | null> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const term = await activeTerm(db);
    if (term) {
      const hard = termCheck(
        {
          ...term,
          started_at: term.startedAt,
          ends_at: term.endsAt,
          session_count: term.sessionCount,
          last_session_at: term.lastSessionAt,
          efficiency_samples: [],
        },
        [],
        now.getTime(),
        rules,
      ).filter((r) => r === "term_expired" || r === "session_cap");
      if (hard.length === 0) return term;
      await dissolveAndReelect(db, term, hard, now, random, rules);
      continue;
    }
    const pool = await loadMemberPool(db, now, rules);
    const picked = selectMembers(pool, { nowMs: now.getTime(), random, rules });
    if (!picked.ok) return null;
    const { statements } = newTermStatements(
      db,
      await nextNumber(db),
      picked.members.map((m) => ({ node_id: m.node_id, retained: false })),
      now,
      { formed_by: "selection" },
    );
    try {
      await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
    } catch (err) {
      if (!isUniqueFailure(err, "council_terms")) throw err;
      // another request formed the term first: use theirs
    }
  }
  return (await activeTerm(db)) ?? null;
}

/**
 * Dissolves a term and elects the next (seed 004 "改選"): the retained members (top 40% by
 * efficiency with a verified webhook and efficiency ≥ 0.3, still eligible) stay, every other member
 * cools down for 7 days, and the remaining seats are filled from the eligible pool by the 60/40
 * rule. Fewer than 5 in total: no new term is formed (the next proposal tries again).
 */
export async function dissolveAndReelect(
  db: Db,
  term: TermRow,
  reasons: DissolutionReason[],
  now: Date,
  random: Random,
  rules: CouncilRules = COUNCIL_RULES,
) {
  const members = await termMembers(db, term.id);
  const { retained: keep, cooled } = reelect(members, rules);
  const nowMs = now.getTime();
  const memberNodes = keep.length > 0 ? await db.select().from(nodes).where(inArray(nodes.id, keep)).all() : [];
  const retained = memberNodes.filter((n) => memberIneligibility(toCandidate(n), nowMs, rules) === null).map((n) => n.id);
  const cooling = [...cooled, ...keep.filter((id) => !retained.includes(id))];
  const cooldownUntil = new Date(nowMs + rules.cooldownDays * DAY).toISOString();
  const excluded = new Set([...retained, ...cooling]);
  const pool = (await loadMemberPool(db, now, rules)).filter((c) => !excluded.has(c.node_id));
  const fill = pickTopAndRandom(pool, rules.maxMembers - retained.length, nowMs, random, rules);
  const next = [...retained.map((id) => ({ node_id: id, retained: true })), ...fill.map((f) => ({ node_id: f.node_id, retained: false }))];
  const at = now.toISOString();
  const statements: BatchItem<"sqlite">[] = [
    batchable(
      db,
      sql`
      UPDATE council_terms SET status = ${guarded(sql`status = 'active'`, "dissolved")}, dissolved_at = ${at},
        dissolution_reasons = ${JSON.stringify(reasons)}
      WHERE id = ${term.id}`,
    ),
  ];
  if (cooling.length > 0) statements.push(db.update(nodes).set({ cooldownUntil, updatedAt: at }).where(inArray(nodes.id, cooling)));
  let nextTermId: string | null = null;
  if (next.length >= rules.minMembers) {
    const formed = newTermStatements(db, term.number + 1, next, now, { formed_by: "reelection", previous_term_id: term.id, retained });
    nextTermId = formed.id;
    statements.push(...formed.statements);
  }
  statements.push(
    appendEvent(
      db,
      {
        type: "council.term_dissolved",
        subject: term.id,
        payload: {
          term_id: term.id,
          reasons,
          efficiency: Object.fromEntries(members.map((m) => [m.node_id, efficiency(m)])),
          retained,
          cooled_down: cooling,
          cooldown_until: cooldownUntil,
          next_term_id: nextTermId,
          ...(nextTermId ? {} : { next_term: "insufficient_members" }),
        },
      },
      now,
    ),
  );
  try {
    await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  } catch (err) {
    // Another request dissolved it first: fine, the caller reloads the active term.
    if (!isGuardFailure(err, "council_terms.status")) throw err;
  }
  return { reasons, retained, cooled: cooling, next_term_id: nextTermId };
}

/** The hourly part of the `council` tick: check every dissolution trigger of the active term. */
export async function termTick(db: Db, now: Date, random: Random, rules: CouncilRules = COUNCIL_RULES) {
  const term = await activeTerm(db);
  if (!term) return { term: null };
  const members = await termMembers(db, term.id);
  const reasons = termCheck(
    {
      started_at: term.startedAt,
      ends_at: term.endsAt,
      session_count: term.sessionCount,
      last_session_at: term.lastSessionAt,
      efficiency_samples: term.efficiencySamples,
    },
    members,
    now.getTime(),
    rules,
  );
  if (reasons.length === 0) return { term: term.id, dissolved: false };
  return { term: term.id, dissolved: true, ...(await dissolveAndReelect(db, term, reasons, now, random, rules)) };
}
