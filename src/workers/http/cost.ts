import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { monthOf } from "../../jobs/holds";
import { AppError } from "../../lib/errors";
import { costLedger, LEDGER_GROUPS, monthDays } from "../../spend/ledger";
import { costByRole } from "../../team/ledger";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { costByRoleSchema } from "../openapi/responses/cost";
import { costLedgerSchema } from "../openapi/responses/spend";
import { requireAuth } from "../middleware/require-auth";
import { validate } from "../middleware/validate";

const utcDay = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, "a UTC day, YYYY-MM-DD")
  .refine((d) => {
    // Also run on input the pattern refused: a date that is none must not throw.
    const ms = Date.parse(`${d}T00:00:00Z`);
    return !Number.isNaN(ms) && new Date(ms).toISOString().startsWith(d);
  }, "a calendar day");
const ledgerQuery = z.object({
  group_by: z.enum(LEDGER_GROUPS).default("employee"),
  month: z
    .string()
    .regex(/^\d{4}-(0[1-9]|1[0-2])$/, "a UTC month, YYYY-MM")
    .optional(),
  /** Narrow the month (or replace it): the first and last UTC day, inclusive. */
  from: utcDay.optional(),
  to: utcDay.optional(),
});

/** `GET /v1/cost/by-role`: spend per role and model; `GET /v1/cost/ledger`: the cost ledger. Unknown usage is reported as unknown. */
export const costRoutes = new Hono<AppEnv>()
  .get(
    "/by-role",
    describe({ summary: "Spend per role and model (optionally for one task)", responses: { 200: costByRoleSchema } }),
    requireAuth({ operator: "viewer" }),
    validate("query", z.object({ episode_id: z.string().min(1).max(64).optional() })),
    async (c) => {
      const episode = c.req.valid("query").episode_id;
      return c.json({ ...(episode ? { episode_id: episode } : {}), by_role: await costByRole(getDb(c.env.DB), episode) });
    },
  )
  .get(
    "/ledger",
    describe({
      summary: "The cost ledger grouped by employee, model, runtime, project or day",
      description:
        'One row per completed job that reported usage or a price (docs/spend.md), summed per group over a UTC month (`month`, default the current one) or the days `from`..`to` (inclusive). A figure no job of the group reported is `"unknown"`, never 0; `jobs_without_cost` counts the jobs that priced nothing (a subscription runtime).',
      responses: { 200: costLedgerSchema },
      errors: ["validation_failed"],
    }),
    requireAuth({ operator: "viewer" }),
    validate("query", ledgerQuery),
    async (c) => {
      const q = c.req.valid("query");
      const month = monthDays(q.month ?? monthOf(c.var.clock.now()));
      const from = q.from ?? month.from;
      const to = q.to ?? month.to;
      if (from > to)
        throw new AppError("validation_failed", "The days are reversed", { errors: [{ path: "from", message: `${from} is after ${to}` }] });
      return c.json({ group_by: q.group_by, from, to, rows: await costLedger(getDb(c.env.DB), q.group_by, from, to) });
    },
  );
