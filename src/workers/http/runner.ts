import { noteRunnerRuntimes } from "../../jobs/runner-runtimes";
import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import type { FinishOutcome, LeaseRefOutcome } from "../../durable-objects/runner-inbox-rpc";
import { requireAuth } from "../middleware/require-auth";
import { readSectionCached } from "../../lib/config";
import { AppError } from "../../lib/errors";
import { validate } from "../middleware/validate";
import { runnerConfig } from "../../jobs/config";
import { callLeaseInbox, cancelPollEverywhere, inboxLayout, leaseRouted } from "../../jobs/inbox-routing";
import { checkResult, JOB_LIMITS } from "../../jobs/limits";
import { jobError, jobResult, RUNTIMES, type Runtime } from "../../jobs/payloads";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { storeAttachment } from "../../team/attachment-upload";
import { attachmentStoredSchema, finishSchema, leaseRefSchema, leaseSchema, pollCancelledSchema } from "../openapi/responses/runner";
import { archivedPath } from "../../jobs/attachments-job";

const pollId = z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, "8-64 characters of [A-Za-z0-9_-]");
/** Any runtime name a runner may offer; the ones this Worker does not know are reported back, not refused. */
const runtimeName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$/, "1-32 characters of [A-Za-z0-9_.-]");
const KNOWN_RUNTIMES: ReadonlySet<string> = new Set(RUNTIMES);

const leaseBody = z.strictObject({
  capacity: z.number().int().min(1).max(100),
  wait_ms: z.number().int().min(0).max(25_000).default(0),
  runtimes: z.array(runtimeName).min(1).max(32),
  /** Names this long-poll so a runner that abandons it can cancel it (`/polls/:poll_id/cancel`). */
  poll_id: pollId.optional(),
});
const jobParam = z.object({ id: z.string().min(1).max(64) });
const leaseRef = { lease_id: z.string().min(1).max(64) };

function staleLease(jobId: string, jobStatus: string): AppError {
  // `status` is the HTTP status in problem+json; the job's own status has a field of its own.
  return new AppError("stale_lease", `The lease is not current for job ${jobId} (job is ${jobStatus})`, {
    extra: { job_id: jobId, job_status: jobStatus },
  });
}

function leaseRefResponse(outcome: LeaseRefOutcome, jobId: string) {
  if (outcome.ok) return { job_id: jobId, lease_expires_at: outcome.lease_expires_at };
  if (outcome.reason === "not_found") throw new AppError("not_found", `job ${jobId} not found`);
  throw staleLease(jobId, outcome.status);
}

function finishResponse(outcome: FinishOutcome, jobId: string) {
  if (outcome.ok) return { job_id: jobId, status: outcome.status, duplicate: outcome.duplicate };
  if (outcome.reason === "not_found") throw new AppError("not_found", `job ${jobId} not found`);
  if (outcome.reason === "result_conflict") {
    throw new AppError("result_conflict", `Job ${jobId} was already completed under this lease with a different result`, {
      extra: { job_id: jobId, job_status: outcome.status },
    });
  }
  throw staleLease(jobId, outcome.status);
}

/** Refuses a result over JOB_LIMITS before any work: the job stays leased, as it was. */
function assertResultFits(result: unknown) {
  const check = checkResult(result);
  if (check.ok) return;
  if (check.limit === "result_bytes") {
    throw new AppError("payload_too_large", check.detail, { extra: { limit: check.limit, limit_bytes: JOB_LIMITS.resultBytes } });
  }
  throw new AppError("validation_failed", check.detail, {
    errors: [{ path: "result", message: check.detail }],
    extra: { limit: check.limit, limit_depth: JOB_LIMITS.resultDepth },
  });
}

/**
 * The runner protocol (API.md): lease, ack, extend, complete, fail — against the RunnerInbox of each
 * runtime pool (`src/jobs/inbox-routing.ts`): a lease fans out to the pools the runner offers, and
 * the lease id it hands out names its pool, so the calls that follow reach that pool without a D1 read.
 */
