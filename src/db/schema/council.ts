import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const TERM_STATUSES = ["active", "dissolved"] as const;

/** A council term (seed 004): at most 9 members, 7 days or 10 sessions. At most one is active. */
export const councilTerms = sqliteTable(
  "council_terms",
  {
    id: text("id").primaryKey(),
    number: integer("number").notNull(),
    status: text("status", { enum: TERM_STATUSES }).notNull(),
    startedAt: text("started_at").notNull(),
    endsAt: text("ends_at").notNull(),
    // NOT NULL matters: a guarded increment writes NULL to abort its batch at the cap.
    sessionCount: integer("session_count").notNull().default(0),
    lastSessionAt: text("last_session_at"),
    dissolvedAt: text("dissolved_at"),
    dissolutionReasons: text("dissolution_reasons", { mode: "json" }).$type<string[]>(),
    // The term's mean member efficiency after each finished session, oldest first.
    efficiencySamples: text("efficiency_samples", { mode: "json" })
      .$type<number[]>()
      .notNull()
      .default(sql`'[]'`),
  },
  (t) => [
    uniqueIndex("council_terms_one_active")
      .on(t.status)
      .where(sql`status = 'active'`),
  ],
);

/** Term membership and the counters its efficiency comes from (requests to respond, responses). */
export const councilTermMembers = sqliteTable(
  "council_term_members",
  {
    termId: text("term_id").notNull(),
    nodeId: text("node_id").notNull(),
    joinedAt: text("joined_at").notNull(),
    retained: integer("retained", { mode: "boolean" }).notNull().default(false),
    requests: integer("requests").notNull().default(0),
    responses: integer("responses").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.termId, t.nodeId] }), index("council_term_members_node_idx").on(t.nodeId)],
);

export const PROPOSAL_KINDS = ["general", "project"] as const;
export type ProposalKind = (typeof PROPOSAL_KINDS)[number];
export const PROPOSAL_STATUSES = [
  "prescreening",
  "deliberating",
  "rejected",
  "approved",
  "revise",
  "tabled",
  "abandoned",
  "vetoed",
] as const;
export type ProposalStatus = (typeof PROPOSAL_STATUSES)[number];

export interface PrescreenRecord {
  mode: "off" | "model";
  status: "skipped" | "pending" | "passed" | "rejected";
  job_id?: string;
  runtime?: string;
  /** Who produced the verdict: `off` (not model-reviewed), `model`, or why there was none. */
  source?: string;
  reason?: string;
  decided_at?: string;
  /** Mode `off`: why no model screened it (a `model_work` reason token), and the runtime nobody offered. */
  fell_back_because?: string;
  wanted_runtime?: string;
}

