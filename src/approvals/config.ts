import * as z from "zod";
import { defineConfigSection } from "../lib/config";

const slackUserId = z.string().regex(/^[UW][A-Z0-9]{2,30}$/, "a Slack user id (U… or W…)");
const operatorId = z.string().regex(/^op_[0-9a-f]{16}$/, "an operator id (op_…)");

/**
 * `approvals` config section: which channels carry approval requests besides the API. Secrets never
 * live here (GET /v1/config returns this section): the Slack incoming-webhook URL and signing secret
 * and the webhook signing secret are Worker secrets (`SLACK_WEBHOOK_URL`, `SLACK_SIGNING_SECRET`,
 * `APPROVAL_WEBHOOK_SECRET`). A channel counts as configured only when enabled here and its secrets exist.
 */
export const approvalsConfig = defineConfigSection(
  "approvals",
  z.object({
    slack: z
      .object({
        enabled: z.boolean().default(false),
        /** Slack user id → operator id: a button press decides as that operator (it must be a live manager). */
        operators: z.record(slackUserId, operatorId).default({}),
      })
      .strict()
      .prefault({}),
    webhook: z
      .object({
        enabled: z.boolean().default(false),
        /** Receives a signed JSON POST per approval request (`X-Crewplane-Signature: v1=<hmac>`). */
        url: z
          .url({ protocol: /^https?$/ })
          .nullable()
          .default(null),
      })
      .strict()
      .prefault({}),
  }),
);
export type ApprovalsConfig = z.infer<typeof approvalsConfig.schema>;
