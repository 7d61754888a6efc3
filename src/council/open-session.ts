import { inArray, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { batchable } from "../db/raw";
import { guarded, isGuardFailure } from "../db/guard";
import { councilSessions, nodes, projects, type ProposalKind } from "../db/schema";
import type { Env } from "../env";
import { appendEvent } from "../lib/events";
import { newId } from "../lib/ids";
import { getNode } from "../nodes/registry";
import { getCouncilSession } from "../durable-objects/council-session-rpc";
import type { CouncilConfig } from "./config";
import { planEffects } from "./effects";
import { invitePayload, nextCheckAt, openDiverge } from "./machine";
import type { Effect, MachineContext } from "./machine-types";
import { pickIndex, type Random } from "./random";
import { COUNCIL_RULES, MINUTE, type CouncilRules } from "./rules";
import { autoSecondReason, memberIneligibility, pickTopAndRandom, type Candidate } from "./selection";
import type { SessionMember, SessionState, SkippedMember } from "./session";
import { afterCommit, loadMemberPool, toCandidate } from "./session-store";
import { ensureTerm, termMembers } from "./term-store";

export interface ProposalForSession {
  id: string;
  nodeId: string;
  title: string;
  body: string;
  kind: ProposalKind;
  project: { name: string; summary: string; repo_name?: string } | null;
}

/**
 * Opens the deliberation of an accepted proposal: the current term's members (minus the proposer,
 * topped up from the eligible pool to 5), one devil's advocate at random, and either seconding or
 * (auto-second for a current member or reputation ≥ 60) straight to diverge. `head(sessionId, status)` are
 * the statements that move the proposal itself (its insert, or its move out of prescreening); they
 * share the batch, so a proposal is deliberating exactly when its session exists. A guard in them
 * that fails (the proposal moved meanwhile, a rate limit) aborts everything and is rethrown.
 */
export async function openSession(
  env: Env,
  db: Db,
  proposal: ProposalForSession,
  now: Date,
  random: Random,
  config: CouncilConfig,
  head: (sessionId: string, status: "deliberating" | "abandoned") => BatchItem<"sqlite">[],
  rules: CouncilRules = COUNCIL_RULES,
): Promise<{ session_id: string; phase: string }> {
  for (let attempt = 0; ; attempt++) {
    const built = await buildSession(db, proposal, now, random, config, rules);
    const status = built.state.phase === "abandoned" ? "abandoned" : "deliberating";
    const statements: BatchItem<"sqlite">[] = [...head(built.state.session_id, status), ...built.statements];
    try {
      const results = await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
      const offset = statements.length - built.statements.length;
      await afterCommit(
        env,
        [],
        built.notifyIndexes.map((i) => results[i + offset]),
      );
    } catch (err) {
      // The term filled up (10 sessions) under us: the next attempt dissolves it and re-elects.
      if (isGuardFailure(err, "council_terms.session_count") && attempt < 2) continue;
      throw err;
    }
    if (nextCheckAt(built.state)) {
      // The session exists now; its alarm is a convenience (the minute tick finds it by next_check_at).
      await getCouncilSession(env, built.state.session_id)
        .wake({ session_id: built.state.session_id, now: now.getTime() })
        .catch((err: unknown) =>
          console.error(`council: could not set the first alarm of ${built.state.session_id}; the tick will check it`, err),
        );
    }
    return { session_id: built.state.session_id, phase: built.state.phase };
  }
}

/**
 * Which of a term's members take their seat in a new session (pure): every member but the proposer,
 * less those `memberIneligibility` refuses now, each recorded with its reason token. Term order is kept.
 */
export function seatTermMembers(
  termNodes: readonly Candidate[],
  proposerId: string,
  nowMs: number,
  rules: CouncilRules = COUNCIL_RULES,
): { seated: string[]; skipped: SkippedMember[] } {
  const seated: string[] = [];
  const skipped: SkippedMember[] = [];
  for (const c of termNodes) {
    if (c.node_id === proposerId) continue;
    const why = memberIneligibility(c, nowMs, rules);
    if (why === null) seated.push(c.node_id);
    else skipped.push({ node_id: c.node_id, reason: why });
  }
  return { seated, skipped };
}

/** The term members' node rows as selection sees them, in the term's order (a member whose node is gone is left out). */
async function loadNodes(db: Db, ids: readonly string[]): Promise<Candidate[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .select()
    .from(nodes)
    .where(inArray(nodes.id, [...ids]))
    .all();
  const byId = new Map(rows.map((n) => [n.id, toCandidate(n)]));
  return ids.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : []));
}

