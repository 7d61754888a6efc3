import type { JobStatus } from "../db/schema";

/**
 * The RunnerInbox's own SQLite schema, as ordered migrations. Objects created before versioning
 * already hold step 1's tables (every statement of it is IF NOT EXISTS), so they start at step 2.
 */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS jobs (
     job_id TEXT PRIMARY KEY,
     kind TEXT NOT NULL,
     runtime TEXT NOT NULL,
     payload TEXT NOT NULL,
     owner TEXT NOT NULL,
     status TEXT NOT NULL,
     attempt INTEGER NOT NULL DEFAULT 0,
     max_attempts INTEGER NOT NULL,
     lease_id TEXT,
     lease_expires_at INTEGER,
     leased_by TEXT,
     poll_id TEXT,
     result TEXT,
     error TEXT,
     enqueued_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL
   );
   CREATE INDEX IF NOT EXISTS jobs_ready ON jobs(status, runtime, enqueued_at);
   CREATE INDEX IF NOT EXISTS jobs_leases ON jobs(status, lease_expires_at);
   CREATE TABLE IF NOT EXISTS runners (runner_id TEXT PRIMARY KEY, last_poll_at INTEGER NOT NULL);
   CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, notice TEXT NOT NULL);
   -- Owner handlers still to call for jobs that ended (DESIGN.md "Model work"), each after its
   -- notice reached D1. next_at is real time; a call in progress holds it a while ahead.
   CREATE TABLE IF NOT EXISTS owner_calls (seq INTEGER PRIMARY KEY, job_end TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER NOT NULL);`,
  // Issue 5/6: provisional claims (acked, ack_deadline), per-job queue-time limit, attempt start,
  // finish time for pruning, revoked runners.
  `ALTER TABLE jobs ADD COLUMN acked INTEGER NOT NULL DEFAULT 1;
   ALTER TABLE jobs ADD COLUMN ack_deadline INTEGER;
   ALTER TABLE jobs ADD COLUMN max_queue_ms INTEGER NOT NULL DEFAULT 86400000;
   ALTER TABLE jobs ADD COLUMN queue_deadline INTEGER;
   ALTER TABLE jobs ADD COLUMN leased_at INTEGER;
   ALTER TABLE jobs ADD COLUMN finished_at INTEGER;
   UPDATE jobs SET queue_deadline = updated_at + max_queue_ms WHERE status = 'queued';
   UPDATE jobs SET finished_at = updated_at WHERE status IN ('completed', 'failed', 'dead');
   CREATE INDEX jobs_unacked ON jobs(ack_deadline) WHERE acked = 0;
   CREATE INDEX jobs_queue_deadline ON jobs(status, queue_deadline);
   CREATE INDEX jobs_finished ON jobs(finished_at) WHERE finished_at IS NOT NULL;
   CREATE TABLE revoked_runners (runner_id TEXT PRIMARY KEY, revoked_at INTEGER NOT NULL);`,
  // Issue 26: the claim's whole order (enqueued_at, then job_id) in the index, so taking the next
  // job of a runtime reads one index entry. Without job_id, SQLite sorted every job enqueued in the
  // same millisecond (a dispatch batch of up to 100) on each lease.
  `CREATE INDEX jobs_ready_order ON jobs(status, runtime, enqueued_at, job_id);
   DROP INDEX jobs_ready;`,
  // Spend control: whose work a job is (its employee, its project), and the hold keys in force
  // (`company`, `employee:<id>`, `project:<id>`). A queued job under a hold is `held`: never leased,
  // its queue-time limit stopped, back to `queued` (with a fresh limit) when the hold is lifted.
  `ALTER TABLE jobs ADD COLUMN employee_id TEXT;
   ALTER TABLE jobs ADD COLUMN project_id TEXT;
   CREATE INDEX jobs_employee ON jobs(employee_id, status) WHERE employee_id IS NOT NULL;
   CREATE TABLE holds (hold_key TEXT PRIMARY KEY, since INTEGER NOT NULL);`,
];

export function migrateInbox(storage: DurableObjectStorage): void {
  storage.transactionSync(() => {
    const sql = storage.sql;
    sql.exec(`CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`);
    const row = sql.exec<{ version: number }>(`SELECT version FROM schema_version`).toArray()[0];
    let version = row?.version ?? 0;
    if (!row) {
      // An object from before versioning has the foundation's tables already.
      const hasJobs = sql.exec(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'jobs'`).toArray().length > 0;
      version = hasJobs ? 1 : 0;
      sql.exec(`INSERT INTO schema_version (version) VALUES (?)`, version);
    }
    for (let step = version; step < MIGRATIONS.length; step++) sql.exec(MIGRATIONS[step]!);
    sql.exec(`UPDATE schema_version SET version = ?`, MIGRATIONS.length);
  });
}

/** `held`: queued, but under a hold (a paused employee, a project or company over budget); only the inbox knows it. */
export type InboxJobStatus = JobStatus | "held";

export interface JobRow extends Record<string, SqlStorageValue> {
  job_id: string;
  kind: string;
  runtime: string;
  payload: string;
  owner: string;
  status: InboxJobStatus;
  attempt: number;
  max_attempts: number;
  lease_id: string | null;
  lease_expires_at: number | null;
  leased_by: string | null;
  poll_id: string | null;
  /** Canonical JSON of the completed result (compared on a repeated completion). */
  result: string | null;
  error: string | null;
  enqueued_at: number;
  updated_at: number;
  /** 0 while a claim made after a long-poll waited is unacknowledged. */
  acked: number;
  ack_deadline: number | null;
  max_queue_ms: number;
  queue_deadline: number | null;
  leased_at: number | null;
  finished_at: number | null;
  employee_id: string | null;
  project_id: string | null;
}
