/**
 * The packet attachments archive (seed 002, issue 39) on a real workspace: what a team goal's packets
 * named is re-checked against the disk and uploaded, or refused with its reason.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ATTACHMENT_MAX_BYTES as SHARED_MAX_BYTES } from "../../../src/jobs/attachments-job.ts";
import type { AttachmentUpload } from "../../../local-runner/src/api-client.ts";
import { ApiError, createApiClient, StaleLeaseError } from "../../../local-runner/src/api-client.ts";
import { runAttachmentsArchiveJob } from "../../../local-runner/src/jobs/attachments-archive.ts";
import type { AttachmentsArchiveResult } from "../../../local-runner/src/jobs/attachments-archive.ts";
import type { JobContext, JobOutcome } from "../../../local-runner/src/jobs/index.ts";
import { ATTACHMENT_MAX_BYTES } from "../../../local-runner/src/members/attachments.ts";
import { RECEIPT_MAX_BYTES } from "../../../local-runner/src/members/receipts.ts";
import { ensureIsolatedWorkspace } from "../../../local-runner/src/eval/isolated-workspace.ts";
import { tempDir } from "../helpers/paths.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function home() {
  const { dir, cleanup } = tempDir("crewplane-attachments-");
  cleanups.push(cleanup);
  const ws = join(dir, "agents", "emp_1");
  const outside = join(dir, "elsewhere");
  mkdirSync(join(ws, "notes"), { recursive: true });
  mkdirSync(outside, { recursive: true });
  return { home: dir, ws, outside };
}

/** The result of a job that completed (a failed or aborted one fails the test here). */
function resultOf(outcome: JobOutcome): AttachmentsArchiveResult {
  expect(outcome.kind).toBe("completed");
  return (outcome as Extract<JobOutcome, { kind: "completed" }>).result as AttachmentsArchiveResult;
}

const sha = (text: string | Buffer): string => createHash("sha256").update(text).digest("hex");

function payload(paths: string[], maxBytes = SHARED_MAX_BYTES) {
  return { runtime: "offline", employee_id: "emp_1", task_id: "tsk_1", round_id: "rnd_1", round: 2, paths, max_bytes: maxBytes };
}

async function archive(h: { home: string }, paths: string[], upload?: (file: AttachmentUpload) => Promise<void>, maxBytes?: number) {
  const uploads: AttachmentUpload[] = [];
  const ctx: JobContext = {
    runtimes: new Map(),
    home: h.home,
    signal: new AbortController().signal,
    uploadAttachment:
      upload ??
      (async (file) => {
        uploads.push(file);
      }),
  };
  const outcome = await runAttachmentsArchiveJob({ job_id: "job_1", payload: payload(paths, maxBytes) }, ctx);
  return { outcome, uploads };
}

