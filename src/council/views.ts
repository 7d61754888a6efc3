import { and, asc, desc, eq, lt, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { councilElectorate, councilProposals, councilSessions, councilTerms, events, projects } from "../db/schema";
import { AppError, notFound } from "../lib/errors";
import { absorbDialogs } from "./machine-dialog";
import { decompositionStage, ethicsStage, prescreenStage, synthesisStage } from "./model-work-view";
import type { ProposalRow } from "./proposals";
import { COUNCIL_RULES } from "./rules";
import { activeMembers, type SessionState } from "./session";
import { loadDialogs, loadSession, loadVotes, toDialogRecord } from "./session-store";
import { countBallots } from "./tally";
import { activeTerm, termMembers, type TermRow } from "./term-store";
import { efficiency } from "./terms";

/** The public proposal: no secrets in it (the prescreen's job id and verdict source are trail, not secrets). */
export function proposalView(p: ProposalRow) {
  return {
    proposal_id: p.id,
    node_id: p.nodeId,
    title: p.title,
    body: p.body,
    kind: p.kind,
    ...(p.project ? { project: p.project } : {}),
    status: p.status,
    session_id: p.sessionId,
    prescreen: p.prescreen,
    ...(p.rejection ? { rejection: p.rejection } : {}),
    created_at: p.createdAt,
    updated_at: p.updatedAt,
  };
}

export function termView(t: TermRow) {
  return {
    term_id: t.id,
    number: t.number,
    status: t.status,
    started_at: t.startedAt,
    ends_at: t.endsAt,
    session_count: t.sessionCount,
    last_session_at: t.lastSessionAt,
    efficiency_samples: t.efficiencySamples,
    ...(t.dissolvedAt ? { dissolved_at: t.dissolvedAt, dissolution_reasons: t.dissolutionReasons } : {}),
  };
}

export async function termDetail(db: Db, t: TermRow) {
  const members = await termMembers(db, t.id);
  return {
    ...termView(t),
    members: members.map((m) => ({
      node_id: m.node_id,
      efficiency: efficiency(m),
      requests: m.requests,
      responses: m.responses,
      joined_at: m.joined_at,
      retained: m.retained,
    })),
  };
}

function sessionSummary(s: {
  id: string;
  proposalId: string;
  phase: string;
  createdAt: string;
  updatedAt: string;
  state: Record<string, unknown>;
}) {
  const state = s.state as unknown as SessionState;
  return {
    session_id: s.id,
    proposal_id: s.proposalId,
    title: state.proposal.title,
    kind: state.kind,
    phase: s.phase,
    outcome: state.decision?.outcome ?? null,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
  };
}

// `created_at|id` of the last row of a page, exactly as `next_cursor` hands it out.
const SESSION_CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)\|(delib_[0-9a-f]{16})$/;

/**
 * Newest first; the cursor is the `created_at|id` of the last row seen. A cursor no page handed
 * out is a 422 naming `cursor` (for `/v1` and the `/a2a` history alike), never a silent empty page.
 */
export async function listSessions(db: Db, q: { limit: number; cursor?: string | undefined; phase?: string | undefined }) {
  const parsed = q.cursor === undefined ? undefined : SESSION_CURSOR.exec(q.cursor);
  if (parsed === null) {
    throw new AppError("validation_failed", "cursor must come from a previous next_cursor", {
      errors: [{ path: "cursor", message: "cursor must come from a previous next_cursor" }],
    });
  }
  const [createdAt, id] = parsed ? [parsed[1], parsed[2]] : [];
  const rows = await db
    .select()
    .from(councilSessions)
    .where(
      and(
        q.phase ? eq(councilSessions.phase, q.phase) : undefined,
        createdAt && id ? sql`(${councilSessions.createdAt}, ${councilSessions.id}) < (${createdAt}, ${id})` : undefined,
      ),
    )
    .orderBy(desc(councilSessions.createdAt), desc(councilSessions.id))
    .limit(q.limit + 1)
    .all();
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  return { sessions: page.map(sessionSummary), next_cursor: rows.length > q.limit && last ? `${last.createdAt}|${last.id}` : null };
}

export async function councilOverview(db: Db) {
  const term = await activeTerm(db);
  const recent = await listSessions(db, { limit: 20 });
  if (!term) return { term: null, members: [], sessions: recent.sessions };
  const detail = await termDetail(db, term);
  const { members, ...t } = detail;
  return { term: t, members, sessions: recent.sessions };
}

export async function listTerms(db: Db, q: { limit: number; cursor?: string }) {
  const before = q.cursor ? Number(q.cursor) : undefined;
  const rows = await db
    .select()
    .from(councilTerms)
    .where(before !== undefined ? lt(councilTerms.number, before) : undefined)
    .orderBy(desc(councilTerms.number))
    .limit(q.limit + 1)
    .all();
  const page = rows.slice(0, q.limit);
  return { terms: page.map(termView), next_cursor: rows.length > q.limit ? String(page[page.length - 1]!.number) : null };
}

