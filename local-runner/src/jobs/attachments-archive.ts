/**
 * `attachments_archive` (seed 002, issue 39): a team goal was accepted; archive the files its accepted
 * round's TaskPackets named. Each path is checked and read by members/attachments.ts, the ones that
 * may be archived are uploaded under this job's lease, and the result lists what went in and what was
 * refused, with its reason. Nothing here runs a model. Archiving again (a retried lease) uploads the
 * same bytes under the same keys: nothing is duplicated.
 */
import { attachmentsArchivePayload } from "../../../src/jobs/attachments-job.ts";
import type { ArchivedFile, AttachmentsArchivePayload, RefusedFile } from "../../../src/jobs/attachments-job.ts";
import { findIsolatedWorkspace, useIsolatedWorkspace } from "../eval/isolated-workspace.ts";
import { ApiError, isTransient, StaleLeaseError } from "../api-client.ts";
import type { AttachmentUpload } from "../api-client.ts";
import { checkAttachment } from "../members/attachments.ts";
import { employeeWorkspace } from "../members/scaffold.ts";
import type { JobFailure, JobResult } from "../protocol.ts";
import type { JobContext, JobOutcome } from "./utility.ts";

export type AttachmentsArchiveResult = JobResult & { archived: ArchivedFile[]; refused: RefusedFile[] };

export async function runAttachmentsArchiveJob(job: { job_id: string; payload: unknown }, ctx: JobContext): Promise<JobOutcome> {
  const started = Date.now();
  const parsed = attachmentsArchivePayload.safeParse(job.payload);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
    return failed({ code: "unsupported_job", message: `invalid attachments_archive payload: ${detail}`, retryable: false });
  }
  const p = parsed.data;
  if (!ctx.uploadAttachment) return failed({ code: "unsupported_job", message: "this runner cannot upload attachments", retryable: false });
  // An eval arm's round worked in its isolated copy (held against the janitor while it is read).
  const release = p.workspace_key ? useIsolatedWorkspace(ctx.home, p.workspace_key) : () => {};
  try {
    const workspace = p.workspace_key ? await findIsolatedWorkspace(ctx.home, p.workspace_key) : employeeWorkspace(ctx.home, p.employee_id);
    return await archiveFrom(workspace, p, ctx, started);
  } finally {
    release();
  }
}

async function archiveFrom(
  workspace: string | undefined,
  p: AttachmentsArchivePayload,
  ctx: JobContext,
  started: number,
): Promise<JobOutcome> {
  const uploadAttachment = ctx.uploadAttachment!;
  const archived: ArchivedFile[] = [];
  const refused: RefusedFile[] = [];
  for (const declared of p.paths) {
    if (ctx.signal.aborted) return { kind: "aborted" };
    const checked = workspace === undefined ? undefined : await checkAttachment(workspace, declared, p.max_bytes).catch(() => undefined);
    if (!checked) {
      // The workspace itself is gone (never on this host, or removed): every name is missing.
      refused.push({ declared, reason: "missing" });
      continue;
    }
    if (!checked.ok) {
      refused.push({ declared, reason: checked.reason, ...(checked.bytes !== undefined ? { bytes: checked.bytes } : {}) });
      continue;
    }
    const upload: AttachmentUpload = { declared, path: checked.path, sha256: checked.sha256, content: checked.content };
    try {
      await uploadAttachment(upload);
    } catch (err) {
      if (ctx.signal.aborted) return { kind: "aborted" };
      // Lost the lease, or the Worker is unreachable: the job goes back to the queue and runs again.
      if (err instanceof StaleLeaseError || isTransient(err) || !(err instanceof ApiError)) {
        return failed({ code: "upload_failed", message: `uploading ${declared}: ${(err as Error).message}`, retryable: true });
      }
      refused.push({ declared, reason: "upload_refused" });
      continue;
    }
    archived.push({ declared, path: checked.path, bytes: checked.bytes, sha256: checked.sha256 });
  }
  const result: AttachmentsArchiveResult = {
    text: `archived ${archived.length}, refused ${refused.length}`,
    runtime: p.runtime,
    duration_ms: Date.now() - started,
    archived,
    refused,
  };
  return { kind: "completed", result };
}

function failed(failure: JobFailure): JobOutcome {
  return { kind: "failed", failure };
}
