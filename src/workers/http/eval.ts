import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../db/client";
import { currentMatrix } from "../../eval/current";
import { matrixRequest, runView, startRun } from "../../eval/run";
import { loadSuites } from "../../eval/suites";
import { requireAuth } from "../middleware/require-auth";
import { notFound } from "../../lib/errors";
import { validate } from "../middleware/validate";
import type { AppEnv } from "../app-env";

/** The capability matrix (issue 22): measurements, their reports, the matrix the composer reads, the suites. */
export const evalRoutes = new Hono<AppEnv>()
  .post("/matrix", requireAuth({ operator: "manager" }), validate("json", matrixRequest), async (c) => {
    const out = await startRun(c.env, getDb(c.env.DB), c.req.valid("json"), c.var.principal.id, c.var.clock.now());
    return c.json(out, 202);
  })
  .get("/matrix", requireAuth({ operator: "viewer" }), async (c) => {
    const current = await currentMatrix(getDb(c.env.DB));
    if (!current) throw notFound("matrix (no measurement has written one yet)");
    return c.json(current);
  })
  .get(
    "/matrix/:run_id",
    requireAuth({ operator: "viewer" }),
    validate("param", z.object({ run_id: z.string().regex(/^evr_[0-9a-f]{16}$/) })),
    async (c) => {
      return c.json(await runView(getDb(c.env.DB), c.req.valid("param").run_id));
    },
  )
  .get("/suites", requireAuth({ operator: "viewer" }), async (c) => {
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
  });
