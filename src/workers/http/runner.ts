import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../db/client";
import { getRunnerInbox, type FinishOutcome } from "../../durable-objects/runner-inbox";
import { requireAuth } from "../../lib/auth";
import { readSection } from "../../lib/config";
import { AppError } from "../../lib/errors";
import { validate } from "../../lib/validation";
import { runnerConfig } from "../../jobs/config";
import { jobError, jobResult, RUNTIMES } from "../../jobs/payloads";
import type { AppEnv } from "../app-env";

const pollId = z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, "8-64 characters of [A-Za-z0-9_-]");

const leaseBody = z.object({
  capacity: z.number().int().min(1).max(100),
  wait_ms: z.number().int().min(0).max(25_000).default(0),
  runtimes: z.array(z.enum(RUNTIMES)).min(1).max(RUNTIMES.length),
  /** Names this long-poll so a runner that abandons it can cancel it (`/polls/:poll_id/cancel`). */
  poll_id: pollId.optional(),
});
const jobParam = z.object({ id: z.string().min(1).max(64) });
const leaseRef = { lease_id: z.string().min(1).max(64) };

function finishResponse(outcome: FinishOutcome, jobId: string) {
  if (outcome.ok) return { job_id: jobId, status: outcome.status, duplicate: outcome.duplicate };
  if (outcome.reason === "not_found") throw new AppError("not_found", `job ${jobId} not found`);
  throw new AppError("stale_lease", `The lease is not current for job ${jobId} (job is ${outcome.status})`, {
    extra: { status: outcome.status },
  });
}

/** The runner protocol (API.md): lease, extend, complete, fail — all against the RunnerInbox. */
export const runnerRoutes = new Hono<AppEnv>()
  .use(requireAuth({ runner: true }))
  .post("/lease", validate("json", leaseBody), async (c) => {
    const body = c.req.valid("json");
    const config = await readSection(getDb(c.env.DB), runnerConfig);
    const jobs = await getRunnerInbox(c.env).lease({
      runnerId: c.var.principal.id,
      capacity: body.capacity,
      runtimes: body.runtimes,
      waitMs: Math.min(body.wait_ms, config.max_wait_ms),
      visibilityMs: config.lease_visibility_ms,
      pollId: body.poll_id,
      now: c.var.clock.nowMs(),
    });
    return c.json({ jobs });
  })
  .post("/polls/:poll_id/cancel", validate("param", z.object({ poll_id: pollId })), async (c) => {
    const { poll_id } = c.req.valid("param");
    const outcome = await getRunnerInbox(c.env).cancelPoll({ pollId: poll_id, runnerId: c.var.principal.id, now: c.var.clock.nowMs() });
    return c.json({ poll_id, released: outcome.released });
  })
  .post(
    "/jobs/:id/extend",
    validate("param", jobParam),
    validate("json", z.object({ ...leaseRef, extend_ms: z.number().int().min(1_000).max(3_600_000) })),
    async (c) => {
      const { id } = c.req.valid("param");
      const body = c.req.valid("json");
      const outcome = await getRunnerInbox(c.env).extend({
        jobId: id,
        leaseId: body.lease_id,
        extendMs: body.extend_ms,
        now: c.var.clock.nowMs(),
      });
      if (outcome.ok) return c.json({ job_id: id, lease_expires_at: outcome.lease_expires_at });
      if (outcome.reason === "not_found") throw new AppError("not_found", `job ${id} not found`);
      throw new AppError("stale_lease", `The lease is not current for job ${id}`);
    },
  )
  .post("/jobs/:id/complete", validate("param", jobParam), validate("json", z.object({ ...leaseRef, result: jobResult })), async (c) => {
    const { id } = c.req.valid("param");
    const body = c.req.valid("json");
    const outcome = await getRunnerInbox(c.env).complete({
      jobId: id,
      leaseId: body.lease_id,
      result: body.result,
      now: c.var.clock.nowMs(),
    });
    return c.json(finishResponse(outcome, id));
  })
  .post(
    "/jobs/:id/fail",
    validate("param", jobParam),
    validate("json", z.object({ ...leaseRef, error: jobError, retryable: z.boolean() })),
    async (c) => {
      const { id } = c.req.valid("param");
      const body = c.req.valid("json");
      const outcome = await getRunnerInbox(c.env).fail({
        jobId: id,
        leaseId: body.lease_id,
        error: body.error,
        retryable: body.retryable,
        now: c.var.clock.nowMs(),
      });
      return c.json(finishResponse(outcome, id));
    },
  );
