import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const CONVERSATION_STATUSES = ["open", "closed"] as const;
export type ConversationStatus = (typeof CONVERSATION_STATUSES)[number];

/**
 * A person talking to an employee (seed 003 §5.1, the channel reply handler): opened by a manager or
 * an integration acting for `user_id`, closed by a request or after `[conversations] idle_minutes`.
 * `source: batch` rows record transcripts that happened elsewhere (`POST /v1/conversations`).
 * `pending_job_id` is the employee's reply in flight (one at a time). `outcome` is what the prediction
 * engine made of it when it closed (prediction, error, action), set once with the close.
 */
export const conversations = sqliteTable(
  "conversations",
  {
    id: text("id").primaryKey(),
    employeeId: text("employee_id").notNull(),
    userId: text("user_id").notNull(),
    source: text("source", { enum: ["live", "batch"] }).notNull(),
    status: text("status", { enum: CONVERSATION_STATUSES }).notNull(),
    openedBy: text("opened_by").notNull(),
    pendingJobId: text("pending_job_id"),
    turnCount: integer("turn_count").notNull().default(0),
    createdAt: text("created_at").notNull(),
    lastActivityAt: text("last_activity_at").notNull(),
    closedAt: text("closed_at"),
    closeReason: text("close_reason"),
    outcome: text("outcome", { mode: "json" }).$type<Record<string, unknown>>(),
  },
  (t) => [
    index("conversations_employee_idx").on(t.employeeId, t.createdAt),
    index("conversations_open_idx").on(t.status, t.lastActivityAt),
  ],
);
export type ConversationRow = typeof conversations.$inferSelect;

/**
 * The turns of a conversation, in order (`seq` from 1). An assistant turn carries the job that
 * produced it (unique: a job's reply lands once however often its end is reported); a failed reply
 * is a turn too (`status: failed`, with the error), so a conversation never hangs on a dead job.
 */
export const conversationTurns = sqliteTable(
  "conversation_turns",
  {
    conversationId: text("conversation_id").notNull(),
    seq: integer("seq").notNull(),
    role: text("role", { enum: ["user", "assistant"] }).notNull(),
    content: text("content").notNull(),
    status: text("status", { enum: ["ok", "failed"] }).notNull(),
    feedback: text("feedback", { mode: "json" }).$type<{ polarity: "positive" | "negative"; strength: number }>(),
    jobId: text("job_id"),
    error: text("error", { mode: "json" }).$type<{ code: string; message: string }>(),
    at: text("at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.conversationId, t.seq] }), uniqueIndex("conversation_turns_job_idx").on(t.jobId)],
);
export type ConversationTurnRow = typeof conversationTurns.$inferSelect;

/**
 * The prediction engine's per-(user, agent) statistics (seed 003 §3.6). `version` is the optimistic
 * lock: an update lands only on the version it read, so two conversations of one pair closing at
 * once never lose one's update.
 */
export const userModels = sqliteTable(
  "user_models",
  {
    userId: text("user_id").notNull(),
    agentId: text("agent_id").notNull(),
    model: text("model", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    totalConversations: integer("total_conversations").notNull().default(0),
    version: integer("version").notNull(),
    lastUpdated: text("last_updated").notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.agentId] })],
);

/** One row per prediction (seed 003 §3.3), with what it was routed to. */
export const predictionLog = sqliteTable(
  "prediction_log",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    agentId: text("agent_id").notNull(),
    userId: text("user_id").notNull(),
    conversationId: text("conversation_id").notNull().unique(),
    compositeError: real("composite_error").notNull(),
    category: text("category").notNull(),
    action: text("action").notNull(),
    detail: text("detail", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    timestamp: text("timestamp").notNull(),
  },
  (t) => [index("prediction_log_agent_idx").on(t.agentId, t.id), index("prediction_log_pair_idx").on(t.agentId, t.userId, t.id)],
);

/**
 * An employee's evolution bookkeeping (seed 003 §3.8–3.9, §5.2): the adaptive thresholds and the
 * metacognition window, the consecutive significant-or-worse counter, when it last triggered, and
 * until when its cooldown runs. `version` is its optimistic lock.
 */
export const evolutionState = sqliteTable("evolution_state", {
  agentId: text("agent_id").primaryKey(),
  thresholds: text("thresholds", { mode: "json" }).$type<Record<string, number>>().notNull(),
  metacognition: text("metacognition", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
  consecutiveSignificant: integer("consecutive_significant").notNull().default(0),
  predictions: integer("predictions").notNull().default(0),
  lastTriggerAt: text("last_trigger_at"),
  lastTriggerKind: text("last_trigger_kind"),
  cooldownUntil: text("cooldown_until"),
  version: integer("version").notNull(),
  updatedAt: text("updated_at").notNull(),
});

export const EVOLUTION_REQUEST_KINDS = ["reflection", "emergency_evolution"] as const;
export const EVOLUTION_REQUEST_STATUSES = ["refused", "accepted", "running", "done", "failed"] as const;

/**
 * Every reflection or evolution trigger, run or refused (seed 003 §6.4: nothing is dropped silently).
 * A refused one says why (`agent_locked`, `semaphore_full`, `cooldown`, `gvu_disabled`); an accepted
 * emergency evolution waits here for the evolution rounds to take it.
 */
export const evolutionRequests = sqliteTable(
  "evolution_requests",
  {
    id: text("id").primaryKey(),
    agentId: text("agent_id").notNull(),
    kind: text("kind", { enum: EVOLUTION_REQUEST_KINDS }).notNull(),
    status: text("status", { enum: EVOLUTION_REQUEST_STATUSES }).notNull(),
    reason: text("reason"),
    conversationId: text("conversation_id"),
    context: text("context").notNull(),
    jobId: text("job_id"),
    createdAt: text("created_at").notNull(),
    endedAt: text("ended_at"),
  },
  (t) => [index("evolution_requests_agent_idx").on(t.agentId, t.createdAt)],
);
export type EvolutionRequestRow = typeof evolutionRequests.$inferSelect;

/**
 * Lines the goal loop posts into a conversation the task came from (seed 002: "a team round's start
 * sends the originating conversation one progress line"). Apart from the turns on purpose: a notice
 * is not a turn of the dialogue (the turn sequence, the reply in flight and the prediction engine's
 * reading of the conversation are untouched). `key` makes a post idempotent (`round_started:<round>`).
 */
export const conversationNotices = sqliteTable(
  "conversation_notices",
  {
    key: text("key").primaryKey(),
    conversationId: text("conversation_id").notNull(),
    kind: text("kind", { enum: ["goal_progress"] }).notNull(),
    taskId: text("task_id").notNull(),
    roundId: text("round_id"),
    content: text("content").notNull(),
    at: text("at").notNull(),
  },
  (t) => [index("conversation_notices_conversation_idx").on(t.conversationId, t.at)],
);
export type ConversationNoticeRow = typeof conversationNotices.$inferSelect;
