import { Hono } from "hono";
import { decideApproval } from "../../approvals/broker";
import { findLiveDecider } from "../../approvals/channels";
import { approvalsConfig } from "../../approvals/config";
import { parseSlackAction, verifySlackRequest } from "../../approvals/slack";
import { getDb } from "../../db/client";
import { readSection } from "../../lib/config";
import { AppError } from "../../lib/errors";
import type { AppEnv } from "../app-env";

/**
 * Slack interactivity (the Approve / Deny buttons). Public, so nothing is read or written before the
 * `v0` signature and the 5-minute timestamp check pass; anything unverified is 401. A verified press
 * decides as the operator its Slack user is mapped to, who must be a live manager or admin.
 */
export const integrationsRoutes = new Hono<AppEnv>().post("/slack/actions", async (c) => {
  const raw = await c.req.text();
  const verdict = await verifySlackRequest(
    c.env.SLACK_SIGNING_SECRET,
    { signature: c.req.header("x-slack-signature"), timestamp: c.req.header("x-slack-request-timestamp") },
    raw,
    c.var.clock.nowMs(),
  );
  if (!verdict.ok)
    throw new AppError("unauthorized", `The Slack request could not be verified (${verdict.reason})`, {
      extra: { reason: verdict.reason },
    });
  const db = getDb(c.env.DB);
  const config = await readSection(db, approvalsConfig);
  if (!config.slack.enabled)
    throw new AppError("forbidden", "The Slack approval channel is disabled", { extra: { reason: "channel_disabled" } });
  const action = parseSlackAction(raw);
  if (!action.ok) throw new AppError("validation_failed", action.message, { errors: [{ path: "payload", message: action.message }] });
  const now = c.var.clock.now();
  // Own keys only: a user id is the request's word, and `constructor` must not read Object.prototype.
  const slackUser = action.value.slackUserId;
  const operatorId = Object.hasOwn(config.slack.operators, slackUser) ? config.slack.operators[slackUser] : undefined;
  const operator = operatorId ? await findLiveDecider(db, operatorId, now) : undefined;
  if (!operator) {
    throw new AppError("forbidden", `Slack user ${action.value.slackUserId} is not mapped to a live manager operator`, {
      extra: { reason: "slack_user_not_a_decider" },
    });
  }
  const view = await decideApproval(
    db,
    action.value.approvalId,
    { decision: action.value.decision, operatorId: operator.id, via: "slack", slackUserId: action.value.slackUserId },
    now,
  );
  return c.json({
    ok: true,
    approval_id: view.approval_id,
    status: view.status,
    decided_by: operator.id,
    text: `${view.status} by ${operator.name}`,
  });
});
