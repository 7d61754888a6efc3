import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

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
