import { exports } from "cloudflare:workers";
import { hmacSha256Hex } from "../../src/lib/hmac";

export const SLACK_SECRET = "test-slack-signing-secret";

/** A Slack button press, signed as Slack signs it (`v0` over `v0:<ts>:<body>`). */
export async function slackPress(
  approvalId: string,
  opts: { user?: string; action?: "crewplane_approve" | "crewplane_deny"; tsSecs: number; secret?: string; tamper?: boolean },
) {
  const payload = {
    type: "block_actions",
    user: { id: opts.user ?? "U0MANAGER", username: "mia" },
    actions: [{ action_id: opts.action ?? "crewplane_approve", value: approvalId, type: "button" }],
    response_url: "https://hooks.slack.test/actions/T000/1/xyz",
  };
  const body = `payload=${encodeURIComponent(JSON.stringify(payload))}`;
  const signature = `v0=${await hmacSha256Hex(opts.secret ?? SLACK_SECRET, `v0:${opts.tsSecs}:${body}`)}`;
  const res = await exports.default.fetch("http://crewplane.test/v1/integrations/slack/actions", {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "x-slack-signature": signature,
      "x-slack-request-timestamp": String(opts.tsSecs),
    },
    body: opts.tamper ? body.replace("crewplane_", "crewplane_").replace("U0", "U9") : body,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
