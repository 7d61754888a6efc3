import { and, desc, eq, gt, lt, lte, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import * as z from "zod";
import type { Db } from "../db/client";
import { approvals, events, type ApprovalRow, type ApprovalStatus } from "../db/schema";
import type { Env } from "../env";
import { AppError, notFound } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { appendEventWhere, insertWhere } from "../lib/guarded-insert";
import { newId } from "../lib/ids";
import type { ApprovalDeliveryMessage } from "../queues/approval-delivery-message";
import { actionHash, type ApprovalAction } from "./action-hash";
import { brokerAvailability } from "./channels";
import { approvalView, type ApprovalView } from "./view";

/*
 * The ApprovalBroker. Code calls `request` and `poll` (and `consume` when it carries an approved
 * action out); only a person calls `decide`, through the API or a verified channel button. There is
 * no code path that approves: no autonomy setting, config flag or model call reaches `decide`.
 */

const requestInput = z.object({
  action: z.object({
    kind: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, "a lower_snake_case action kind"),
    subject: z.string().min(1).max(300),
    params: z.record(z.string(), z.unknown()),
  }),
  evidence: z.record(z.string(), z.unknown()),
  ttlSecs: z
    .number()
    .int()
    .min(60)
    .max(30 * 86_400),
  requestedBy: z.string().min(1).max(200),
});
export type ApprovalRequest = z.input<typeof requestInput>;

export interface PreparedApproval {
  approvalId: string;
  status: Extract<ApprovalStatus, "pending" | "no_channel">;
  actionHash: string;
  /** The approval row and its events, each guarded by the caller's guard, for the caller's batch. */
  statements: [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]];
  /** Channel deliveries to enqueue once the batch has landed (see `enqueueDeliveries`). */
  deliveries: ApprovalDeliveryMessage[];
}

/**
 * Builds a request without running it, so a caller can land the approval with its own change in one
 * batch (a `guard` makes every statement conditional on the caller's condition). Whether anybody can
 * decide is settled here, at request time: nobody → `no_channel`, fail-closed, never pending.
 */
export async function prepareApproval(
  env: Pick<Env, "SLACK_WEBHOOK_URL" | "SLACK_SIGNING_SECRET" | "APPROVAL_WEBHOOK_SECRET">,
  db: Db,
  input: ApprovalRequest,
  now: Date,
  guard: SQL = sql`1`,
): Promise<PreparedApproval> {
  const req = requestInput.parse(input);
  const availability = await brokerAvailability(env, db, now);
  const approvalId = newId("apr");
  const hash = await actionHash(req.action);
  const status = availability.available ? "pending" : "no_channel";
  const at = now.toISOString();
  const expiresAt = new Date(now.getTime() + req.ttlSecs * 1000).toISOString();
  const channels = status === "pending" ? availability.channels : [];
  const payload = {
    approval_id: approvalId,
    action_kind: req.action.kind,
    subject: req.action.subject,
    action_hash: hash,
    status,
    requested_by: req.requestedBy,
    expires_at: expiresAt,
    channels,
    deciders: availability.deciders,
  };
  const statements: [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]] = [
    insertWhere(
      db,
      approvals,
      {
        id: approvalId,
        actionKind: req.action.kind,
        subject: req.action.subject,
        params: req.action.params,
        actionHash: hash,
        evidence: req.evidence,
        status,
        requestedBy: req.requestedBy,
        requestedAt: at,
        expiresAt,
        channels,
        decidedAt: status === "no_channel" ? at : null,
      },
      guard,
    ),
    appendEventWhere(
      db,
      { type: "approval.requested", subject: approvalId, payload, dedupeKey: `approval:${approvalId}:requested` },
      now,
      guard,
    ),
  ];
  if (status === "no_channel") {
    statements.push(
      appendEventWhere(
        db,
        {
          type: "approval.no_channel",
          subject: approvalId,
          payload: { ...payload, reason: "no_channel" },
          dedupeKey: `approval:${approvalId}:no_channel`,
        },
        now,
        guard,
      ),
    );
  }
  const deliveries = channels.map((channel) => ({ delivery_id: newId("dlv"), approval_id: approvalId, channel }));
  return { approvalId, status, actionHash: hash, statements, deliveries };
}

/** `request(action, evidence, ttl)`: records the approval, then sends it to the configured channels. */
export async function requestApproval(
  env: Pick<Env, "SLACK_WEBHOOK_URL" | "SLACK_SIGNING_SECRET" | "APPROVAL_WEBHOOK_SECRET" | "APPROVAL_DELIVERIES">,
  db: Db,
  input: ApprovalRequest,
  now: Date,
): Promise<{ approval_id: string; status: PreparedApproval["status"]; action_hash: string }> {
  const prepared = await prepareApproval(env, db, input, now);
  await db.batch(prepared.statements);
  await enqueueDeliveries(env, db, prepared.deliveries, now);
  return { approval_id: prepared.approvalId, status: prepared.status, action_hash: prepared.actionHash };
}

