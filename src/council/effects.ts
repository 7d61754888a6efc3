import { and, eq, inArray, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { batchable } from "../db/raw";
import { guarded } from "../db/guard";
import {
  councilDialogs,
  councilElectorate,
  councilProposals,
  councilTermMembers,
  councilVotes,
  governancePrinciples,
  nodes,
  swarmTasks,
  type ProjectStatus,
} from "../db/schema";
import { appendEvent } from "../lib/events";
import { prepareJob, type PreparedJob } from "../jobs/submit";
import { legalSources } from "../projects/lifecycle";
import { notifyNodesStatements, notifySelectedStatement } from "../nodes/events";
import { creditStatements, penaltyStatements, reputationStatements } from "../nodes/reputation";
import { reputationConfig, type ReputationConfig } from "../nodes/reputation-config";
import { sha256HexSync } from "./sha256";
import type { Effect } from "./machine-types";
import { DAY, type CouncilRules } from "./rules";
import type { SessionState } from "./session";
import { acceptedAmendments, swarmTaskBody } from "./synthesis";
import { crystallises } from "./tally";

/** Statements whose RETURNING rows are inserted node events (to be pushed after the batch). */
export interface EffectPlan {
  statements: BatchItem<"sqlite">[];
  /** Indexes into `statements` of node-event inserts. */
  notifyIndexes: number[];
  jobs: PreparedJob[];
}

/**
 * Statuses of a project that has started: a veto cannot take it back (the lifecycle has no council
 * move out of them), so a veto of its session is refused with `409 project_active`.
 */
export const STARTED_PROJECT: readonly ProjectStatus[] = ["active", "completed"];
/** The column a failed `require_project_not_started` guard names in its constraint error. */
export const PROJECT_STARTED_GUARD = "projects.updated_at";

/** Stable ids for what a session creates, so re-running an effect (a lapsed veto) finds the same rows. */
export const swarmTaskIdFor = (sessionId: string) => `task_${sha256HexSync(`swarm_task:${sessionId}`).slice(0, 16)}`;
export const principleIdFor = (sessionId: string) => `prin_${sha256HexSync(`principle:${sessionId}`).slice(0, 16)}`;

/**
 * The statement of a crystallised principle: the rule the council approved, i.e. the proposal's
 * title and text as voted on (accepted amendments included) and the conditions its voters
 * attached, bounded. The consensus (how the council got there, mostly the same template lines in
 * every session) stays in the session the principle names (`source_session_id`): in the statement
 * it buried the rule, and the contradiction checker could not find a principle's own proposal in it.
 */
export function principleStatement(state: SessionState): string {
  const amendments = acceptedAmendments(state).map((a) => `${a.type} ${a.target}: ${a.content}`);
  const conditions = state.decision?.conditions ?? [];
  return [
    `${state.proposal.title}: ${state.proposal.body}`,
    ...(amendments.length > 0 ? [`Amended: ${amendments.join("; ")}`] : []),
    ...(conditions.length > 0 ? [`Conditions: ${conditions.join("; ")}`] : []),
  ]
    .join("\n\n")
    .slice(0, 2_000);
}

/** Translates the machine's effects into statements for one atomic batch with the session's save (`version`: the one it creates). */
export function planEffects(
  db: Db,
  state: SessionState,
  version: number,
  effects: readonly Effect[],
  rules: CouncilRules,
  now: Date,
  /** The `reputation` policy, for `reputation` effects (its defaults when not given). */
  reputation?: ReputationConfig,
): EffectPlan {
  const plan: EffectPlan = { statements: [], notifyIndexes: [], jobs: [] };
  const at = now.toISOString();
  const push = (...items: BatchItem<"sqlite">[]) => plan.statements.push(...items);
  const notify = (items: BatchItem<"sqlite">[]) => {
    for (const item of items) {
      plan.notifyIndexes.push(plan.statements.length);
      plan.statements.push(item);
    }
  };
  // Keyed by the session version this save creates: a notice repeats only if the same save does.
  let seq = 0;
  const dedupe = (type: string) => `council:${state.session_id}:v${version}:${type}:${seq++}`;

  for (const e of effects) {
    switch (e.kind) {
      case "record_dialog": {
        const d = e.dialog;
        push(
          db.insert(councilDialogs).values({
            id: d.id,
            sessionId: state.session_id,
            seq: d.seq,
            nodeId: d.node_id,
            role: d.role,
            phase: d.phase,
            dialogType: d.dialog_type,
            content: d.content,
            replyTo: d.reply_to,
            amendmentType: d.amendment_type,
            amendmentTarget: d.amendment_target,
            amendmentContent: d.amendment_content,
            createdAt: d.created_at,
          }),
        );
        break;
      }
      case "record_vote": {
        const v = e.vote;
        push(
          db.insert(councilVotes).values({
            sessionId: state.session_id,
            nodeId: v.node_id,
            dialogId: v.dialog_id,
            kind: v.kind,
            vote: v.vote,
            weight: v.weight,
            confidence: v.confidence,
            conditions: v.conditions,
            reasoning: v.reasoning,
            proposalHash: v.proposal_hash,
            createdAt: v.created_at,
          }),
        );
        break;
      }
      case "notify":
        notify(notifyNodesStatements(db, e.to, { type: e.type, payload: e.payload, dedupe: dedupe(e.type) }, now));
        break;
      case "open_voting": {
        if (e.members.length > 0) {
          push(
            db
              .insert(councilElectorate)
              .values(e.members.map((m) => ({ sessionId: state.session_id, nodeId: m.node_id, kind: "member" as const, weight: m.weight })))
              .onConflictDoNothing(),
          );
        }
        // The community electorate is frozen by this one statement: eligible now, or never for this session.
        push(
          batchable(
            db,
            sql`
            INSERT INTO council_electorate (session_id, node_id, kind, weight)
            SELECT ${state.session_id}, n.id, 'community', ${e.community.weight} FROM nodes n
            WHERE n.reputation >= ${e.community.min_reputation} AND n.model_tier >= ${e.community.min_tier}
              AND n.suspended_at IS NULL
              AND n.id NOT IN (${sql.join(
                e.community.exclude.map((id) => sql`${id}`),
                sql`, `,
              )})
            ON CONFLICT DO NOTHING`,
          ),
        );
        notify(
          notifyNodesStatements(
            db,
            e.members.map((m) => m.node_id),
            {
              type: "council_vote",
              payload: { ...e.payload, weight: rules.memberWeight },
              dedupe: `council:${state.session_id}:council_vote`,
            },
            now,
          ),
        );
        notify([
          notifySelectedStatement(
            db,
            sql`SELECT node_id FROM council_electorate WHERE session_id = ${state.session_id} AND kind = 'community'`,
            {
              type: "council_community_vote",
              payload: { ...e.payload, weight: e.community.weight },
              dedupe: `council:${state.session_id}:council_community_vote`,
            },
            now,
          ),
        ]);
        break;
      }
      case "feed":
        push(
          appendEvent(
            db,
            { type: e.type, subject: state.session_id, payload: e.payload, ...(e.dedupe ? { dedupeKey: e.dedupe } : {}) },
            now,
          ),
        );
        break;
      case "term_counts":
        if (!state.term_id) break;
        if (e.requests.length > 0) {
          push(
            db
              .update(councilTermMembers)
              .set({ requests: sql`${councilTermMembers.requests} + 1` })
              .where(and(eq(councilTermMembers.termId, state.term_id), inArray(councilTermMembers.nodeId, e.requests))),
          );
        }
        if (e.responses.length > 0) {
          push(
            db
              .update(councilTermMembers)
              .set({ responses: sql`MIN(${councilTermMembers.requests}, ${councilTermMembers.responses} + 1)` })
              .where(and(eq(councilTermMembers.termId, state.term_id), inArray(councilTermMembers.nodeId, e.responses))),
          );
        }
        break;
      case "touch_node":
        push(db.update(nodes).set({ lastDialogAt: at }).where(eq(nodes.id, e.node_id)));
        break;
      case "submit_job": {
        const job = prepareJob(
          db,
          {
            kind: "utility",
            payload: { runtime: e.runtime, prompt: e.prompt, timeout_ms: e.timeout_ms, ...(e.model ? { model: e.model } : {}) },
            owner: { kind: "council_session", id: state.session_id },
          },
          now,
          e.job_id,
        );
        plan.jobs.push(job);
        push(...job.statements);
        break;
      }
      case "proposal_status":
        push(db.update(councilProposals).set({ status: e.status, updatedAt: at }).where(eq(councilProposals.id, state.proposal_id)));
        break;
      case "project_status":
        if (state.project_id) push(...projectMove(db, state.project_id, e.to, e.from, state.session_id, now));
        break;
      case "require_project_not_started":
        // Writes the row's own updated_at back, or NULL (aborting the whole batch) once it started.
        if (state.project_id) {
          const started = sql.join(
            STARTED_PROJECT.map((s) => sql`${s}`),
            sql`, `,
          );
          push(
            batchable(
              db,
              sql`UPDATE projects SET updated_at = ${guarded(sql`status NOT IN (${started})`, sql`updated_at`)} WHERE id = ${state.project_id}`,
            ),
          );
        }
        break;
      case "execute_decision":
        push(...executeDecision(db, state, rules, now));
        break;
      case "revoke_decision":
        push(
          db
            .update(swarmTasks)
            .set({ status: "revoked" })
            .where(and(eq(swarmTasks.sourceSessionId, state.session_id), eq(swarmTasks.status, "open"))),
          db
            .update(governancePrinciples)
            .set({ status: "revoked", revokedAt: at })
            .where(and(eq(governancePrinciples.sourceSessionId, state.session_id), eq(governancePrinciples.status, "active"))),
          appendEvent(db, { type: "council.effects_revoked", subject: state.session_id, payload: { session_id: state.session_id } }, now),
        );
        break;
      case "reputation":
        push(...sessionReputation(db, state, e.event, reputation ?? reputationConfig.schema.parse({}), now));
        break;
      case "term_sample":
        if (!state.term_id) break;
        push(
          batchable(
            db,
            sql`
            UPDATE council_terms SET efficiency_samples = json_insert(efficiency_samples, '$[#]',
              (SELECT AVG(MIN(1.0, CAST(responses AS REAL) / requests)) FROM council_term_members WHERE term_id = ${state.term_id} AND requests > 0))
            WHERE id = ${state.term_id}
              AND EXISTS (SELECT 1 FROM council_term_members WHERE term_id = ${state.term_id} AND requests > 0)`,
          ),
        );
        break;
    }
  }
  return plan;
}

/**
 * What a session does to reputation (the `reputation` effect). Every reference is the session id, so
 * a lapsed veto that re-runs a decision's effects credits nobody twice.
 * - decided: `session_participation` for each seated member who answered (a diverge or challenge
 *   dialog; a member replaced for silence did not), `vote_cast` for each ballot, and
 *   `proposal_approved` for the proposer of an approval, each capped per day;
 * - vetoed: `proposal_vetoed` charged to the proposer;
 * - veto_lapsed: that charge given back, exactly as it was applied.
 */
export function sessionReputation(
  db: Db,
  state: SessionState,
  event: "decided" | "vetoed" | "veto_lapsed",
  config: ReputationConfig,
  now: Date,
): BatchItem<"sqlite">[] {
  const sid = state.session_id;
  const detail = { session_id: sid, proposal_id: state.proposal_id };
  switch (event) {
    case "decided": {
      const answered = state.members.filter((m) => m.responded_at && !m.replaced_by).map((m) => ({ node_id: m.node_id, reference: sid }));
      return [
        ...creditStatements(db, config, "session_participation", answered, now, { detail }),
        ...creditStatements(
          db,
          config,
          "vote_cast",
          sql`SELECT node_id, ${sid} AS reference FROM council_votes WHERE session_id = ${sid}`,
          now,
          {
            detail,
          },
        ),
        ...(state.decision?.outcome === "approved"
          ? creditStatements(db, config, "proposal_approved", [{ node_id: state.proposer_id, reference: sid }], now, { detail })
          : []),
      ];
    }
    case "vetoed":
      return penaltyStatements(db, config, "proposal_vetoed", [{ node_id: state.proposer_id, reference: sid }], now, { detail });
    case "veto_lapsed": {
      const charged = sql`(SELECT -c.delta FROM reputation_ledger c WHERE c.node_id = ${state.proposer_id} AND c.source = 'proposal_vetoed' AND c.reference = ${sid})`;
      return reputationStatements(
        db,
        {
          source: "veto_lapsed",
          targets: [{ node_id: state.proposer_id, reference: sid }],
          amount: charged,
          cap: null,
          earns: false,
          when: sql`${charged} IS NOT NULL`,
          detail,
        },
        now,
      );
    }
  }
}

/**
 * A project moves only from the statuses given (a later lifecycle step of the projects feature is
 * never undone here). The event is written by the same condition, before the move, so it exists
 * exactly when the move happens.
 */
export function projectMove(
  db: Db,
  projectId: string,
  to: string,
  from: readonly string[],
  sessionId: string,
  now: Date,
): BatchItem<"sqlite">[] {
  const at = now.toISOString();
  // The projects feature's lifecycle table decides which of these moves exist (src/projects/lifecycle.ts).
  const legal = legalSources(to as ProjectStatus, from as ProjectStatus[], "council");
  if (legal.length === 0) return [];
  const fromList = sql.join(
    legal.map((s) => sql`${s}`),
    sql`, `,
  );
  return [
    batchable(
      db,
      sql`
      INSERT INTO events (type, subject, payload, created_at)
      SELECT 'project.status_changed', id, json_object('project_id', id, 'from', status, 'to', ${to}, 'by', 'council', 'session_id', ${sessionId}), ${at}
      FROM projects WHERE id = ${projectId} AND status IN (${fromList}) AND status <> ${to}`,
    ),
    batchable(
      db,
      sql`UPDATE projects SET status = ${to}, session_id = ${sessionId}, updated_at = ${at} WHERE id = ${projectId} AND status IN (${fromList})`,
    ),
  ];
}

/**
 * An approval carried out: a general proposal becomes a swarm task (90-day expiry, the proposal
 * with its accepted amendments and the consensus as its body); a confident approval (≥ 0.7) becomes a governance principle.
 * Both reopen (rather than duplicate) when a lapsed veto re-runs them.
 */
function executeDecision(db: Db, state: SessionState, rules: CouncilRules, now: Date): BatchItem<"sqlite">[] {
  const at = now.toISOString();
  const out: BatchItem<"sqlite">[] = [];
  const decision = state.decision!;
  if (state.kind === "general") {
    const id = swarmTaskIdFor(state.session_id);
    const body = swarmTaskBody(state, decision.consensus);
    out.push(
      db
        .insert(swarmTasks)
        .values({
          id,
          title: state.proposal.title,
          body,
          status: "open",
          // Offered to eligible nodes in turn (src/projects/dispatch.ts).
          dispatch: "offering",
          sourceSessionId: state.session_id,
          createdAt: at,
          expiresAt: new Date(now.getTime() + rules.swarmTaskDays * DAY).toISOString(),
        })
        .onConflictDoUpdate({ target: swarmTasks.id, set: { status: "open" }, setWhere: sql`${swarmTasks.status} = 'revoked'` }),
      appendEvent(
        db,
        { type: "swarm_task.created", subject: id, payload: { task_id: id, session_id: state.session_id, proposal_id: state.proposal_id } },
        now,
      ),
    );
  }
  if (crystallises(decision.outcome, decision.confidence, rules)) {
    const id = principleIdFor(state.session_id);
    out.push(
      db
        .insert(governancePrinciples)
        .values({
          id,
          statement: principleStatement(state),
          sourceSessionId: state.session_id,
          confidence: decision.confidence!,
          status: "active",
          createdAt: at,
        })
        .onConflictDoUpdate({ target: governancePrinciples.id, set: { status: "active", revokedAt: null } }),
      appendEvent(
        db,
        {
          type: "governance.principle_crystallized",
          subject: id,
          payload: { principle_id: id, session_id: state.session_id, confidence: decision.confidence },
        },
        now,
      ),
    );
  }
  return out;
}
