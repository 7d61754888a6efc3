import * as z from "zod";
import { secretsEqual } from "../lib/crypto";
import { hmacSha256Hex } from "../lib/hmac";
import { SLACK_ACTIONS } from "./messages";

/** Slack's replay window for signed requests. */
export const SLACK_MAX_SKEW_SECS = 5 * 60;

export type SlackVerdict = { ok: true } | { ok: false; reason: "no_secret" | "missing_headers" | "stale_timestamp" | "bad_signature" };

/**
 * Slack request signing (`v0`): HMAC-SHA256 of `v0:<timestamp>:<raw body>` under the signing secret,
 * compared in constant time, and a timestamp within five minutes of now either way.
 */
export async function verifySlackRequest(
  secret: string | undefined,
  headers: { signature?: string; timestamp?: string },
  rawBody: string,
  nowMs: number,
): Promise<SlackVerdict> {
  if (!secret) return { ok: false, reason: "no_secret" };
  if (!headers.signature || !headers.timestamp) return { ok: false, reason: "missing_headers" };
  if (!/^\d{1,12}$/.test(headers.timestamp)) return { ok: false, reason: "stale_timestamp" };
  const ts = Number(headers.timestamp);
  if (Math.abs(nowMs / 1000 - ts) > SLACK_MAX_SKEW_SECS) return { ok: false, reason: "stale_timestamp" };
  const expected = `v0=${await hmacSha256Hex(secret, `v0:${headers.timestamp}:${rawBody}`)}`;
  return (await secretsEqual(expected, headers.signature)) ? { ok: true } : { ok: false, reason: "bad_signature" };
}

/** The part of a `block_actions` interaction payload we act on; the rest is Slack's business. */
const blockActions = z.object({
  type: z.literal("block_actions"),
  user: z.object({ id: z.string().min(1).max(64) }).loose(),
  actions: z
    .array(
      z
        .object({
          action_id: z.string().max(255),
          value: z.string().max(2_000).optional(),
        })
        .loose(),
    )
    .min(1),
});

export type SlackDecision = { slackUserId: string; approvalId: string; decision: "approve" | "deny" };

/** `payload=<json>` (form-encoded, as Slack posts it) → the decision it carries, or why not. */
export function parseSlackAction(rawBody: string): { ok: true; value: SlackDecision } | { ok: false; message: string } {
  const json = new URLSearchParams(rawBody).get("payload");
  if (!json) return { ok: false, message: "expected a form field `payload`" };
  let data: unknown;
  try {
    data = JSON.parse(json);
  } catch {
    return { ok: false, message: "`payload` is not JSON" };
  }
  const parsed = blockActions.safeParse(data);
  if (!parsed.success) return { ok: false, message: "not a block_actions payload" };
  const action = parsed.data.actions.find((a) => a.action_id === SLACK_ACTIONS.approve || a.action_id === SLACK_ACTIONS.deny);
  if (!action?.value || !/^apr_[0-9a-f]{16}$/.test(action.value))
    return { ok: false, message: "no crewplane approval button in the payload" };
  return {
    ok: true,
    value: {
      slackUserId: parsed.data.user.id,
      approvalId: action.value,
      decision: action.action_id === SLACK_ACTIONS.approve ? "approve" : "deny",
    },
  };
}
