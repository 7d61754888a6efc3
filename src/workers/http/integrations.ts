import { Hono, type MiddlewareHandler } from "hono";
import { decideApproval } from "../../approvals/broker";
import { findLiveDecider } from "../../approvals/channels";
import { approvalsConfig } from "../../approvals/config";
import { parseSlackAction, verifySlackRequest } from "../../approvals/slack";
import { getDb } from "../../db/client";
import { readSection } from "../../lib/config";
import { AppError } from "../../lib/errors";
import type { AppEnv } from "../app-env";
import { describe, withOperationSpec } from "../openapi/describe";
import { slackActionRequestBody, slackActionSchema } from "../openapi/responses/integrations";

/** Documents the form body Slack posts (the handler reads and verifies it raw); does nothing at request time. */
const slackFormBody = withOperationSpec<MiddlewareHandler<AppEnv>>(
  async (_c, next) => {
    await next();
  },
  () => ({ requestBody: slackActionRequestBody }),
);

/**
 * Slack interactivity (the Approve / Deny buttons). Public, so nothing is read or written before the
 * `v0` signature and the 5-minute timestamp check pass; anything unverified is 401. A verified press
 * decides as the operator its Slack user is mapped to, who must be a live manager or admin.
 */
export const integrationsRoutes = new Hono<AppEnv>().post(
  "/slack/actions",
  describe({
    summary: "Slack interactivity: an Approve or Deny button press, signed by Slack",
    description:
      "No bearer token: the request is Slack's, verified by its `v0` signature and a timestamp within 5 minutes (else 401). The press decides the approval as the operator its Slack user is mapped to in the `approvals` config section, who must be a live manager or admin (else 403).",
    responses: { 200: slackActionSchema },
    errors: ["unauthorized", "forbidden", "validation_failed", "not_found", "already_decided", "approval_expired"],
  }),
  slackFormBody,
  async (c) => {
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
  },
);
