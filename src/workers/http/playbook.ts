import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { listRounds, roundDetail } from "../../evolution/aee-view";
import { ENTRY_STATES } from "../../evolution/playbook";
import {
  applyMigration,
  draftMigration,
  evalScaffold,
  migrationApplyBody,
  playbookView,
  retireBody,
  retireEntry,
} from "../../evolution/playbook-ops";
import { requireAuth } from "../middleware/require-auth";
import { validate } from "../middleware/validate";
import { employeeId } from "../../tasks/employees";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import {
  aeeRoundDetailSchema,
  aeeRoundListSchema,
  evalScaffoldSchema,
  migrationAppliedSchema,
  migrationDraftSchema,
  playbookRetireSchema,
  playbookViewSchema,
} from "../openapi/responses/employees-evolution";

const idParam = z.object({ id: employeeId });
const entryParam = idParam.extend({
  entry_id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/),
});
const roundParam = idParam.extend({
  round_id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/),
});
const viewQuery = z.strictObject({ format: z.enum(["gene"]).optional(), state: z.enum(ENTRY_STATES).optional() });
const roundsQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(100).default(20) });

/**
 * An employee's playbook (seed 003 §12.3–12.7, API.md "Evolution"): mounted on `/v1/employees`. Read
 * by viewers (`?format=gene`: the GEP-gene export); changed by managers, always through the delta merge.
 */
export const playbookRoutes = new Hono<AppEnv>()
  .get(
    "/:id/playbook",
    describe({
      summary: "Read the employee's playbook (`?format=gene`: the GEP-gene export)",
      responses: { 200: playbookViewSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "viewer" }),
    validate("param", idParam),
    validate("query", viewQuery),
    async (c) => {
      const q = c.req.valid("query");
      return c.json(
        await playbookView(
          getDb(c.env.DB),
          c.req.valid("param").id,
          { ...(q.format ? { format: q.format } : {}), state: q.state },
          c.var.clock.now(),
        ),
      );
    },
  )
  .get(
    "/:id/playbook/rounds",
    describe({ summary: "The employee's AEE rounds, newest first", responses: { 200: aeeRoundListSchema } }),
    requireAuth({ operator: "viewer" }),
    validate("param", idParam),
    validate("query", roundsQuery),
    async (c) => {
      const { id } = c.req.valid("param");
      return c.json({ employee_id: id, rounds: await listRounds(getDb(c.env.DB), id, c.req.valid("query").limit) });
    },
  )
  .get(
    "/:id/playbook/rounds/:round_id",
    describe({
      summary: "One AEE round in full: its state, plan, champion, candidate and jobs",
      responses: { 200: aeeRoundDetailSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "viewer" }),
    validate("param", roundParam),
    async (c) => {
      const { id, round_id } = c.req.valid("param");
      return c.json(await roundDetail(getDb(c.env.DB), id, round_id));
    },
  )
  .post(
    "/:id/playbook/migrate-soul",
    describe({
      summary: "Draft playbook entries from the SOUL's rules (nothing is written)",
      responses: { 200: migrationDraftSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    async (c) => {
      return c.json(await draftMigration(getDb(c.env.DB), c.req.valid("param").id));
    },
  )
  .post(
    "/:id/playbook/migrate-soul/apply",
    describe({
      summary: "Apply reviewed SOUL-migration drafts as probation entries",
      responses: { 201: migrationAppliedSchema },
      errors: ["not_found", "conflict"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    validate("json", migrationApplyBody),
    async (c) => {
      const out = await applyMigration(
        getDb(c.env.DB),
        c.req.valid("param").id,
        c.req.valid("json"),
        c.var.principal.id,
        c.var.clock.now(),
      );
      return c.json(out, 201);
    },
  )
  .post(
    "/:id/playbook/:entry_id/retire",
    describe({
      summary: "Retire a playbook entry (the archive, never a delete)",
      responses: { 200: playbookRetireSchema },
      errors: ["not_found", "conflict"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", entryParam),
    validate("json", retireBody),
    async (c) => {
      const { id, entry_id } = c.req.valid("param");
      return c.json(await retireEntry(getDb(c.env.DB), id, entry_id, c.req.valid("json"), c.var.principal.id, c.var.clock.now()));
    },
  )
  .post(
    "/:id/eval-scaffold",
    describe({
      summary: "Draft eval cases (TOML) for the SOUL's rules; nothing is written",
      responses: { 200: evalScaffoldSchema },
      errors: ["not_found"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    async (c) => {
      return c.json(await evalScaffold(getDb(c.env.DB), c.req.valid("param").id));
    },
  );
