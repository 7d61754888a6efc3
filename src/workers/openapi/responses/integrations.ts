import * as z from "zod";

/** A verified Slack button press, decided: Slack shows `text` in the thread. */
export const slackActionSchema = z.object({
  ok: z.literal(true),
  approval_id: z.string(),
  status: z.enum(["approved", "denied"]),
  decided_by: z.string(),
  text: z.string(),
});

/** What Slack posts: `payload=<block_actions JSON>`, form-encoded; the handler reads the raw body itself (it is signed). */
export const slackActionRequestBody = {
  required: true,
  description:
    "Slack's interactivity request, form-encoded as Slack sends it: one field `payload`, a `block_actions` JSON whose `user.id` is the Slack user and whose crewplane button (`action_id` approve or deny) carries the approval id as its `value`. Signed: `X-Slack-Signature` (`v0=` HMAC-SHA256 of `v0:<timestamp>:<raw body>` under the signing secret) and `X-Slack-Request-Timestamp` (within 5 minutes).",
  content: {
    "application/x-www-form-urlencoded": {
      schema: {
        type: "object",
        properties: { payload: { type: "string", description: "The interaction payload (JSON text)" } },
        required: ["payload"],
      },
    },
  },
};
