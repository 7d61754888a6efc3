import { Hono } from "hono";
import * as z from "zod";
import { getDb, type Db } from "../../../db/client";
import type { credentials } from "../../../db/schema";
import type { RunnerActivity } from "../../../durable-objects/runner-inbox-rpc";
import { revokeEverywhere, runnerActivityEverywhere } from "../../../jobs/inbox-routing";
import { requireAuth } from "../../middleware/require-auth";
import { credentialCursor, findCredential, listCredentials, mintCredential, revokeCredential } from "../../../lib/credentials";
import { notFound } from "../../../lib/errors";
import { appendEvent } from "../../../lib/events";
import { keysetPageQuery } from "../../../lib/paging";
import { label } from "../../../lib/validation";
import { validate } from "../../middleware/validate";
import type { AppEnv } from "../../app-env";
import { describe } from "../../openapi/describe";
import { runnerCreatedSchema, runnerPageSchema, runnerRevokedSchema, runnerSchema } from "../../openapi/responses/admin";

export const newRunner = z.strictObject({ name: label(100) });
const runnerParam = z.object({ id: z.string().min(1).max(64) });

export function runnerView(r: typeof credentials.$inferSelect, activity: RunnerActivity | undefined) {
  return {
    runner_id: r.id,
    name: r.name,
    created_at: r.createdAt,
    revoked_at: r.revokedAt,
    // never polled: unknown, not "long ago"
    last_poll_at: activity?.last_poll_at ?? null,
    leased_jobs: activity?.leased_jobs ?? 0,
  };
}

/** Mints a runner token with its `runner.created` event (the API's and the console's create). Shown once. */
export async function createRunnerToken(db: Db, name: string, by: string, now: Date) {
  const cred = await mintCredential(db, { kind: "runner", name }, now);
  await db.batch([
    cred.insert,
    appendEvent(db, { type: "runner.created", subject: cred.id, payload: { runner_id: cred.id, name, by } }, now),
  ]);
  return { runner_id: cred.id, name, token: cred.token };
}

export const runnersRoutes = new Hono<AppEnv>()
  .post(
    "/",
    describe({ summary: "Mint a runner token (shown once)", responses: { 201: runnerCreatedSchema } }),
    requireAuth({ operator: "admin" }),
    validate("json", newRunner),
    async (c) => {
      const { name } = c.req.valid("json");
      return c.json(await createRunnerToken(getDb(c.env.DB), name, c.var.principal.id, c.var.clock.now()), 201);
    },
  )
  // The fleet at a glance: every runner token, when it last asked for work, how many jobs it holds
  // (summed over the inboxes of every runtime pool).
  .get(
    "/",
    describe({ summary: "List runner tokens with their last poll and leased jobs", responses: { 200: runnerPageSchema } }),
    requireAuth({ operator: "viewer" }),
    validate("query", keysetPageQuery(credentialCursor)),
    async (c) => {
      const { limit, cursor } = c.req.valid("query");
      const [page, activity] = await Promise.all([
        listCredentials(getDb(c.env.DB), "runner", { limit, after: cursor }),
        runnerActivityEverywhere(c.env),
      ]);
      const byId = new Map(activity.map((a) => [a.runner_id, a]));
      return c.json({ runners: page.items.map((r) => runnerView(r, byId.get(r.id))), next_cursor: page.next_cursor });
    },
  )
  // One runner, so a client checking its own token need not page through the fleet.
  .get(
    "/:id",
    describe({ summary: "Read one runner token", responses: { 200: runnerSchema }, errors: ["not_found"] }),
    requireAuth({ operator: "viewer" }),
    validate("param", runnerParam),
    async (c) => {
      const { id } = c.req.valid("param");
      const row = await findCredential(getDb(c.env.DB), id);
      if (!row || row.kind !== "runner") throw notFound(`runner ${id}`);
      const activity = (await runnerActivityEverywhere(c.env)).find((a) => a.runner_id === id);
      return c.json(runnerView(row, activity));
    },
  )
  .delete(
    "/:id",
    describe({
      summary: "Revoke a runner token: its polls end and what it held goes back to the queue",
      responses: { 200: runnerRevokedSchema },
      errors: ["not_found", "payload_too_large"],
    }),
    requireAuth({ operator: "admin" }),
    validate("param", runnerParam),
    async (c) => {
      const row = await revokeCredential(getDb(c.env.DB), "runner", c.req.valid("param").id, c.var.principal.id, c.var.clock.now());
      // The token is refused from now on, but a long-poll it opened earlier is already inside the
      // inbox: tell every inbox (each pool), which ends that runner's polls and hands back what it held. Revoking
      // again repeats this, so a failure here is retried by repeating the request.
      const inbox = await revokeEverywhere(c.env, { runnerId: row.id, now: c.var.clock.nowMs() });
      return c.json({ runner_id: row.id, name: row.name, revoked_at: row.revokedAt, inbox });
    },
  );
