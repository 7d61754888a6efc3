import { and, eq, gte, sql } from "drizzle-orm";
import { getDb, type Db } from "../db/client";
import { RUNTIMES, type Runtime } from "../db/runtimes";
import { teamPackets, teamRounds } from "../db/schema";
import type { Env } from "../env";
import {
  ATTACHMENT_MAX_BYTES,
  ATTACHMENT_MAX_PATHS,
  attachmentsArchiveResult,
  type ArchivedFile,
  type AttachmentsArchivePayload,
  type RefusedFile,
} from "../jobs/attachments-job";
import type { JobEnd } from "../jobs/job-end";
import { dispatchJob, prepareJob } from "../jobs/submit";
import { loadClock } from "../lib/clock";
import { appendEvent } from "../lib/events";
import { findEmployee } from "../tasks/employees";
import { findTask } from "../tasks/view";
import type { RoundState } from "./composer";
import { taskPacket } from "./packet";
import { listRounds, mutateRound, stateOf } from "./round-store";
import { findTeamSpec, type FrozenGoal } from "./spec-store";

/**
 * The packet attachments archive (seed 002, issue 39): "チーム goal が受理されると、TaskPacket に明示的に
 * 名前が挙がったファイルは … 従業員の attachments/ バケットにアーカイブされます". When a team goal is
 * accepted, the files its accepted round's packets named (`artifacts[].path` of every leg) are archived
 * by the runner that holds the workspace (an `attachments_archive` job: it re-checks each one is a
 * regular file inside the workspace, not the agent's internals, within the goal artifacts' size limit)
 * into the `ATTACHMENTS` bucket under `attachments/<employee>/<task>/<path>`. The record lives on the
 * accepted round's state (`attachments`), written with its event in one batch: requested once per
 * round (the round's version guards it), recorded once per job.
 */

export const ATTACHMENTS_OWNER = "team_attachments" as const;

export type AttachmentsRecord =
  | { status: "pending"; job_id: string; round: number; paths: string[]; requested_at: string }
  | {
      status: "archived";
      job_id?: string;
      round: number;
      paths: string[];
      requested_at: string;
      recorded_at: string;
      archived: ArchivedFile[];
      refused: RefusedFile[];
    }
  | {
      status: "failed";
      job_id: string;
      round: number;
      paths: string[];
      requested_at: string;
      recorded_at: string;
      error: { code: string; reason?: string };
    };

type WithAttachments = RoundState & { attachments?: AttachmentsRecord };

/** A job's owner id names the round it archives (apart from the round's own stage jobs, owned by `<round_id>`). */
const ownerIdOf = (roundId: string) => `${roundId}/attachments`;
const roundOfOwner = (ownerId: string) => ownerId.replace(/\/attachments$/, "");

/** The R2 key of an archived file: the employee's attachments/, by task, at its workspace path. */
export function attachmentKey(employeeId: string, taskId: string, path: string): string {
  return `attachments/${employeeId}/${taskId}/${path}`;
}

/**
 * The paths a round's packets named, each once, in leg and slot order (pure). A packet that does not
 * parse, or claims another task or round, names nothing (the composer already skipped it).
 */
export function namedPaths(rows: readonly { body: string }[], taskId: string, roundNo: number): string[] {
  const out = new Set<string>();
  for (const row of rows) {
    let json: unknown;
    try {
      json = JSON.parse(row.body);
    } catch {
      continue;
    }
    const parsed = taskPacket.safeParse(json);
    if (!parsed.success || parsed.data.goal_id !== taskId || parsed.data.round !== roundNo) continue;
    for (const a of parsed.data.artifacts) if (a.path !== undefined && out.size < ATTACHMENT_MAX_PATHS) out.add(a.path);
  }
  return [...out];
}

/** The round whose acceptance settled the task, when it was a team (or gray) round. */
function acceptedTeamRound(rounds: readonly RoundState[]): WithAttachments | undefined {
  const last = rounds.at(-1);
  return last && last.phase === "accepted" && last.mode !== "solo" ? (last as WithAttachments) : undefined;
}

/** The pool the archive is leased from: the runner that ran the round's executors holds the workspace. */
async function archiveWhere(db: Db, state: RoundState, employeeRuntime: Runtime): Promise<{ runtime: Runtime; workspaceKey?: string }> {
  const row = await findTeamSpec(db, state.task_id);
  const key = (row?.goal as FrozenGoal | null | undefined)?.workspace?.key;
  const spec = row?.spec as { roles?: { executor?: { runtime?: string } } } | null | undefined;
  const executor = spec?.roles?.executor?.runtime;
  const runtime =
    state.stages.some((s) => s.role === "executor") && executor && (RUNTIMES as readonly string[]).includes(executor)
      ? (executor as Runtime)
      : employeeRuntime;
  return { runtime, ...(key ? { workspaceKey: key } : {}) };
}