describe("attachments_archive", () => {
  it("archives a file a shell command made, which no native Write event ever recorded", async () => {
    const h = home();
    execFileSync("sh", ["-c", "printf 'week one\\n' > notes/report.md"], { cwd: h.ws });
    const { outcome, uploads } = await archive(h, ["notes/report.md"]);
    expect(outcome.kind).toBe("completed");
    const result = resultOf(outcome);
    expect(result.archived).toEqual([{ declared: "notes/report.md", path: "notes/report.md", bytes: 9, sha256: sha("week one\n") }]);
    expect(result.refused).toEqual([]);
    expect(uploads).toHaveLength(1);
    expect(Buffer.from(uploads[0]!.content).toString()).toBe("week one\n");
    expect(uploads[0]!.sha256).toBe(sha("week one\n"));
  });

  it("refuses escapes, links out, directories, devices, missing files and the agent's internals, each with its reason", async () => {
    const h = home();
    writeFileSync(join(h.outside, "secret.txt"), "secret\n");
    symlinkSync(join(h.outside, "secret.txt"), join(h.ws, "notes/leak.md"));
    symlinkSync(h.outside, join(h.ws, "linked-dir"));
    mkdirSync(join(h.ws, "notes/folder"));
    execFileSync("mkfifo", [join(h.ws, "notes/pipe")]);
    writeFileSync(join(h.ws, "SOUL.md"), "# Identity\n");
    writeFileSync(join(h.ws, "CLAUDE.md"), "rules\n");
    mkdirSync(join(h.ws, ".claude"));
    writeFileSync(join(h.ws, ".claude/x"), "settings\n");
    mkdirSync(join(h.ws, "memory"));
    writeFileSync(join(h.ws, "memory/x"), "recall\n");
    mkdirSync(join(h.ws, "state"));
    writeFileSync(join(h.ws, "state/x"), "state\n");
    // A link inside the workspace that names the SOUL: the name it resolves to is what counts.
    symlinkSync(join(h.ws, "SOUL.md"), join(h.ws, "notes/soul-copy.md"));
    const { outcome, uploads } = await archive(h, [
      "../elsewhere/secret.txt",
      "notes/../../elsewhere/secret.txt",
      "notes/leak.md",
      "linked-dir/secret.txt",
      "notes/folder",
      "notes/pipe",
      "notes/absent.md",
      "SOUL.md",
      "CLAUDE.md",
      ".claude/x",
      "memory/x",
      "state/x",
      "./Memory/x",
      "notes/soul-copy.md",
      "/etc/passwd",
    ]);
    expect(uploads).toEqual([]);
    const result = resultOf(outcome);
    expect(result.archived).toEqual([]);
    expect(result.refused).toEqual([
      { declared: "../elsewhere/secret.txt", reason: "escapes_workspace" },
      { declared: "notes/../../elsewhere/secret.txt", reason: "escapes_workspace" },
      { declared: "notes/leak.md", reason: "symlink_escape" },
      { declared: "linked-dir/secret.txt", reason: "symlink_escape" },
      { declared: "notes/folder", reason: "not_regular_file" },
      { declared: "notes/pipe", reason: "not_regular_file" },
      { declared: "notes/absent.md", reason: "missing" },
      { declared: "SOUL.md", reason: "internal_path" },
      { declared: "CLAUDE.md", reason: "internal_path" },
      { declared: ".claude/x", reason: "internal_path" },
      { declared: "memory/x", reason: "internal_path" },
      { declared: "state/x", reason: "internal_path" },
      { declared: "./Memory/x", reason: "internal_path" },
      { declared: "notes/soul-copy.md", reason: "internal_path" },
      { declared: "/etc/passwd", reason: "invalid_path" },
    ]);
  });

  it("holds goal artifacts' size limit: over it is refused unread, at it is archived", async () => {
    expect(ATTACHMENT_MAX_BYTES).toBe(RECEIPT_MAX_BYTES);
    expect(SHARED_MAX_BYTES).toBe(RECEIPT_MAX_BYTES);
    const h = home();
    writeFileSync(join(h.ws, "notes/big.bin"), "");
    truncateSync(join(h.ws, "notes/big.bin"), ATTACHMENT_MAX_BYTES + 1);
    writeFileSync(join(h.ws, "notes/small.md"), "12345");
    const { outcome, uploads } = await archive(h, ["notes/big.bin", "notes/small.md"]);
    const result = resultOf(outcome);
    expect(result.refused).toEqual([{ declared: "notes/big.bin", reason: "too_large", bytes: ATTACHMENT_MAX_BYTES + 1 }]);
    expect(result.archived.map((f) => f.path)).toEqual(["notes/small.md"]);
    expect(uploads.map((u) => u.path)).toEqual(["notes/small.md"]);
    // The job's own limit, when lower, holds too.
    const lower = await archive(h, ["notes/small.md"], undefined, 4);
    expect(resultOf(lower.outcome).refused).toEqual([{ declared: "notes/small.md", reason: "too_large", bytes: 5 }]);
  });

  it("archives one file once under the path it resolves to, whichever name the packet used", async () => {
    const h = home();
    writeFileSync(join(h.ws, "notes/a.md"), "alpha\n");
    symlinkSync("a.md", join(h.ws, "notes/alias.md"));
    const { outcome } = await archive(h, ["notes/a.md", "./notes/alias.md"]);
    const result = resultOf(outcome);
    expect(result.archived.map((f) => [f.declared, f.path])).toEqual([
      ["notes/a.md", "notes/a.md"],
      ["./notes/alias.md", "notes/a.md"],
    ]);
  });

  it("records a file the Worker refused and goes on; a lost connection hands the job back to run again", async () => {
    const h = home();
    writeFileSync(join(h.ws, "notes/a.md"), "alpha\n");
    writeFileSync(join(h.ws, "notes/b.md"), "beta\n");
    const refusing = await archive(h, ["notes/a.md", "notes/b.md"], async (file) => {
      if (file.path === "notes/a.md") throw new ApiError(422, "validation_failed");
    });
    const result = resultOf(refusing.outcome);
    expect(result.refused).toEqual([{ declared: "notes/a.md", reason: "upload_refused" }]);
    expect(result.archived.map((f) => f.path)).toEqual(["notes/b.md"]);

    const unreachable = await archive(h, ["notes/a.md"], async () => {
      throw new ApiError(503, "unavailable");
    });
    expect(unreachable.outcome).toMatchObject({ kind: "failed", failure: { code: "upload_failed", retryable: true } });
  });

  it("refuses every name when the workspace is not on this host", async () => {
    const h = home();
    const uploads: AttachmentUpload[] = [];
    const outcome = await runAttachmentsArchiveJob(
      { job_id: "job_1", payload: { ...payload(["notes/a.md"]), employee_id: "emp_elsewhere" } },
      { runtimes: new Map(), home: h.home, signal: new AbortController().signal, uploadAttachment: async (f) => void uploads.push(f) },
    );
    expect(resultOf(outcome).refused).toEqual([{ declared: "notes/a.md", reason: "missing" }]);
    expect(uploads).toEqual([]);
  });

  it("archives an eval arm's files from its isolated workspace, not the employee's", async () => {
    const h = home();
    writeFileSync(join(h.ws, "notes/a.md"), "the employee's own\n");
    await ensureIsolatedWorkspace(h.home, { key: "arm-1", files: { "notes/a.md": "the arm's\n" } }, h.ws);
    const uploads: AttachmentUpload[] = [];
    const ctx: JobContext = {
      runtimes: new Map(),
      home: h.home,
      signal: new AbortController().signal,
      uploadAttachment: async (f) => void uploads.push(f),
    };
    const outcome = await runAttachmentsArchiveJob(
      { job_id: "job_1", payload: { ...payload(["notes/a.md"]), workspace_key: "arm-1" } },
      ctx,
    );
    expect(resultOf(outcome).archived).toEqual([expect.objectContaining({ path: "notes/a.md", sha256: sha("the arm's\n") })]);
    expect(Buffer.from(uploads[0]!.content).toString()).toBe("the arm's\n");
    const gone = await runAttachmentsArchiveJob({ job_id: "job_2", payload: { ...payload(["notes/a.md"]), workspace_key: "arm-2" } }, ctx);
    expect(resultOf(gone).refused).toEqual([{ declared: "notes/a.md", reason: "missing" }]);
  });

  it("uploads through the runner protocol: raw bytes under the job's lease, with their hash", async () => {
    const seen: { url: string; method: string; headers: Headers; body: Uint8Array }[] = [];
    const client = createApiClient({
      baseUrl: "http://worker.test/",
      token: "rt_1",
      fetch: async (url, init) => {
        seen.push({
          url: String(url),
          method: init!.method!,
          headers: new Headers(init!.headers),
          body: new Uint8Array(init!.body as Uint8Array),
        });
        return new Response(JSON.stringify({ job_id: "job_1", path: "notes/a.md", bytes: 6, sha256: sha("alpha\n") }), { status: 200 });
      },
    });
    const content = Buffer.from("alpha\n");
    await client.uploadAttachment!(
      { job_id: "job_1", lease_id: "lease_1" },
      { declared: "./notes/a.md", path: "notes/a.md", sha256: sha(content), content },
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]!.method).toBe("PUT");
    expect(seen[0]!.url).toBe(
      "http://worker.test/v1/runner/jobs/job_1/attachments?lease_id=lease_1&declared=.%2Fnotes%2Fa.md&path=notes%2Fa.md",
    );
    expect(seen[0]!.headers.get("authorization")).toBe("Bearer rt_1");
    expect(seen[0]!.headers.get("x-content-sha256")).toBe(sha(content));
    expect(Buffer.from(seen[0]!.body).toString()).toBe("alpha\n");

    const refusing = createApiClient({
      baseUrl: "http://worker.test",
      token: "rt_1",
      fetch: async () =>
        new Response(JSON.stringify({ type: "about:blank", title: "Conflict", status: 409, code: "stale_lease", detail: "not current" }), {
          status: 409,
          headers: { "content-type": "application/problem+json" },
        }),
    });
    await expect(
      refusing.uploadAttachment!({ job_id: "job_1", lease_id: "old" }, { declared: "a", path: "a", sha256: sha(content), content }),
    ).rejects.toBeInstanceOf(StaleLeaseError);
  });
});
