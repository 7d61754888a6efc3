import { getDb, type Db } from "../../db/client";
import type { ApprovalChannel } from "../../db/schema";
import type { Env } from "../../env";
import { approvalsConfig, type ApprovalsConfig } from "../../approvals/config";
import { pollApproval } from "../../approvals/broker";
import { slackApprovalMessage, webhookApprovalBody, webhookSignature } from "../../approvals/messages";
import type { ApprovalView } from "../../approvals/view";
import { loadClock } from "../../lib/clock";
import { readSection } from "../../lib/config";
import { appendEvent } from "../../lib/events";
import { approvalDeliveryMessage, type ApprovalDeliveryMessage } from "../../queues/approval-delivery-message";

export type Fetcher = (input: string, init: RequestInit) => Promise<Response>;

const DELIVERY_TIMEOUT_MS = 10_000;
const MAX_RETRY_DELAY_SECS = 300;

/**
 * `approval-deliveries` consumer: posts each request to its channel. A failure is recorded and
 * retried with backoff (after the queue's max_retries it lands in the dead-letter queue); it never
 * decides anything. Secrets (the Slack URL, the webhook secret) never reach an event.
 * `fetcher` is the boundary tests replace; by default it is the global fetch, looked up per call.
 */
export async function consumeApprovalDeliveries(
  batch: MessageBatch<unknown>,
  env: Env,
  fetcher: Fetcher = (input, init) => globalThis.fetch(input, init),
): Promise<void> {
  const db = getDb(env.DB);
  const clock = await loadClock(env);
  const config = await readSection(db, approvalsConfig);
  for (const msg of batch.messages) {
    const parsed = approvalDeliveryMessage.safeParse(msg.body);
    if (!parsed.success) {
      console.error("approval-deliveries: dropping a message that does not parse", msg.id);
      msg.ack();
      continue;
    }
    const delivery = parsed.data;
    const now = clock.now();
    // Through poll: a request past its TTL (a retry's backoff can outlive a short one) is expired
    // here and not sent, rather than posting buttons that can only answer 409.
    const row = await pollApproval(db, delivery.approval_id, now);
    if (!row) {
      // The request's own batch never landed (a guard refused it): there is nothing to deliver.
      msg.ack();
      continue;
    }
    if (row.status !== "pending") {
      await record(db, delivery, "approval.delivery_skipped", { reason: "no_longer_pending", status: row.status }, now, "skipped");
      msg.ack();
      continue;
    }
    const request = await buildRequest(env, config, delivery, row, now);
    if (!request) {
      await record(db, delivery, "approval.delivery_skipped", { reason: "channel_not_configured" }, now, "skipped");
      msg.ack();
      continue;
    }
    let status: number | null = null;
    let error: string | undefined;
    try {
      const res = await fetcher(request.url, { ...request.init, signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS) });
      status = res.status;
      await res.body?.cancel();
    } catch (err) {
      error = err instanceof Error ? err.name : "fetch_failed";
    }
    if (status !== null && status >= 200 && status < 300) {
      await record(db, delivery, "approval.delivered", { attempt: msg.attempts, http_status: status }, now, "delivered");
      msg.ack();
    } else if (status !== null && status >= 400 && status < 500 && status !== 408 && status !== 429) {
      // The endpoint refused this request as such (a revoked Slack hook, a bad URL): retrying cannot help.
      await record(
        db,
        delivery,
        "approval.delivery_failed",
        { attempt: msg.attempts, http_status: status, final: true, reason: "rejected" },
        now,
        "rejected",
      );
      msg.ack();
    } else {
      await record(
        db,
        delivery,
        "approval.delivery_failed",
        { attempt: msg.attempts, final: false, ...(status !== null ? { http_status: status } : { error }) },
        now,
        `attempt:${msg.attempts}`,
      );
      msg.retry({ delaySeconds: Math.min(MAX_RETRY_DELAY_SECS, 5 * 2 ** Math.max(0, msg.attempts - 1)) });
    }
  }
}

/** Dead letters: the channel never took the request. Recorded; the approval stays decidable via the API. */
export async function consumeApprovalDeliveryDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const db = getDb(env.DB);
  const now = (await loadClock(env)).now();
  for (const msg of batch.messages) {
    const parsed = approvalDeliveryMessage.safeParse(msg.body);
    if (parsed.success) {
      await record(
        db,
        parsed.data,
        "approval.delivery_failed",
        { final: true, reason: "retries_exhausted", attempts: msg.attempts },
        now,
        "dead",
      );
    }
    msg.ack();
  }
}

async function buildRequest(
  env: Env,
  config: ApprovalsConfig,
  delivery: ApprovalDeliveryMessage,
  view: ApprovalView,
  now: Date,
): Promise<{ url: string; init: RequestInit } | null> {
  if (delivery.channel === "slack") {
    if (!config.slack.enabled || !env.SLACK_WEBHOOK_URL) return null;
    return {
      url: env.SLACK_WEBHOOK_URL,
      init: { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(slackApprovalMessage(view)) },
    };
  }
  if (!config.webhook.enabled || !config.webhook.url || !env.APPROVAL_WEBHOOK_SECRET) return null;
  const body = JSON.stringify(webhookApprovalBody(view, delivery.delivery_id));
  const ts = Math.floor(now.getTime() / 1000);
  return {
    url: config.webhook.url,
    init: {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-crewplane-event": "approval.requested",
        "x-crewplane-delivery": delivery.delivery_id,
        "x-crewplane-timestamp": String(ts),
        "x-crewplane-signature": await webhookSignature(env.APPROVAL_WEBHOOK_SECRET, ts, body),
      },
      body,
    },
  };
}

function record(
  db: Db,
  delivery: ApprovalDeliveryMessage,
  type: string,
  detail: Record<string, unknown>,
  now: Date,
  key: string,
): Promise<unknown> {
  const channel: ApprovalChannel = delivery.channel;
  return appendEvent(
    db,
    {
      type,
      subject: delivery.approval_id,
      payload: { approval_id: delivery.approval_id, delivery_id: delivery.delivery_id, channel, ...detail },
      dedupeKey: `delivery:${delivery.delivery_id}:${key}`,
    },
    now,
  );
}
