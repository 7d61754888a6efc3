import type { Db } from "../db/client";
import type { Env } from "../env";
import { attachmentsArchivePayload, isInternalPath } from "../jobs/attachments-job";
import { findJob } from "../jobs/submit";
import { toHex } from "../lib/hex";
import { AppError } from "../lib/errors";
import { attachmentKey } from "./attachments";

export interface AttachmentUpload {
  jobId: string;
  declared: string;
  path: string;
  sha256: string;
  contentLength: string | undefined;
  body: () => Promise<ArrayBuffer>;
  /** Throws unless the caller holds the job's current lease; called once the request itself checked out. */
  checkLease: () => Promise<void>;
}

/**
 * One file of an `attachments_archive` job into the employee's attachments bucket, under the job's
 * current lease. The Worker re-checks what it can without the disk: the job asked for this
 * name, the resolved path is not the agent's internals, the size is within the goal artifacts' limit,
 * and the bytes hash to what the runner read. The same file again overwrites its own key: an archive
 * that runs twice stores each file once.
 */
export async function storeAttachment(env: Pick<Env, "ATTACHMENTS">, db: Db, upload: AttachmentUpload) {
  const job = await findJob(db, upload.jobId);
  if (!job || job.kind !== "attachments_archive") throw new AppError("not_found", `attachments_archive job ${upload.jobId} not found`);
  const payload = attachmentsArchivePayload.parse(job.payload);
  if (!payload.paths.includes(upload.declared)) {
    throw new AppError("validation_failed", "The job did not ask for this path", {
      errors: [{ path: "declared", message: "not among the paths the accepted round's packets named" }],
    });
  }
  if (isInternalPath(upload.path)) {
    throw new AppError("validation_failed", "The agent's internals are never archived", {
      errors: [{ path: "path", message: "internal_path" }],
    });
  }
  const tooLarge = (bytes: number) =>
    new AppError("payload_too_large", `An attachment is at most ${payload.max_bytes} bytes (got ${bytes})`, {
      extra: { limit_bytes: payload.max_bytes },
    });
  const declaredLength = Number(upload.contentLength ?? "0");
  if (Number.isFinite(declaredLength) && declaredLength > payload.max_bytes) throw tooLarge(declaredLength);
  await upload.checkLease();
  const body = await upload.body();
  if (body.byteLength > payload.max_bytes) throw tooLarge(body.byteLength);
  const sha256 = toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", body)));
  if (sha256 !== upload.sha256) {
    throw new AppError("validation_failed", "The body does not hash to x-content-sha256", {
      errors: [{ path: "x-content-sha256", message: `the body's SHA-256 is ${sha256}` }],
    });
  }
  await env.ATTACHMENTS.put(attachmentKey(payload.employee_id, payload.task_id, upload.path), body, {
    httpMetadata: { contentType: "application/octet-stream" },
    customMetadata: { sha256, declared: upload.declared, job_id: upload.jobId },
  });
  return { job_id: upload.jobId, path: upload.path, bytes: body.byteLength, sha256 };
}