/**
 * Hands deliveries to the queue. A queue that refuses them is recorded and nothing else happens: a
 * failed delivery never decides anything, and the request stays answerable through the API.
 */
export async function enqueueDeliveries(env: Pick<Env, "APPROVAL_DELIVERIES">, db: Db, deliveries: ApprovalDeliveryMessage[], now: Date) {
  if (deliveries.length === 0) return;
  try {
    await env.APPROVAL_DELIVERIES.sendBatch(deliveries.map((body) => ({ body, contentType: "json" as const })));
  } catch (err) {
    console.error("approvals: the delivery queue refused the deliveries", err);
    const [first, ...rest] = deliveries.map((d) =>
      appendEvent(
        db,
        {
          type: "approval.delivery_failed",
          subject: d.approval_id,
          payload: { approval_id: d.approval_id, delivery_id: d.delivery_id, channel: d.channel, reason: "enqueue_failed", final: true },
          dedupeKey: `delivery:${d.delivery_id}:enqueue_failed`,
        },
        now,
      ),
    );
    await db.batch([first!, ...rest]);
  }
}

export function findApproval(db: Db, id: string) {
  return db.select().from(approvals).where(eq(approvals.id, id)).get();
}

/**
 * Pending approvals whose TTL passed become `expired`, each with one `approval.expired` event. Set
 * based and guarded by the same condition in one batch, so a decide that won first leaves no event.
 */
export async function sweepExpiredApprovals(db: Db, now: Date, onlyId?: string): Promise<string[]> {
  const at = now.toISOString();
  const only = onlyId === undefined ? sql`` : sql` AND id = ${onlyId}`;
  const [, expired] = await db.batch([
    // Columns in the events table's order: id, type, subject, payload, created_at, dedupe_key.
    db
      .insert(events)
      .select(
        sql`SELECT NULL, 'approval.expired', id,
          json_object('approval_id', id, 'action_kind', action_kind, 'subject', subject, 'requested_at', requested_at, 'expires_at', expires_at),
          ${at}, 'approval:' || id || ':expired'
        FROM ${approvals} WHERE status = 'pending' AND expires_at <= ${at}${only}`,
      )
      .onConflictDoNothing({ target: events.dedupeKey }),
    db
      .update(approvals)
      .set({ status: "expired" })
      .where(
        and(eq(approvals.status, "pending"), lte(approvals.expiresAt, at), onlyId === undefined ? undefined : eq(approvals.id, onlyId)),
      )
      .returning({ id: approvals.id }),
  ]);
  return expired.map((r) => r.id);
}

/** `poll(id)`: the approval as it stands now; a pending one past its TTL is expired on the spot. */
export async function pollApproval(db: Db, id: string, now: Date): Promise<ApprovalView | null> {
  let row = await findApproval(db, id);
  if (row?.status === "pending" && row.expiresAt <= now.toISOString()) {
    await sweepExpiredApprovals(db, now, id);
    row = await findApproval(db, id);
  }
  return row ? approvalView(row) : null;
}

export interface Decision {
  decision: "approve" | "deny";
  note?: string;
  /** The operator (a named person) deciding, and where the decision came from. */
  operatorId: string;
  via: "api" | "slack";
  slackUserId?: string;
}

/**
 * A person's decision. One conditional update (pending and not yet expired) decides the race: of
 * any number of concurrent decides exactly one wins; the rest, and any decide after expiry, get 409.
 */
export async function decideApproval(db: Db, id: string, d: Decision, now: Date): Promise<ApprovalView> {
  const row = await findApproval(db, id);
  if (!row) throw notFound(`approval ${id}`);
  const at = now.toISOString();
  const status = d.decision === "approve" ? "approved" : "denied";
  const open = and(eq(approvals.id, id), eq(approvals.status, "pending"), gt(approvals.expiresAt, at));
  const guard = sql`EXISTS (SELECT 1 FROM ${approvals} WHERE ${open})`;
  const [, updated] = await db.batch([
    appendEventWhere(
      db,
      {
        type: `approval.${status}`,
        subject: id,
        payload: {
          approval_id: id,
          action_kind: row.actionKind,
          subject: row.subject,
          action_hash: row.actionHash,
          decision: status,
          by: d.operatorId,
          via: d.via,
          ...(d.slackUserId ? { slack_user_id: d.slackUserId } : {}),
          ...(d.note ? { note: d.note } : {}),
        },
        dedupeKey: `approval:${id}:decided`,
      },
      now,
      guard,
    ),
    db
      .update(approvals)
      .set({ status, decidedBy: d.operatorId, decidedVia: d.via, decidedAt: at, note: d.note ?? null })
      .where(open)
      .returning(),
  ]);
  if (updated[0]) return approvalView(updated[0]);
  const current = (await findApproval(db, id))!;
  if (current.status === "expired" || (current.status === "pending" && current.expiresAt <= at)) {
    await sweepExpiredApprovals(db, now, id);
    throw new AppError("approval_expired", `approval ${id} expired at ${current.expiresAt}; it can no longer be decided`, {
      extra: { current_status: "expired" },
    });
  }
  if (current.status === "pending") throw new AppError("conflict", `approval ${id} changed while it was being decided; try again`);
  throw new AppError("already_decided", `approval ${id} is already ${current.status}`, { extra: { current_status: current.status } });
}