export async function getTermDetail(db: Db, termId: string) {
  const term = await db.select().from(councilTerms).where(eq(councilTerms.id, termId)).get();
  if (!term) throw notFound(`term ${termId}`);
  return termDetail(db, term);
}

/**
 * The full public trail of a session (seed: "all council records are publicly observable"):
 * members and roles, every dialog, amendment and ballot, the live tally, the frozen electorate and
 * hash, deadlines, the decision with its synthesis source and ethics review, which model work ran
 * on a model and which fell back (`model_work`), and any veto.
 */
export async function sessionDetail(db: Db, sessionId: string) {
  const stored = await loadSession(db, sessionId);
  if (!stored) throw notFound(`session ${sessionId}`);
  const projectId = stored.state.project_id;
  const [dialogs, votes, electorate, proposal, project, requested] = await Promise.all([
    loadDialogs(db, sessionId),
    loadVotes(db, sessionId),
    db
      .select()
      .from(councilElectorate)
      .where(eq(councilElectorate.sessionId, sessionId))
      .orderBy(asc(councilElectorate.kind), asc(councilElectorate.nodeId))
      .all(),
    db
      .select({ prescreen: councilProposals.prescreen })
      .from(councilProposals)
      .where(eq(councilProposals.id, stored.state.proposal_id))
      .get(),
    projectId
      ? db
          .select({ decompState: projects.decompState, decompSource: projects.decompSource, decompReason: projects.decompReason })
          .from(projects)
          .where(eq(projects.id, projectId))
          .get()
      : undefined,
    projectId
      ? db
          .select({ payload: events.payload })
          .from(events)
          .where(and(eq(events.subject, projectId), eq(events.type, "project.decomposition_requested")))
          .orderBy(desc(events.id))
          .limit(1)
          .get()
      : undefined,
  ]);
  // Dialogs written directly since the session's last save are in the trail but not yet folded into
  // its state (machine-dialog.ts): fold them here too, so who has responded shows at once.
  const s = absorbDialogs(stored.state, dialogs.filter((d) => d.seq > stored.state.dialog_count).map(toDialogRecord), {
    rules: COUNCIL_RULES,
    config: { progress_debounce_ms: 0 },
  }).state;
  const tally = countBallots(votes.map((v) => ({ node_id: v.nodeId, vote: v.vote, weight: v.weight, confidence: v.confidence })));
  return {
    session_id: s.session_id,
    proposal_id: s.proposal_id,
    term_id: s.term_id,
    kind: s.kind,
    proposal: s.proposal,
    ...(s.project_id ? { project_id: s.project_id } : {}),
    phase: s.phase,
    phase_started_at: s.phase_started_at,
    created_at: s.created_at,
    proposer_id: s.proposer_id,
    members: [
      { node_id: s.proposer_id, role: "proposer" as const },
      ...s.members.map((m) => ({
        node_id: m.node_id,
        role: m.role,
        source: m.source,
        ...(m.responded_at ? { responded_at: m.responded_at } : {}),
        ...(m.replaced_by ? { replaced_by: m.replaced_by, replaced_at: m.replaced_at } : {}),
        ...(m.replaces ? { replaces: m.replaces } : {}),
      })),
    ],
    // Term members not seated because they were not eligible when the session opened, with why.
    skipped_members: s.skipped_members ?? [],
    devils_advocate: activeMembers(s).find((m) => m.role === "devils_advocate")?.node_id ?? null,
    seconded: s.seconded ?? null,
    replacement_rounds: s.replacement_rounds,
    dialogs: dialogs.map(toDialogRecord),
    amendments: s.amendments,
    votes: votes.map((v) => ({
      node_id: v.nodeId,
      kind: v.kind,
      vote: v.vote,
      weight: v.weight,
      confidence: v.confidence,
      conditions: v.conditions,
      reasoning: v.reasoning,
      proposal_hash: v.proposalHash,
      created_at: v.createdAt,
    })),
    tally: { approve: tally.approve, reject: tally.reject, revise: tally.revise, total: tally.total, votes: tally.votes },
    proposal_hash: s.proposal_hash ?? null,
    electorate: electorate.map((e) => ({ node_id: e.nodeId, kind: e.kind, weight: e.weight })),
    ...(s.decision ? { decision: s.decision } : {}),
    synthesis: s.synthesis
      ? {
          status: s.synthesis.status,
          job_id: s.synthesis.job_id ?? null,
          runtime: s.synthesis.runtime ?? null,
          source: s.synthesis.source ?? null,
          note: s.synthesis.note ?? null,
        }
      : null,
    // Which stages ran on a model and which fell back, and why (README "Model work").
    model_work: {
      prescreen: prescreenStage(proposal?.prescreen),
      synthesis: synthesisStage(s),
      ethics: ethicsStage(s),
      ...(projectId ? { decomposition: decompositionStage(requested?.payload, project) } : {}),
    },
    ...(s.veto ? { veto: s.veto } : {}),
    ...(s.end_reason ? { end_reason: s.end_reason } : {}),
    deadlines: s.deadlines,
    version: stored.version,
  };
}
