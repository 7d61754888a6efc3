import { and, count, eq, gt, inArray, isNull, or, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { credentials, type ApprovalChannel } from "../db/schema";
import type { Env } from "../env";
import { readSection } from "../lib/config";
import { approvalsConfig, type ApprovalsConfig } from "./config";

type ChannelSecrets = Pick<Env, "SLACK_WEBHOOK_URL" | "SLACK_SIGNING_SECRET" | "APPROVAL_WEBHOOK_SECRET">;

/**
 * The channels that can carry a request: enabled in config *and* holding their secrets. Slack needs
 * both the incoming-webhook URL (to post) and the signing secret (to trust the button press back).
 */
export function configuredChannels(env: ChannelSecrets, config: ApprovalsConfig): ApprovalChannel[] {
  const channels: ApprovalChannel[] = [];
  if (config.slack.enabled && env.SLACK_WEBHOOK_URL && env.SLACK_SIGNING_SECRET) channels.push("slack");
  if (config.webhook.enabled && config.webhook.url && env.APPROVAL_WEBHOOK_SECRET) channels.push("webhook");
  return channels;
}

/**
 * Operator tokens that may decide: role manager or admin, neither revoked nor expired. The bootstrap
 * ADMIN_TOKEN is deliberately not counted (and may not decide): it is a shared setup secret, not a
 * named person, and an approval must name the human who gave it.
 */
export async function liveDeciders(db: Db, now: Date): Promise<number> {
  return (await liveDecidersQuery(db, now))[0]?.n ?? 0;
}

/** `liveDeciders` as an un-executed query (one row, `n`), for a caller's own `db.batch`. */
export function liveDecidersQuery(db: Db, now: Date) {
  const at = now.toISOString();
  return db
    .select({ n: count() })
    .from(credentials)
    .where(
      and(
        eq(credentials.kind, "operator"),
        inArray(credentials.role, ["manager", "admin"]),
        isNull(credentials.revokedAt),
        or(isNull(credentials.expiresAt), gt(credentials.expiresAt, at)),
      ),
    );
}

/**
 * The same deciders as `liveDecidersQuery` without the expiry test: each one's `expires_at` (null:
 * never). For a caller that keeps the rows and counts them at a later instant with `liveAt`.
 */
export function deciderExpiriesQuery(db: Db, guard?: SQL) {
  return db
    .select({ expiresAt: credentials.expiresAt })
    .from(credentials)
    .where(and(eq(credentials.kind, "operator"), inArray(credentials.role, ["manager", "admin"]), isNull(credentials.revokedAt), guard));
}

/** How many of `deciderExpiriesQuery`'s rows are live at `now` (the expiry half of `liveDecidersQuery`). */
export function liveAt(expiries: readonly { expiresAt: string | null }[], now: Date): number {
  const at = now.toISOString();
  return expiries.filter((d) => d.expiresAt === null || d.expiresAt > at).length;
}

/** Whether a human could answer a request right now: somebody to decide, or a channel to reach one. */
export function canReachDecider(deciders: number, channels: readonly ApprovalChannel[]): boolean {
  return deciders > 0 || channels.length > 0;
}

export interface BrokerAvailability {
  available: boolean;
  deciders: number;
  channels: ApprovalChannel[];
}

/** What `request` would decide now: `available: false` means it would answer `no_channel`. */
export async function brokerAvailability(env: ChannelSecrets, db: Db, now: Date): Promise<BrokerAvailability> {
  const [deciders, config] = await Promise.all([liveDeciders(db, now), readSection(db, approvalsConfig)]);
  return availability(env, deciders, config);
}

/** `brokerAvailability` from what it reads (the live deciders and the approvals section), read elsewhere. */
export function availability(env: ChannelSecrets, deciders: number, config: ApprovalsConfig): BrokerAvailability {
  const channels = configuredChannels(env, config);
  return { available: canReachDecider(deciders, channels), deciders, channels };
}

/** The operator credential behind a Slack user mapping, if it may decide now (live manager or admin). */
export async function findLiveDecider(db: Db, operatorId: string, now: Date) {
  const at = now.toISOString();
  return db
    .select({ id: credentials.id, name: credentials.name, role: credentials.role })
    .from(credentials)
    .where(
      and(
        eq(credentials.id, operatorId),
        eq(credentials.kind, "operator"),
        inArray(credentials.role, ["manager", "admin"]),
        isNull(credentials.revokedAt),
        or(isNull(credentials.expiresAt), gt(credentials.expiresAt, at)),
      ),
    )
    .get();
}
