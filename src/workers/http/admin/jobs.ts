import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../../db/client";
import { requireAuth } from "../../middleware/require-auth";
import { notFound } from "../../../lib/errors";
import { validate } from "../../middleware/validate";
import { utilityPayload } from "../../../jobs/payloads";
import { listAttempts } from "../../../jobs/outcomes";
import { findJob, submitJob } from "../../../jobs/submit";
import type { AppEnv } from "../../app-env";
import { describe } from "../../openapi/describe";
import { adminJobSchema, jobSubmittedSchema } from "../../openapi/responses/admin";

/** Diagnostics: run one prompt on the runner fleet and read back what happened. */
const diagnosticJob = utilityPayload.extend({ kind: z.literal("utility") }).strict();

export const jobsRoutes = new Hono<AppEnv>()
  .post(
    "/",
    describe({
      summary: "Submit a diagnostic utility job to the runner fleet",
      description:
        "The job is accepted once it is recorded. Its dispatch to the runner inbox follows the answer; a dispatch the queue refused is made from the job's row by the `leases` tick.",
      responses: { 202: jobSubmittedSchema },
    }),
    requireAuth({ operator: "admin" }),
    validate("json", diagnosticJob),
    async (c) => {
      const { kind, ...payload } = c.req.valid("json");
      const { job_id } = await submitJob(
        c.env,
        getDb(c.env.DB),
        { kind, payload, owner: { kind: "admin", id: c.var.principal.id } },
        c.var.clock.now(),
        // Recorded is accepted: the dispatch follows the answer, batched with the isolate's other submissions.
        { defer: (work) => c.executionCtx.waitUntil(work) },
      );
      return c.json({ job_id }, 202);
    },
  )
  .get(
    "/:id",
    describe({ summary: "Read a job and every lease it took", responses: { 200: adminJobSchema }, errors: ["not_found"] }),
    requireAuth({ operator: "admin" }),
    validate("param", z.object({ id: z.string().min(1).max(64) })),
    async (c) => {
      const db = getDb(c.env.DB);
      const id = c.req.valid("param").id;
      const [job, attempts] = await Promise.all([findJob(db, id), listAttempts(db, id)]);
      if (!job) throw notFound("job");
      return c.json({
        job_id: job.id,
        kind: job.kind,
        runtime: job.runtime,
        status: job.status,
        attempt: job.attempt,
        ...(job.result ? { result: job.result } : {}),
        ...(job.error ? { error: job.error } : {}),
        created_at: job.createdAt,
        updated_at: job.updatedAt,
        ...(job.finishedAt ? { finished_at: job.finishedAt } : {}),
        // Each lease the job took, with its own outcome: an earlier attempt's error stays here.
        attempts,
      });
    },
  );
