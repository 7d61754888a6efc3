import { Hono, type Context, type MiddlewareHandler } from "hono";
import * as z from "zod";
import { openExport, type ExportScope } from "../../audit/export";
import { publishedKeys } from "../../audit/keys";
import { getDb } from "../../db/client";
import { getAuditSealer } from "../../durable-objects/audit-sealer-rpc";
import { archiveReader } from "../../events/retention";
import { requireAuth } from "../middleware/require-auth";
import { AppError } from "../../lib/errors";
import { validate } from "../middleware/validate";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { auditKeysSchema, auditStatusSchema } from "../openapi/responses/audit";

// At most 15 digits: every seq below 10^15 is a safe integer.
const seq = z
  .string()
  .regex(/^\d{1,15}$/, "must be a seq (1-15 digits)")
  .transform(Number)
  .refine((n) => n >= 1, "must be at least 1");
const exportQuery = z.strictObject({ from_seq: seq.optional(), to_seq: seq.optional() });

async function exportResponse(c: Context<AppEnv>, q: z.output<typeof exportQuery>, scope: ExportScope) {
  if (q.from_seq !== undefined && q.to_seq !== undefined && q.to_seq < q.from_seq) {
    throw new AppError("validation_failed", "to_seq is before from_seq", { errors: [{ path: "to_seq", message: "must be ≥ from_seq" }] });
  }
  const db = getDb(c.env.DB);
  const plan = await openExport(db, {
    scope,
    fromSeq: q.from_seq,
    toSeq: q.to_seq,
    now: c.var.clock.now(),
    // Events past the retention window export from the archive (issue 26).
    archive: archiveReader(db, c.env.EVENT_ARCHIVE),
  });
  return new Response(plan.stream, {
    headers: {
      "content-type": "application/x-ndjson; charset=utf-8",
      "cache-control": "no-store",
      "content-disposition": `attachment; filename="crewplane-audit-${scope}-${plan.fromSeq}-${plan.toSeq}.ndjson"`,
      ...(plan.nextFromSeq !== null ? { "x-next-from-seq": String(plan.nextFromSeq) } : {}),
    },
  });
}

const EXPORT_DESCRIPTION =
  "One JSON object a line, each with a `kind`: a `header` first, then the chain's entries and checkpoints from `from_seq` (default 1) to `to_seq` (default: the last checkpoint, else the head), then an `end` line. A range longer than one export holds stops early: the `X-Next-From-Seq` header (and the `end` line's `next_from_seq`) says where the next export starts.";
const EXPORT_RESPONSES = {
  200: {
    description: "The chain as NDJSON, as an attachment (`crewplane-audit-<scope>-<from>-<to>.ndjson`)",
    type: "application/x-ndjson",
  },
};

/** `/v1/audit`: the whole chain with every event (admin), and the sealer's state (viewer). */
export const auditRoutes = new Hono<AppEnv>()
  .get(
    "/export",
    describe({
      summary: "Download the audit chain with every event (NDJSON)",
      description: EXPORT_DESCRIPTION,
      responses: EXPORT_RESPONSES,
    }),
    requireAuth({ operator: "admin" }),
    validate("query", exportQuery),
    (c) => exportResponse(c, c.req.valid("query"), "admin"),
  )
  .get(
    "/status",
    describe({ summary: "The audit sealer's state: head, backlog, last checkpoint, signing", responses: { 200: auditStatusSchema } }),
    requireAuth({ operator: "viewer" }),
    async (c) => c.json(await getAuditSealer(c.env).status()),
  );

/** `/v1/public/audit/export`: the same chain for anyone; events that are not public appear as seq, prev_hash and hash only. */
export const publicAuditRoutes = new Hono<AppEnv>().get(
  "/export",
  describe({
    summary: "Download the audit chain for anyone (NDJSON); events that are not public show only their chain fields",
    description: EXPORT_DESCRIPTION,
    responses: EXPORT_RESPONSES,
  }),
  validate("query", exportQuery),
  (c) => exportResponse(c, c.req.valid("query"), "public"),
);

/** `/.well-known/crewplane-audit-keys`: every checkpoint key with its validity range (no token). */
export const auditWellKnownRoutes = new Hono<AppEnv>().get(
  "/crewplane-audit-keys",
  describe({ summary: "Every audit checkpoint key with its validity range", responses: { 200: auditKeysSchema } }),
  async (c) => {
    c.header("cache-control", "public, max-age=60");
    return c.json({ keys: await publishedKeys(getDb(c.env.DB)) });
  },
);

/** At most one poke per isolate per POKE_EVERY_MS; the sealer watches that long after each, so a throttled write is still sealed. */
export const POKE_EVERY_MS = 1_000;
let nextPokeAt = 0;

/**
 * Tells the AuditSealer that a request that may have written events has ended, without touching
 * the writers: after any request other than GET/HEAD/OPTIONS, at most once a second per isolate,
 * in `waitUntil` (never on the response's path). Its watch window covers the writes it skipped.
 */
export function auditPoke(): MiddlewareHandler<AppEnv> {
  return async function auditPoke(c, next) {
    await next();
    const method = c.req.method;
    if (method === "GET" || method === "HEAD" || method === "OPTIONS" || c.env.AUDIT_SEALING === "off") return;
    const now = Date.now();
    if (now < nextPokeAt) return;
    nextPokeAt = now + POKE_EVERY_MS;
    const poke = getAuditSealer(c.env)
      .poke({ windowMs: POKE_EVERY_MS })
      .catch((err: unknown) => console.error("audit poke failed", err));
    try {
      c.executionCtx.waitUntil(poke);
    } catch {
      // No execution context (a direct app.fetch in a test): the poke still runs, unawaited.
    }
  };
}
