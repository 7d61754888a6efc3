import { sql } from "drizzle-orm";
import { index, integer, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Official projects and swarm tasks (seed 004). A project enters through a council proposal
 * (src/council creates the row and moves it on decisions); the projects feature (src/projects)
 * owns its lifecycle table, decomposition, repository and contributions.
 */
export const PROJECT_STATUSES = ["proposed", "council_review", "approved", "active", "completed", "archived"] as const;
export type ProjectStatus = (typeof PROJECT_STATUSES)[number];

/** `pending`: a decomposition job is out; `failed`: the last attempt gave no valid tasks; `done`: tasks exist. */
export const DECOMPOSITION_STATES = ["pending", "failed", "done"] as const;
export type DecompositionState = (typeof DECOMPOSITION_STATES)[number];

/** `unconfigured`: no forge (github_org or the App's secrets missing); `failed`: GitHub refused or failed. */
export const REPOSITORY_STATES = ["pending", "ready", "failed", "unconfigured"] as const;
export type RepositoryState = (typeof REPOSITORY_STATES)[number];

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
    // Decomposition into swarm tasks (on approval). `decomp_next_at` is when the tick may try again
    // (null after the last allowed attempt: a manager or the proposer then submits one by hand).
    decompState: text("decomp_state", { enum: DECOMPOSITION_STATES }),
    decompJobId: text("decomp_job_id"),
    decompAttempts: integer("decomp_attempts").notNull().default(0),
    decompReason: text("decomp_reason"),
    decompDetail: text("decomp_detail"),
    decompNextAt: text("decomp_next_at"),
    decompSource: text("decomp_source"),
    decomposedAt: text("decomposed_at"),
    // The repository in the organisation, created on `active`.
    repoState: text("repo_state", { enum: REPOSITORY_STATES }),
    repoFullName: text("repo_full_name"),
    repoUrl: text("repo_url"),
    repoDefaultBranch: text("repo_default_branch"),
    repoReason: text("repo_reason"),
    repoAttempts: integer("repo_attempts").notNull().default(0),
    repoNextAt: text("repo_next_at"),
  },
  (t) => [
    index("projects_status_idx").on(t.status, t.createdAt),
    index("projects_decomp_due_idx").on(t.status, t.decompNextAt),
    index("projects_repo_due_idx").on(t.repoState, t.repoNextAt),
    // Two projects never share a repository.
    uniqueIndex("projects_repo_full_name_idx").on(t.repoFullName),
  ],
);

export const SWARM_TASK_STATUSES = ["open", "claimed", "completed", "expired", "revoked"] as const;
export type SwarmTaskStatus = (typeof SWARM_TASK_STATUSES)[number];

/**
 * How a council task is being dispatched (seed 004: "enter the auto-dispatch pipeline"): `offering`,
 * offered to one eligible node at a time, each with a claim window; `open`, open to every eligible
 * node (offers ran out, or no eligible node was left). Null: not dispatched (project tasks).
 */
export const DISPATCH_STATES = ["offering", "open"] as const;
export type DispatchState = (typeof DISPATCH_STATES)[number];

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
    // A project task's place in its decomposition, its signals and its share (weights sum to ≤ 0.85).
    seq: integer("seq"),
    signals: text("signals", { mode: "json" }).$type<string[]>(),
    weight: real("weight"),
    // One claimant at a time; a claim lapses at `claim_expires_at` (the task is claimable again).
    claimedBy: text("claimed_by"),
    claimedAt: text("claimed_at"),
    claimExpiresAt: text("claim_expires_at"),
    completedBy: text("completed_by"),
    completedAt: text("completed_at"),
    summary: text("summary"),
    commitSha: text("commit_sha"),
    updatedAt: text("updated_at"),
    // Dispatch: the node holding the current offer until `offer_expires_at` (only it may claim
    // meanwhile), how many offers were made and to whom (each node is offered a task once).
    dispatch: text("dispatch", { enum: DISPATCH_STATES }),
    offeredTo: text("offered_to"),
    offerExpiresAt: text("offer_expires_at"),
    offerCount: integer("offer_count").notNull().default(0),
    offeredNodes: text("offered_nodes", { mode: "json" })
      .$type<string[]>()
      .notNull()
      .default(sql`'[]'`),
    // A completion counts as verified work (reputation) when it carries a recorded contribution commit
    // (`contribution`) or a manager verified it (the operator id).
    verifiedBy: text("verified_by"),
    verifiedAt: text("verified_at"),
  },
  (t) => [
    index("swarm_tasks_status_idx").on(t.status, t.expiresAt),
    index("swarm_tasks_dispatch_idx").on(t.dispatch, t.offerExpiresAt),
    index("swarm_tasks_claimed_by_idx").on(t.claimedBy, t.status),
    index("swarm_tasks_project_idx").on(t.projectId, t.seq),
    index("swarm_tasks_created_idx").on(t.createdAt, t.id),
  ],
);

/** One contribution: one commit on the task's (or the node's) branch of the project repository. */
export const projectContributions = sqliteTable(
  "project_contributions",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id").notNull(),
    taskId: text("task_id"),
    nodeId: text("node_id").notNull(),
    branch: text("branch").notNull(),
    commitSha: text("commit_sha").notNull(),
    commitUrl: text("commit_url").notNull(),
    parentSha: text("parent_sha").notNull(),
    message: text("message").notNull(),
    files: text("files", { mode: "json" }).$type<{ path: string; bytes: number }[]>().notNull(),
    attempts: integer("attempts").notNull(),
    prNumber: integer("pr_number"),
    prUrl: text("pr_url"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("project_contributions_commit_idx").on(t.projectId, t.commitSha),
    index("project_contributions_project_idx").on(t.projectId, t.createdAt),
    index("project_contributions_task_idx").on(t.taskId),
  ],
);