async function buildSession(db: Db, proposal: ProposalForSession, now: Date, random: Random, config: CouncilConfig, rules: CouncilRules) {
  const at = now.toISOString();
  const nowMs = now.getTime();
  const proposer = await getNode(db, proposal.nodeId);
  const term = await ensureTerm(db, now, random, rules);
  const termIds = term ? (await termMembers(db, term.id)).map((m) => m.node_id) : [];
  // Term members are checked again as the session opens (seed 004: no heartbeat in 48 h → not
  // selected): one cooling down, below the seat floors, silent for 48 h or suspended is not seated.
  const { seated, skipped } = seatTermMembers(await loadNodes(db, termIds), proposal.nodeId, nowMs, rules);
  const members: SessionMember[] = seated.map((node_id) => ({ node_id, role: "member", source: "term", joined_at: at }));
  // Each skipped seat is filled from the eligible pool as selection fills seats (60/40), and the
  // session still has at least 5 members when the pool allows.
  const fill = Math.max(skipped.length, rules.minMembers - members.length);
  if (fill > 0) {
    const taken = new Set([proposal.nodeId, ...termIds]);
    const pool = (await loadMemberPool(db, now, rules)).filter((c) => !taken.has(c.node_id));
    for (const p of pickTopAndRandom(pool, fill, nowMs, random, rules)) {
      members.push({ node_id: p.node_id, role: "member", source: "pool", joined_at: at });
    }
  }
  const sessionId = newId("delib");
  const projectId = proposal.kind === "project" ? newId("proj") : undefined;
  const state: SessionState = {
    session_id: sessionId,
    proposal_id: proposal.id,
    term_id: term?.id ?? null,
    proposer_id: proposal.nodeId,
    kind: proposal.kind,
    proposal: { title: proposal.title, body: proposal.body, ...(proposal.project ? { project: proposal.project } : {}) },
    ...(projectId ? { project_id: projectId } : {}),
    phase: "seconding",
    phase_started_at: at,
    created_at: at,
    members,
    ...(skipped.length > 0 ? { skipped_members: skipped } : {}),
    replacement_rounds: 0,
    amendments: [],
    deadlines: {},
    dialog_count: 0,
    dialogs_by_node: {},
  };
  const fx: Effect[] = [];
  const ctx: MachineContext = { now, rules, config, random, newId };
  const enough = members.length >= rules.minMembers;
  if (!enough) {
    state.phase = "abandoned";
    state.end_reason = "insufficient_members";
    fx.push({
      kind: "feed",
      type: "council.phase_changed",
      payload: { session_id: sessionId, from: null, to: "abandoned", reason: "insufficient_members", members: members.length },
    });
  } else {
    members[pickIndex(random, members.length)]!.role = "devils_advocate";
    state.deadlines = {
      seconding: new Date(nowMs + rules.secondingMinutes * MINUTE).toISOString(),
      no_response: new Date(nowMs + rules.noResponseAbandonMinutes * MINUTE).toISOString(),
    };
    const autoReason = autoSecondReason({ node_id: proposal.nodeId, reputation: proposer.reputation }, termIds, rules);
    if (autoReason) {
      state.seconded = { by: null, at, auto: true, reason: autoReason };
      openDiverge(state, ctx, fx);
    } else {
      fx.push({
        kind: "notify",
        to: members.map((m) => m.node_id),
        type: "council_second_request",
        payload: { ...invitePayload(state), respond_by: state.deadlines.seconding },
      });
    }
  }
  const statements: BatchItem<"sqlite">[] = [
    db.insert(councilSessions).values({
      id: sessionId,
      proposalId: proposal.id,
      termId: state.term_id,
      proposerId: proposal.nodeId,
      phase: state.phase,
      version: 0,
      state: state as unknown as Record<string, unknown>,
      nextCheckAt: nextCheckAt(state),
      createdAt: at,
      updatedAt: at,
    }),
    appendEvent(
      db,
      {
        type: "council.session_opened",
        subject: sessionId,
        payload: {
          session_id: sessionId,
          proposal_id: proposal.id,
          term_id: state.term_id,
          phase: state.phase,
          members: members.map((m) => ({ node_id: m.node_id, role: m.role, source: m.source })),
          skipped_members: skipped,
          seconded: state.seconded ?? null,
        },
      },
      now,
    ),
  ];
  if (term && enough) {
    statements.push(
      batchable(
        db,
        sql`
        UPDATE council_terms SET
          session_count = ${guarded(sql`session_count < ${rules.termMaxSessions} AND status = 'active'`, sql`session_count + 1`)},
          last_session_at = ${at}
        WHERE id = ${term.id}`,
      ),
    );
  }
  if (projectId && proposal.project) {
    statements.push(
      db.insert(projects).values({
        id: projectId,
        name: proposal.project.name,
        summary: proposal.project.summary,
        status: enough ? "council_review" : "proposed",
        proposerId: proposal.nodeId,
        proposalId: proposal.id,
        sessionId,
        createdAt: at,
        updatedAt: at,
      }),
      appendEvent(
        db,
        {
          type: "project.proposed",
          subject: projectId,
          payload: { project_id: projectId, proposal_id: proposal.id, name: proposal.project.name },
        },
        now,
      ),
    );
    if (enough) {
      statements.push(
        appendEvent(
          db,
          {
            type: "project.status_changed",
            subject: projectId,
            payload: { project_id: projectId, from: "proposed", to: "council_review", by: "council", session_id: sessionId },
          },
          now,
        ),
      );
    }
  }
  const plan = planEffects(db, state, 0, fx, rules, now);
  const base = statements.length;
  statements.push(...plan.statements);
  return { state, statements, notifyIndexes: plan.notifyIndexes.map((i) => i + base) };
}