/**
 * Asks for the archive of an accepted team goal (idempotent: once per round, whoever calls). Called by
 * the goal loop right after it settles a task `done`, and by the team tick for any accepted round the
 * loop did not get to.
 */
export async function requestAttachmentsArchive(env: Env, taskId: string, now: Date): Promise<"requested" | "recorded" | "none"> {
  const db = getDb(env.DB);
  const task = await findTask(db, taskId);
  if (!task || task.status !== "done") return "none";
  const round = acceptedTeamRound((await listRounds(db, taskId)).map(stateOf));
  if (!round || round.attachments) return "none";
  const employee = await findEmployee(db, task.assignedTo);
  if (!employee) return "none";
  const rows = await db
    .select({ body: teamPackets.body })
    .from(teamPackets)
    .where(and(eq(teamPackets.taskId, taskId), eq(teamPackets.roundNo, round.round_no)))
    .orderBy(teamPackets.fromRole, teamPackets.toRole, teamPackets.slot)
    .all();
  const paths = namedPaths(rows, taskId, round.round_no);
  const at = now.toISOString();
  const { runtime, workspaceKey } = await archiveWhere(db, round, employee.runtime);
  const payload: AttachmentsArchivePayload & { runtime: Runtime } = {
    runtime,
    employee_id: employee.id,
    task_id: taskId,
    round_id: round.round_id,
    round: round.round_no,
    paths,
    max_bytes: ATTACHMENT_MAX_BYTES,
    ...(workspaceKey ? { workspace_key: workspaceKey } : {}),
  };
  const job = paths.length
    ? prepareJob(db, { kind: "attachments_archive", payload, owner: { kind: ATTACHMENTS_OWNER, id: ownerIdOf(round.round_id) } }, now)
    : undefined;
  const out = await mutateRound(db, round.round_id, "attachments_requested", now, (state) => {
    if ((state as WithAttachments).attachments) return null;
    // Nothing named: the record says so at once, and no job runs.
    const record: AttachmentsRecord = job
      ? { status: "pending", job_id: job.jobId, round: round.round_no, paths, requested_at: at }
      : { status: "archived", round: round.round_no, paths, requested_at: at, recorded_at: at, archived: [], refused: [] };
    return {
      state: { ...state, attachments: record } as RoundState,
      statements: [
        ...(job ? job.statements : []),
        appendEvent(
          db,
          {
            type: job ? "team.attachments_requested" : "team.attachments_archived",
            subject: taskId,
            payload: {
              task_id: taskId,
              employee_id: employee.id,
              round: round.round_no,
              round_id: round.round_id,
              paths,
              ...(job ? { job_id: job.jobId, runtime } : { archived: [], refused: [] }),
            },
            dedupeKey: `team.attachments_requested:${round.round_id}`,
          },
          now,
        ),
      ],
      result: record.status,
    };
  });
  if (!out) return "none";
  // A dispatch that fails leaves the job queued in D1: the leases tick hands it to the inbox later.
  if (job)
    await dispatchJob(env, job.message).catch((err: unknown) =>
      console.error(`attachments: dispatch of ${job.jobId} failed; the leases tick will`, err),
    );
  return job ? "requested" : "recorded";
}

/** How far back the team tick looks for an accepted round whose archive was never asked for. */
const BACKSTOP_WINDOW_MS = 24 * 60 * 60_000;

/**
 * The team tick's backstop: accepted team rounds of the last day whose archive was never asked for (a
 * process that stopped between the settle and the request). Older rounds are left alone: a workspace
 * a day on is no longer what the verifier and evaluator saw.
 */
export async function requestMissingArchives(env: Env, now: Date, limit = 20): Promise<number> {
  const db = getDb(env.DB);
  const since = new Date(now.getTime() - BACKSTOP_WINDOW_MS).toISOString();
  const rows = await db
    .select({ taskId: teamRounds.taskId })
    .from(teamRounds)
    .where(
      and(
        eq(teamRounds.phase, "accepted"),
        gte(teamRounds.endedAt, since),
        sql`json_extract(${teamRounds.state}, '$.mode') <> 'solo'`,
        sql`json_extract(${teamRounds.state}, '$.attachments') IS NULL`,
      ),
    )
    .limit(limit)
    .all();
  let requested = 0;
  for (const { taskId } of rows) if ((await requestAttachmentsArchive(env, taskId, now)) !== "none") requested++;
  return requested;
}

/**
 * Owner handler of `attachments_archive` jobs: records what was archived and refused (or why the job
 * failed) on the round, with its event, once per job. A file the result calls archived that the bucket
 * does not hold is recorded as refused (`upload_refused`): the record never claims a file it cannot serve.
 */
