import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { currentMatrix } from "../../eval/current";
import { matrixRequest, runView, startRun } from "../../eval/run";
import { loadSuites } from "../../eval/suites";
import { requireAuth } from "../middleware/require-auth";
import { notFound } from "../../lib/errors";
import { validate } from "../middleware/validate";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { currentMatrixSchema, evalSuitesSchema, matrixRunSchema, matrixRunStartedSchema } from "../openapi/responses/eval";

/** The capability matrix (issue 22): measurements, their reports, the matrix the composer reads, the suites. */
export const evalRoutes = new Hono<AppEnv>()
  .post(
    "/matrix",
    describe({
      summary: "Start a capability-matrix measurement",
      responses: { 202: matrixRunStartedSchema },
      errors: ["not_found", "conflict"],
    }),
    requireAuth({ operator: "manager" }),
    validate("json", matrixRequest),
    async (c) => {
      const out = await startRun(c.env, getDb(c.env.DB), c.req.valid("json"), c.var.principal.id, c.var.clock.now());
      return c.json(out, 202);
    },
  )
  .get(
    "/matrix",
    describe({
      summary: "The capability matrix the composer reads (the latest valid one)",
      responses: { 200: currentMatrixSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "viewer" }),
    async (c) => {
      const current = await currentMatrix(getDb(c.env.DB));
      if (!current) throw notFound("matrix (no measurement has written one yet)");
      return c.json(current);
    },
  )
  .get(
    "/matrix/:run_id",
    describe({
      summary: "A measurement's progress and declared resolution, and its report once done",
      responses: { 200: matrixRunSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "viewer" }),
    validate("param", z.object({ run_id: z.string().regex(/^evr_[0-9a-f]{16}$/) })),
    async (c) => {
      return c.json(await runView(getDb(c.env.DB), c.req.valid("param").run_id));
    },
  )
  .get(
    "/suites",
    describe({ summary: "The shipped eval suites and their cases", responses: { 200: evalSuitesSchema } }),
    requireAuth({ operator: "viewer" }),
    async (c) => {
      const loaded = loadSuites();
      if (!loaded.ok) return c.json({ ok: false, errors: loaded.errors }, 500);
      return c.json({
        suites: loaded.suites.map((s) => ({
          domain: s.domain,
          gold_pass: s.gold_pass,
          gold_fail: s.gold_fail,
          cases: s.cases.map((k) => ({
            case_id: k.id,
            title: k.title ?? null,
            criteria: k.acceptance_criteria.length,
            verifier: k.transcript !== undefined,
          })),
        })),
      });
    },
  );
