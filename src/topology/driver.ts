import { and, eq, isNull, lte, or } from "drizzle-orm";
import { getDb, type Db } from "../db/client";
import { topologyDriver } from "../db/schema";
import type { Env } from "../env";
import { brokerAvailability } from "../approvals/channels";
import { readSection } from "../lib/config";
import { appendEvent } from "../lib/events";
import { randomHex } from "../lib/ids";
import { topologyConfig } from "./config";
import { observeOverrides } from "./observe";
import { proposeOnce, resolvePendingProposals } from "./proposals";

/** How long one tick may hold the driver before another may take over (clock time). */
const DRIVER_LEASE_MS = 5 * 60_000;

/**
 * The D5 driver tick. Off (the default): returns at once, reading nothing but the switch and writing
 * nothing. On: one tick at a time (a lease row; a concurrent tick reports `busy`), from cron only
 * when `tick_secs` have passed since the last one, from the admin endpoint at once. In order:
 * resolve answered proposals, judge overrides under observation, then — only if the ApprovalBroker
 * could reach a human — at most one new proposal. Without a reachable broker D5 refuses to propose
 * (`topology.refused`, reason `approval_broker_unavailable`); observation and rollback keep running,
 * because they only ever undo a route a human approved.
 */
export async function topologyTick(env: Env, now: Date, cron?: string): Promise<Record<string, unknown>> {
  const db = getDb(env.DB);
  const cfg = await readSection(db, topologyConfig);
  if (!cfg.enabled) return { enabled: false };
  // From cron (`cron` set) only when due; run by hand (no cron) at once.
  const lease = await claimDriver(db, now, cron !== undefined ? cfg.tick_secs : null);
  if (!lease.ok) return { enabled: true, ran: false, reason: lease.reason };
  // Wall time per phase, so a slow tick says where (Workers' clock moves on I/O, which is what these wait on).
  const ms: Record<string, number> = {};
  const timed = async <T>(phase: string, work: Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await work;
    } finally {
      ms[phase] = Math.round(performance.now() - started);
    }
  };
  try {
    // Whether a human is reachable does not depend on the rest; an override approved in this tick has
    // nothing to observe yet, so observation may follow resolution without waiting for the broker check.
    const [[resolved, observed], broker] = await Promise.all([
      timed("resolve", resolvePendingProposals(db, cfg, now)).then(
        async (r) => [r, await timed("observe", observeOverrides(db, cfg, now))] as const,
      ),
      timed("broker", brokerAvailability(env, db, now)),
    ]);
    if (!broker.available) {
      await appendEvent(
        db,
        {
          type: "topology.refused",
          subject: "topology",
          payload: { reason: "approval_broker_unavailable", deciders: broker.deciders, channels: broker.channels },
        },
        now,
      );
      return { enabled: true, ran: true, resolved, observed, proposal: null, refused: "approval_broker_unavailable", ms };
    }
    const proposal = await timed("propose", proposeOnce(env, db, cfg, now, lease.folded));
    return { enabled: true, ran: true, resolved, observed, proposal, ms };
  } finally {
    await db.update(topologyDriver).set({ leaseUntil: null, leaseToken: null }).where(eq(topologyDriver.leaseToken, lease.token));
  }
}

/**
 * Claims the driver with one conditional update: free (or its holder's lease lapsed) and, for cron,
 * due. Two ticks at once: exactly one claims it.
 */
async function claimDriver(
  db: Db,
  now: Date,
  dueAfterSecs: number | null,
): Promise<
  | { ok: true; token: string; folded: { foldedFrom: string | null; foldedThrough: string | null } }
  | { ok: false; reason: "busy" | "not_due" }
> {
  const at = now.toISOString();
  const token = randomHex(8);
  const free = or(isNull(topologyDriver.leaseUntil), lte(topologyDriver.leaseUntil, at));
  const due =
    dueAfterSecs === null
      ? undefined
      : or(isNull(topologyDriver.lastTickAt), lte(topologyDriver.lastTickAt, new Date(now.getTime() - dueAfterSecs * 1000).toISOString()));
  const [, claimed] = await db.batch([
    db.insert(topologyDriver).values({ id: 1 }).onConflictDoNothing(),
    db
      .update(topologyDriver)
      .set({ leaseUntil: new Date(now.getTime() + DRIVER_LEASE_MS).toISOString(), leaseToken: token, lastTickAt: at })
      .where(and(eq(topologyDriver.id, 1), free, due))
      .returning({ foldedFrom: topologyDriver.foldedFrom, foldedThrough: topologyDriver.foldedThrough }),
  ]);
  if (claimed[0]) return { ok: true, token, folded: claimed[0] };
  const row = await db.select().from(topologyDriver).where(eq(topologyDriver.id, 1)).get();
  return { ok: false, reason: row?.leaseUntil && row.leaseUntil > at ? "busy" : "not_due" };
}

/** Whether the driver would run now from cron (for views). */
export async function driverState(db: Db) {
  const row = await db.select().from(topologyDriver).where(eq(topologyDriver.id, 1)).get();
  return { last_tick_at: row?.lastTickAt ?? null, running: Boolean(row?.leaseToken) };
}