export type ConsumeCheck =
  | { ok: true; row: ApprovalRow; hash: string }
  | { ok: false; reason: "not_found" | "not_approved" | "already_consumed"; status?: ApprovalStatus }
  | { ok: false; reason: "action_changed"; status: ApprovalStatus; approvedHash: string; presentedHash: string };

/**
 * Before carrying an action out: the approval must be approved, unused, and for exactly this action
 * (its hash recomputed from what is about to be done, not taken from the approval).
 */
export async function checkConsumable(db: Db, id: string, action: ApprovalAction): Promise<ConsumeCheck> {
  const row = await findApproval(db, id);
  if (!row) return { ok: false, reason: "not_found" };
  const hash = await actionHash(action);
  if (hash !== row.actionHash) {
    return { ok: false, reason: "action_changed", status: row.status, approvedHash: row.actionHash, presentedHash: hash };
  }
  if (row.status !== "approved") return { ok: false, reason: "not_approved", status: row.status };
  if (row.consumedAt) return { ok: false, reason: "already_consumed", status: row.status };
  return { ok: true, row, hash };
}

/** The audit line for a refused action whose parameters differ from what was approved. */
export function actionChangedEvent(db: Db, id: string, check: Extract<ConsumeCheck, { reason: "action_changed" }>, by: string, now: Date) {
  return appendEvent(
    db,
    {
      type: "approval.action_changed",
      subject: id,
      payload: { approval_id: id, reason: "action_changed", approved_hash: check.approvedHash, presented_hash: check.presentedHash, by },
    },
    now,
  );
}

/**
 * Single use. `guard` holds while the approval is approved, unused and for this hash. The caller
 * builds its batch as: guarded effects and `event(cond)` first, then `consume(cond)` last (after it
 * the guard is false). `cond` ties both to the caller's own condition, so they land only with it.
 */
export function consumption(db: Db, id: string, hash: string, by: string, now: Date) {
  const usable = and(
    eq(approvals.id, id),
    eq(approvals.status, "approved"),
    sql`${approvals.consumedAt} IS NULL`,
    eq(approvals.actionHash, hash),
  );
  const guard = sql`EXISTS (SELECT 1 FROM ${approvals} WHERE ${usable})`;
  return {
    guard,
    event: (also?: SQL) =>
      appendEventWhere(
        db,
        {
          type: "approval.consumed",
          subject: id,
          payload: { approval_id: id, action_hash: hash, by },
          dedupeKey: `approval:${id}:consumed`,
        },
        now,
        also ? sql`(${guard} AND ${also})` : guard,
      ),
    consume: (also?: SQL) =>
      db.update(approvals).set({ consumedAt: now.toISOString(), consumedBy: by }).where(and(usable, also)).returning({ id: approvals.id }),
  };
}

/**
 * Consumes an approval for `action` on its own (for code whose effect happens elsewhere). Throws
 * 409 `action_changed` (and audits it) when the action is not the one approved.
 */
export async function consumeApproval(db: Db, id: string, action: ApprovalAction, by: string, now: Date): Promise<ApprovalView> {
  const check = await checkConsumable(db, id, action);
  if (!check.ok) {
    if (check.reason === "action_changed") {
      await actionChangedEvent(db, id, check, by, now);
      throw new AppError("action_changed", `approval ${id} was given for a different action`, {
        extra: { approved_hash: check.approvedHash, presented_hash: check.presentedHash },
      });
    }
    if (check.reason === "not_found") throw notFound(`approval ${id}`);
    throw new AppError(check.reason === "already_consumed" ? "approval_consumed" : "not_approved", `approval ${id}: ${check.reason}`, {
      extra: { current_status: check.status },
    });
  }
  const use = consumption(db, id, check.hash, by, now);
  const [, used] = await db.batch([use.event(), use.consume()]);
  if (used.length === 0) throw new AppError("approval_consumed", `approval ${id} was consumed by someone else`);
  return approvalView((await findApproval(db, id))!);
}

export interface ApprovalListQuery {
  status?: ApprovalStatus;
  limit: number;
  cursor?: number;
}

/** Newest first. Expiries due are recorded first, so `pending` never lists an expired approval. */
export async function listApprovals(db: Db, q: ApprovalListQuery, now: Date) {
  await sweepExpiredApprovals(db, now);
  const rows = await db
    .select()
    .from(approvals)
    .where(and(q.status ? eq(approvals.status, q.status) : undefined, q.cursor !== undefined ? lt(approvals.seq, q.cursor) : undefined))
    .orderBy(desc(approvals.seq))
    .limit(q.limit + 1);
  const page = rows.slice(0, q.limit);
  return {
    approvals: page.map(approvalView),
    next_cursor: rows.length > q.limit ? String(page[page.length - 1]!.seq) : null,
  };
}
