import { index, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * The part of official projects and swarm tasks (seed 004) that council decisions touch: a project
 * proposal's project and its lifecycle status, and the swarm task an approved general proposal
 * creates. Claims, contributions and the forge belong to the projects feature (issue 9), which
 * extends these tables.
 */
export const PROJECT_STATUSES = ["proposed", "council_review", "approved", "active", "completed", "archived"] as const;
export type ProjectStatus = (typeof PROJECT_STATUSES)[number];

export const projects = sqliteTable(
  "projects",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    summary: text("summary").notNull(),
    status: text("status", { enum: PROJECT_STATUSES }).notNull(),
    proposerId: text("proposer_id").notNull(),
    proposalId: text("proposal_id").notNull(),
    sessionId: text("session_id"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("projects_status_idx").on(t.status, t.createdAt)],
);

export const SWARM_TASK_STATUSES = ["open", "claimed", "completed", "expired", "revoked"] as const;

export const swarmTasks = sqliteTable(
  "swarm_tasks",
  {
    id: text("id").primaryKey(),
    title: text("title").notNull(),
    body: text("body").notNull(),
    status: text("status", { enum: SWARM_TASK_STATUSES }).notNull(),
    projectId: text("project_id"),
    sourceSessionId: text("source_session_id"),
    createdAt: text("created_at").notNull(),
    expiresAt: text("expires_at").notNull(),
  },
  (t) => [index("swarm_tasks_status_idx").on(t.status, t.expiresAt)],
);