export async function onAttachmentsJobEnd(env: Env, end: JobEnd): Promise<void> {
  const db = getDb(env.DB);
  const now = (await loadClock(env)).now();
  const at = now.toISOString();
  const roundId = roundOfOwner(end.owner.id);
  const pending = await db.select({ state: teamRounds.state }).from(teamRounds).where(eq(teamRounds.id, roundId)).get();
  const record = (pending?.state as WithAttachments | undefined)?.attachments;
  if (!record || record.status !== "pending" || record.job_id !== end.job_id) return;
  const task = await findTask(db, (pending!.state as unknown as RoundState).task_id);
  if (!task) return;

  let next: AttachmentsRecord;
  const parsed = end.status === "completed" ? attachmentsArchiveResult.safeParse(end.result ?? {}) : undefined;
  if (parsed?.success) {
    const archived: ArchivedFile[] = [];
    const refused: RefusedFile[] = [...parsed.data.refused];
    for (const file of parsed.data.archived) {
      const head = await env.ATTACHMENTS.head(attachmentKey(task.assignedTo, task.id, file.path));
      if (head && head.customMetadata?.sha256 === file.sha256 && head.size === file.bytes) archived.push(file);
      else refused.push({ declared: file.declared, reason: "upload_refused" });
    }
    next = { ...record, status: "archived", recorded_at: at, archived, refused };
  } else {
    const code = end.status === "completed" ? "result_unreadable" : (end.error?.code ?? end.status);
    next = { ...record, status: "failed", recorded_at: at, error: { code, ...(end.reason ? { reason: end.reason } : {}) } };
  }
  await mutateRound(db, roundId, "attachments_recorded", now, (state) => {
    const current = (state as WithAttachments).attachments;
    if (!current || current.status !== "pending" || current.job_id !== end.job_id) return null;
    return {
      state: { ...state, attachments: next } as RoundState,
      statements: [
        appendEvent(
          db,
          {
            type: next.status === "archived" ? "team.attachments_archived" : "team.attachments_failed",
            subject: task.id,
            payload: {
              task_id: task.id,
              employee_id: task.assignedTo,
              round: record.round,
              round_id: roundId,
              job_id: end.job_id,
              ...(next.status === "archived" ? { archived: next.archived, refused: next.refused } : {}),
              ...(next.status === "failed" ? { error: next.error } : {}),
            },
            dedupeKey: `team.attachments:${end.job_id}`,
          },
          now,
        ),
      ],
      result: null,
    };
  });
}

export interface TaskAttachmentsView {
  status: AttachmentsRecord["status"];
  round: number;
  named: string[];
  requested_at: string;
  job_id?: string;
  recorded_at?: string;
  archived?: (ArchivedFile & { download: string })[];
  refused?: RefusedFile[];
  error?: { code: string; reason?: string };
}

/** The archive as `GET /v1/tasks/:id` shows it (`attachments`); absent for a task that never had one. */
export async function attachmentsOfTask(db: Db, taskId: string): Promise<TaskAttachmentsView | undefined> {
  const rounds = (await listRounds(db, taskId)).map(stateOf) as WithAttachments[];
  const record = rounds.findLast((r) => r.attachments)?.attachments;
  if (!record) return undefined;
  const view: TaskAttachmentsView = { status: record.status, round: record.round, named: record.paths, requested_at: record.requested_at };
  if (record.job_id) view.job_id = record.job_id;
  if (record.status === "failed") return { ...view, recorded_at: record.recorded_at, error: record.error };
  if (record.status === "pending") return view;
  return {
    ...view,
    recorded_at: record.recorded_at,
    archived: record.archived.map((f) => ({ ...f, download: downloadPath(taskId, f.path) })),
    refused: record.refused,
  };
}

/** Where `GET /v1/tasks/:id/attachment` serves an archived file. */
export function downloadPath(taskId: string, path: string): string {
  return `/v1/tasks/${encodeURIComponent(taskId)}/attachment?${new URLSearchParams({ path })}`;
}

/** The archived file at `path` of a task, when its record lists it (the bucket is never read by a guessed key). */
export async function findAttachment(
  db: Db,
  taskId: string,
  path: string,
): Promise<{ employeeId: string; file: ArchivedFile } | undefined> {
  const task = await findTask(db, taskId);
  if (!task) return undefined;
  const view = await attachmentsOfTask(db, taskId);
  const file = view?.status === "archived" ? view.archived?.find((f) => f.path === path) : undefined;
  return file
    ? { employeeId: task.assignedTo, file: { declared: file.declared, path: file.path, bytes: file.bytes, sha256: file.sha256 } }
    : undefined;
}
