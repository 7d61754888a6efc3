import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

export const JOB_STATUSES = ["queued", "leased", "completed", "failed", "dead"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/**
 * The durable record of every runner job. The RunnerInbox Durable Object owns the lease state
 * machine; this row follows it (through the inbox outbox) so owners and operators read one place.
 */
export const jobs = sqliteTable(
  "jobs",
  {
    id: text("id").primaryKey(),
    kind: text("kind").notNull(),
    runtime: text("runtime").notNull(),
    status: text("status", { enum: JOB_STATUSES }).notNull(),
    ownerKind: text("owner_kind").notNull(),
    ownerId: text("owner_id").notNull(),
    payload: text("payload", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    attempt: integer("attempt").notNull().default(0),
    leasedBy: text("leased_by"),
    result: text("result", { mode: "json" }).$type<Record<string, unknown>>(),
    error: text("error", { mode: "json" }).$type<{ code: string; message: string }>(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    finishedAt: text("finished_at"),
    // Outbox sequence of the last inbox notice applied: overlapping deliveries never move a row back.
    inboxSeq: integer("inbox_seq").notNull().default(0),
  },
  (t) => [index("jobs_owner_idx").on(t.ownerKind, t.ownerId), index("jobs_status_idx").on(t.status, t.createdAt)],
);

export const ATTEMPT_STATUSES = ["leased", "completed", "failed", "lease_expired", "runner_revoked", "released"] as const;
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

/**
 * One row per lease a job took, so a job's finished view shows its history apart from its outcome.
 * `released` marks a claim that never reached a live runner (it did not count as an attempt; the
 * next lease reuses the number). `inbox_seq` orders overlapping deliveries as on `jobs`.
 */
export const jobAttempts = sqliteTable(
  "job_attempts",
  {
    jobId: text("job_id").notNull(),
    attempt: integer("attempt").notNull(),
    runnerId: text("runner_id"),
    status: text("status", { enum: ATTEMPT_STATUSES }).notNull(),
    error: text("error", { mode: "json" }).$type<{ code: string; message: string }>(),
    startedAt: text("started_at").notNull(),
    endedAt: text("ended_at"),
    inboxSeq: integer("inbox_seq").notNull(),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.attempt] })],
);

/**
 * Which runtimes each runner offers, as its lease requests name them (refreshed at most once a minute
 * per runner): what the host fleet can run right now. The capability matrix's prior skips a runtime no
 * live runner offers (seed 002: runtimes without a CLI on the host are skipped).
 */
export const runnerRuntimes = sqliteTable(
  "runner_runtimes",
  {
    runnerId: text("runner_id").notNull(),
    runtime: text("runtime").notNull(),
    lastSeenAt: text("last_seen_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.runnerId, t.runtime] }), index("runner_runtimes_seen_idx").on(t.lastSeenAt)],
);
