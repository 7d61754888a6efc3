import { hmacSha256Hex } from "../lib/hmac";
import type { ApprovalView } from "./view";

/** Block Kit action ids of the two buttons; the button's value is the approval id. */
export const SLACK_ACTIONS = { approve: "crewplane_approve", deny: "crewplane_deny" } as const;

const MAX_EVIDENCE_FIELDS = 10;

/** Slack mrkdwn treats &, < and > as control characters: escape them in anything we did not write. */
export function slackEscape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function evidenceLines(evidence: Record<string, unknown>): string[] {
  return Object.entries(evidence)
    .slice(0, MAX_EVIDENCE_FIELDS)
    .map(([key, value]) => {
      const shown = typeof value === "string" ? value : JSON.stringify(value);
      return `• *${slackEscape(key)}*: ${slackEscape(shown.length > 200 ? `${shown.slice(0, 200)}…` : shown)}`;
    });
}

/** The incoming-webhook message: what is asked, the evidence, and Approve / Deny buttons. */
export function slackApprovalMessage(a: ApprovalView) {
  const headline = `Approval requested: ${a.action_kind} — ${a.subject}`;
  return {
    text: slackEscape(headline),
    blocks: [
      {
        type: "section",
        text: {
          type: "mrkdwn",
          text: `*Approval requested*: \`${slackEscape(a.action_kind)}\`\n*Subject*: ${slackEscape(a.subject)}\n*Expires*: ${a.expires_at} (an expired request counts as denied)`,
        },
      },
      ...(Object.keys(a.evidence).length > 0
        ? [{ type: "section", text: { type: "mrkdwn", text: evidenceLines(a.evidence).join("\n").slice(0, 2_900) } }]
        : []),
      { type: "context", elements: [{ type: "mrkdwn", text: `${a.approval_id} · action ${a.action_hash.slice(0, 12)}` }] },
      {
        type: "actions",
        block_id: "crewplane_approval",
        elements: [
          {
            type: "button",
            action_id: SLACK_ACTIONS.approve,
            style: "primary",
            text: { type: "plain_text", text: "Approve" },
            value: a.approval_id,
          },
          {
            type: "button",
            action_id: SLACK_ACTIONS.deny,
            style: "danger",
            text: { type: "plain_text", text: "Deny" },
            value: a.approval_id,
          },
        ],
      },
    ],
  };
}

/** The generic webhook's body: the request as the API shows it. */
export function webhookApprovalBody(a: ApprovalView, deliveryId: string) {
  return { type: "approval.requested", delivery_id: deliveryId, approval: a };
}

/**
 * Our webhook signature, Slack-style: `v1=` + HMAC-SHA256 over `<unix seconds>.<body>`, so a receiver
 * can check both the sender and the freshness (`X-Crewplane-Timestamp`).
 */
export async function webhookSignature(secret: string, timestampSecs: number, body: string): Promise<string> {
  return `v1=${await hmacSha256Hex(secret, `${timestampSecs}.${body}`)}`;
}