export const runnerRoutes = new Hono<AppEnv>()
  .use(requireAuth({ runner: true }))
  .post(
    "/lease",
    describe({
      summary: "Lease jobs of the runtimes this runner offers, long-polling up to wait_ms",
      responses: { 200: leaseSchema },
    }),
    validate("json", leaseBody),
    async (c) => {
      const body = c.req.valid("json");
      const known = [...new Set(body.runtimes.filter((r) => KNOWN_RUNTIMES.has(r)))] as Runtime[];
      const ignored = [...new Set(body.runtimes.filter((r) => !KNOWN_RUNTIMES.has(r)))];
      const [config, layout] = await Promise.all([readSectionCached(getDb(c.env.DB), runnerConfig), inboxLayout(c.env)]);
      // What this runner's host can run, for the capability matrix's prior; never on the poll's path.
      c.executionCtx.waitUntil(
        noteRunnerRuntimes(getDb(c.env.DB), c.var.principal.id, known, c.var.clock.now()).catch((err: unknown) =>
          console.error("runner: could not record the runtimes it offers", err),
        ),
      );
      const jobs = await leaseRouted(c.env, layout, {
        runnerId: c.var.principal.id,
        capacity: body.capacity,
        runtimes: known,
        waitMs: Math.min(body.wait_ms, config.max_wait_ms),
        visibilityMs: config.lease_visibility_ms,
        ackWindowMs: config.ack_window_ms,
        pollId: body.poll_id,
        now: c.var.clock.nowMs(),
      });
      return c.json({ jobs, ignored_runtimes: ignored, settings: { keep_failed_work_hours: config.keep_failed_work_hours } });
    },
  )
  .post(
    "/polls/:poll_id/cancel",
    describe({
      summary: "Cancel a long-poll this runner abandoned; what it claimed goes back to the queue",
      responses: { 200: pollCancelledSchema },
    }),
    validate("param", z.object({ poll_id: pollId })),
    validate("json", z.strictObject({})),
    async (c) => {
      const { poll_id } = c.req.valid("param");
      const outcome = await cancelPollEverywhere(c.env, { pollId: poll_id, runnerId: c.var.principal.id, now: c.var.clock.nowMs() });
      return c.json({ poll_id, released: outcome.released });
    },
  )
  .post(
    "/jobs/:id/ack",
    describe({
      summary: "Acknowledge a provisional lease",
      responses: { 200: leaseRefSchema },
      errors: ["not_found", "stale_lease"],
    }),
    validate("param", jobParam),
    validate("json", z.strictObject(leaseRef)),
    async (c) => {
      const { id } = c.req.valid("param");
      const outcome = await callLeaseInbox<LeaseRefOutcome>(
        c.env,
        id,
        c.req.valid("json").lease_id,
        async (inbox, leaseId) => await inbox.ack({ jobId: id, leaseId, runnerId: c.var.principal.id, now: c.var.clock.nowMs() }),
      );
      return c.json(leaseRefResponse(outcome, id));
    },
  )
  .post(
    "/jobs/:id/extend",
    describe({ summary: "Extend a lease", responses: { 200: leaseRefSchema }, errors: ["not_found", "stale_lease"] }),
    validate("param", jobParam),
    validate("json", z.strictObject({ ...leaseRef, extend_ms: z.number().int().min(1_000).max(3_600_000) })),
    async (c) => {
      const { id } = c.req.valid("param");
      const body = c.req.valid("json");
      const outcome = await callLeaseInbox<LeaseRefOutcome>(
        c.env,
        id,
        body.lease_id,
        async (inbox, leaseId) =>
          await inbox.extend({ jobId: id, leaseId, runnerId: c.var.principal.id, extendMs: body.extend_ms, now: c.var.clock.nowMs() }),
      );
      return c.json(leaseRefResponse(outcome, id));
    },
  )
  .post(
    "/jobs/:id/complete",
    describe({
      summary: "Complete a leased job with its result (the same completion again is a no-op)",
      responses: { 200: finishSchema },
      errors: ["not_found", "stale_lease", "result_conflict"],
    }),
    validate("param", jobParam),
    validate("json", z.strictObject({ ...leaseRef, result: jobResult })),
    async (c) => {
      const { id } = c.req.valid("param");
      const body = c.req.valid("json");
      assertResultFits(body.result);
      const outcome = await callLeaseInbox<FinishOutcome>(
        c.env,
        id,
        body.lease_id,
        async (inbox, leaseId) =>
          await inbox.complete({ jobId: id, leaseId, runnerId: c.var.principal.id, result: body.result, now: c.var.clock.nowMs() }),
      );
      return c.json(finishResponse(outcome, id));
    },
  )
  .post(
    "/jobs/:id/fail",
    describe({
      summary: "Fail a leased job; a retryable failure with attempts left goes back to the queue",
      responses: { 200: finishSchema },
      errors: ["not_found", "stale_lease"],
    }),
    validate("param", jobParam),
    validate("json", z.strictObject({ ...leaseRef, error: jobError.strict(), retryable: z.boolean() })),
    async (c) => {
      const { id } = c.req.valid("param");
      const body = c.req.valid("json");
      const outcome = await callLeaseInbox<FinishOutcome>(
        c.env,
        id,
        body.lease_id,
        async (inbox, leaseId) =>
          await inbox.fail({
            jobId: id,
            leaseId,
            runnerId: c.var.principal.id,
            error: body.error,
            retryable: body.retryable,
            now: c.var.clock.nowMs(),
          }),
      );
      return c.json(finishResponse(outcome, id));
    },
  )
  .put(
    "/jobs/:id/attachments",
    describe({
      summary: "Upload one file of an attachments_archive job into the employee's attachments bucket (body: the raw bytes)",
      responses: { 200: attachmentStoredSchema },
      errors: ["not_found", "stale_lease", "payload_too_large"],
    }),
    validate("param", jobParam),
    validate("query", z.strictObject({ ...leaseRef, declared: z.string().min(1).max(512), path: archivedPath })),
    validate("header", z.object({ "x-content-sha256": z.string().regex(/^[0-9a-f]{64}$/, "lower-case hex SHA-256") })),
    async (c) => {
      const { id } = c.req.valid("param");
      const query = c.req.valid("query");
      const stored = await storeAttachment(c.env, getDb(c.env.DB), {
        jobId: id,
        declared: query.declared,
        path: query.path,
        sha256: c.req.valid("header")["x-content-sha256"],
        contentLength: c.req.header("content-length"),
        body: () => c.req.arrayBuffer(),
        // The lease must be this runner's and current: an ack, which changes nothing for a job already running.
        checkLease: async () => {
          const outcome = await callLeaseInbox<LeaseRefOutcome>(
            c.env,
            id,
            query.lease_id,
            async (inbox, leaseId) => await inbox.ack({ jobId: id, leaseId, runnerId: c.var.principal.id, now: c.var.clock.nowMs() }),
          );
          leaseRefResponse(outcome, id);
        },
      });
      return c.json(stored);
    },
  );