export const councilProposals = sqliteTable(
  "council_proposals",
  {
    id: text("id").primaryKey(),
    nodeId: text("node_id").notNull(),
    title: text("title").notNull(),
    body: text("body").notNull(),
    kind: text("kind", { enum: PROPOSAL_KINDS }).notNull(),
    project: text("project", { mode: "json" }).$type<{ name: string; summary: string; repo_name?: string }>(),
    status: text("status", { enum: PROPOSAL_STATUSES }).notNull(),
    sessionId: text("session_id"),
    prescreen: text("prescreen", { mode: "json" }).$type<PrescreenRecord>().notNull(),
    rejection: text("rejection", { mode: "json" }).$type<{ reason: string; detail?: string }>(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("council_proposals_node_idx").on(t.nodeId, t.createdAt), index("council_proposals_status_idx").on(t.status)],
);

/**
 * One deliberation. `state` is the whole state-machine value (members, amendments, deadlines,
 * decision, veto); dialogs, votes and the electorate are rows of their own because they grow.
 * `version` guards every save, `next_check_at` lets the minute tick find what is due.
 */
export const councilSessions = sqliteTable(
  "council_sessions",
  {
    id: text("id").primaryKey(),
    proposalId: text("proposal_id").notNull().unique(),
    termId: text("term_id"),
    proposerId: text("proposer_id").notNull(),
    phase: text("phase").notNull(),
    version: integer("version").notNull(),
    state: text("state", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    nextCheckAt: text("next_check_at"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("council_sessions_due_idx").on(t.nextCheckAt), index("council_sessions_created_idx").on(t.createdAt)],
);

export const councilDialogs = sqliteTable(
  "council_dialogs",
  {
    id: text("id").primaryKey(),
    sessionId: text("session_id").notNull(),
    seq: integer("seq").notNull(),
    nodeId: text("node_id").notNull(),
    role: text("role").notNull(),
    phase: text("phase").notNull(),
    dialogType: text("dialog_type").notNull(),
    content: text("content"),
    replyTo: text("reply_to"),
    amendmentType: text("amendment_type"),
    amendmentTarget: text("amendment_target"),
    amendmentContent: text("amendment_content"),
    createdAt: text("created_at").notNull(),
    /**
     * For a dialog the Worker wrote directly (src/council/direct-dialog.ts): the session's next progress
     * check this dialog moved forward, or '' when the check was already due sooner. Set, it fires the
     * trigger `council_dialogs_direct_effects` (migrations 0021, 0022), which makes that path's follow-up
     * writes in the same statement; NULL for the session object's dialogs, whose effects the object
     * writes itself.
     */
    checkDueAt: text("check_due_at"),
  },
  // The per-poster dialog cap counts a node's dialogs in a session on every post (issue 26: without it the count scans the session).
  (t) => [uniqueIndex("council_dialogs_seq_idx").on(t.sessionId, t.seq), index("council_dialogs_node_idx").on(t.sessionId, t.nodeId)],
);

/**
 * The seats of each session: its proposer is not here, its active members are (a replaced member's
 * seat is gone). Derived from `council_sessions.state`, never written by the application: the
 * triggers of migration 0026 rebuild a session's seats whenever its members change, in the same
 * statement. The direct dialog (src/council/direct-dialog.ts) checks a poster's seat here by key
 * instead of parsing the whole state JSON on every post (issue 41).
 */
export const councilSeats = sqliteTable(
  "council_seats",
  {
    sessionId: text("session_id").notNull(),
    nodeId: text("node_id").notNull(),
    role: text("role"),
    source: text("source"),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.nodeId] })],
);

/** One ballot per node per session: the primary key is the "second vote is 409" rule's backstop. */
export const councilVotes = sqliteTable(
  "council_votes",
  {
    sessionId: text("session_id").notNull(),
    nodeId: text("node_id").notNull(),
    dialogId: text("dialog_id").notNull(),
    kind: text("kind", { enum: ["member", "community"] }).notNull(),
    vote: text("vote", { enum: ["approve", "reject", "revise"] }).notNull(),
    weight: real("weight").notNull(),
    confidence: real("confidence").notNull(),
    conditions: text("conditions", { mode: "json" }).$type<string[]>().notNull(),
    reasoning: text("reasoning"),
    proposalHash: text("proposal_hash").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.nodeId] })],
);

/** Who may vote and with what weight, frozen in the statement that opens voting. */
export const councilElectorate = sqliteTable(
  "council_electorate",
  {
    sessionId: text("session_id").notNull(),
    nodeId: text("node_id").notNull(),
    kind: text("kind", { enum: ["member", "community"] }).notNull(),
    weight: real("weight").notNull(),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.nodeId] })],
);

export const governancePrinciples = sqliteTable(
  "governance_principles",
  {
    id: text("id").primaryKey(),
    statement: text("statement").notNull(),
    sourceSessionId: text("source_session_id").notNull().unique(),
    confidence: real("confidence").notNull(),
    status: text("status", { enum: ["active", "revoked"] }).notNull(),
    createdAt: text("created_at").notNull(),
    revokedAt: text("revoked_at"),
  },
  (t) => [index("governance_principles_status_idx").on(t.status, t.createdAt)],
);
