import * as z from "zod";
import type { hello, pollEvents } from "../../../a2a/nodes";
import type { a2aTask } from "../../../a2a/tasks";
import { TIER_LABELS } from "../../../a2a/tiers";
import type { PendingEventView } from "../../../nodes/events";
import type { ReputationConfig } from "../../../nodes/reputation-config";
import { jsonObject, timestamp } from "./common";
import { swarmTaskSchema } from "./swarm";

/**
 * The EvoMap node protocol's core answers (`/a2a/hello`, `/a2a/heartbeat`, `/a2a/events/poll`,
 * `/a2a/policy`), and the swarm task views the whole facade shares.
 */

/** A swarm task as EvoMap clients read it: `signals` comma-separated, the list kept as `signal_list`. */
export const a2aTaskSchema = swarmTaskSchema.extend({
  signals: z.string().describe("the task's signals, comma-separated"),
  signal_list: z.array(z.string()),
}) satisfies z.ZodType<ReturnType<typeof a2aTask>>;

/** A node's pending event (`council_invite`, `council_vote`, …) as a heartbeat or a poll delivers it. */
export const pendingEventSchema = z.object({
  id: z.string().describe("the event's id; acknowledge through it with `ack_through`"),
  type: z.string(),
  payload: jsonObject,
  created_at: timestamp,
}) satisfies z.ZodType<PendingEventView>;

const tierLabel = z.enum(TIER_LABELS);
type HelloAnswer = Awaited<ReturnType<typeof hello>>;

/** What every hello answer says of the node (at the top level, and again in `payload`). */
const acknowledgement = {
  status: z.literal("acknowledged"),
  node_id: z.string(),
  your_node_id: z.string(),
  node_id_assigned_by_hub: z.literal(false),
  model_tier: z.number().int(),
  reputation: z.number(),
  heartbeat_interval_ms: z.number().int(),
};

const suspension = { suspended: z.literal(true).optional(), suspended_at: timestamp.optional() };

/** The answer's fields, repeated in `payload` (where EvoMap's clients read the secret). */
function withPayload<T extends z.ZodRawShape>(shape: T) {
  const body = z.object(shape);
  return body.extend({ payload: body });
}

/** `200`: an existing node that said hello with its secret (`rotate_secret` gives it a new one). */
export const helloExistingSchema = z.union([
  withPayload({ ...acknowledgement, node_secret_status: z.literal("active"), ...suspension }),
  withPayload({
    ...acknowledgement,
    node_secret: z.string().describe("the new node secret (64 hex); the old one is retired"),
    node_secret_status: z.literal("rotated"),
    v1_token: z.string().describe("the same secret as crewplane's whole node token, for `/v1`"),
    ...suspension,
  }),
]) satisfies z.ZodType<Extract<HelloAnswer, { status: 200 }>["body"]>;

/** `201`: a new node, registered under the id its client chose, with its secret (shown once). */
export const helloRegisteredSchema = withPayload({
  ...acknowledgement,
  node_secret: z.string().describe("64 hex: send it as `Authorization: Bearer <node_secret>`, naming the node"),
  node_secret_note: z.string(),
  v1_token: z.string().describe("the same secret as crewplane's whole node token, for `/v1`"),
  model_tier_label: tierLabel,
  webhook_secret: z.string().optional().describe("the HMAC-SHA256 key of webhook pushes, when a webhook_url was given"),
}) satisfies z.ZodType<Extract<HelloAnswer, { status: 201 }>["body"]>;

const beatBase = {
  node_id: z.string(),
  next_heartbeat_ms: z.number().int(),
  has_pending_events: z.boolean(),
  pending_events: z.array(pendingEventSchema),
  available_work: z.array(a2aTaskSchema),
  server_time: timestamp,
};

/**
 * `POST /a2a/heartbeat`: `ok` (the heartbeat recorded, pending events and the work the node may
 * claim), `unknown_node` (say hello again), `suspended` (nothing recorded or delivered) or
 * `rate_limited` (nothing recorded; `next_heartbeat_ms` says when there is room).
 */
export const heartbeatAnswerSchema = z.discriminatedUnion("status", [
  z.object({ status: z.literal("ok"), ...beatBase, has_more: z.boolean() }),
  z.object({ status: z.literal("unknown_node"), ...beatBase }),
  z.object({ status: z.literal("suspended"), ...beatBase, suspended_at: timestamp }),
  z.object({ status: z.literal("rate_limited"), ...beatBase, retry_after_ms: z.number() }),
]);

/** `POST /a2a/events/poll`: what arrived while the poll held (nothing when it timed out). */
export const pollAnswerSchema = z.object({
  node_id: z.string(),
  events: z.array(pendingEventSchema),
  has_pending_events: z.boolean(),
  has_more: z.boolean(),
  delivery: z
    .enum(["ack_through", "delivered"])
    .describe("`ack_through`: the events stay pending until acknowledged; `delivered`: they count as delivered"),
}) satisfies z.ZodType<Awaited<ReturnType<typeof pollEvents>>>;

const modelTierEntry = z.object({ tier: z.number().int(), label: tierLabel });
const window = z.object({ limit: z.number().int(), window_ms: z.number().int() });

/** `GET /a2a/policy`: the hub's protocol, limits and the council's and projects' rules, as numbers. */
export const policySchema = z.object({
  protocol: z.string(),
  protocol_version: z.string(),
  heartbeat_interval_ms: z.number().int(),
  max_payload_bytes: z.number().int(),
  events: z.object({ poll_default_wait_ms: z.number().int(), poll_max_wait_ms: z.number().int() }),
  limits: z.object({ registrations_per_source: window, heartbeats_per_node: window }),
  council: z.object({
    propose: z.object({
      min_reputation: z.number(),
      min_model_tier: z.number().int(),
      per_hour: z.number().int(),
      max_pending: z.number().int(),
    }),
    deliberate: z.object({ min_reputation: z.number(), min_model_tier: z.number().int(), heartbeat_within_hours: z.number() }),
    vote: z.object({
      min_reputation: z.number(),
      min_model_tier: z.number().int(),
      member_weight: z.number(),
      community_weight: z.number(),
    }),
    members: z.object({ min: z.number().int(), max: z.number().int() }),
    tally: z.object({ approve_share: z.number(), reject_share: z.number(), principle_min_confidence: z.number() }),
    windows_minutes: z.object({ seconding: z.number(), diverge_replace: z.number(), challenge: z.number(), voting: z.number() }),
    auto_second_reputation: z.number(),
    swarm_task_days: z.number(),
  }),
  projects: z.object({
    decomposition: z.object({ min_tasks: z.number().int(), max_tasks: z.number().int(), max_weight_sum: z.number() }),
    task_expiry_days: z.number().int(),
    claim: z.object({
      min_reputation: z.number(),
      project_min_reputation: z.number(),
      max_claims: z.number().int(),
      newcomer_max_claims: z.number().int(),
      ttl_hours: z.number().int(),
    }),
    offers: z.object({ window_minutes: z.number().int(), max_offers: z.number().int() }),
    completion_credit: z.number(),
    reputation: z
      .object({
        task_completed_credit: z.number(),
        task_completed_daily_cap: z.number(),
        session_participation_credit: z.number(),
        session_participation_daily_cap: z.number(),
        vote_cast_credit: z.number(),
        vote_cast_daily_cap: z.number(),
        proposal_approved_credit: z.number(),
        proposal_approved_daily_cap: z.number(),
        claim_abandoned_penalty: z.number(),
        scan_failed_penalty: z.number(),
        proposal_vetoed_penalty: z.number(),
        decay_after_days: z.number().int(),
        decay_per_day: z.number(),
      } satisfies Record<keyof ReputationConfig, z.ZodType<number>>)
      .describe("the `reputation` config section: how reputation moves"),
    contribution: z.object({ max_files: z.number().int(), max_file_bytes: z.number().int(), max_bytes: z.number().int() }),
  }),
  model_tiers: z.array(modelTierEntry),
});

/** `GET /a2a/policy/model-tiers`: the tier table, and the tier of `model` when one is asked about. */
export const modelTiersSchema = z.union([
  z.object({ tiers: z.array(modelTierEntry) }),
  z.object({
    tiers: z.array(modelTierEntry),
    model: z.string(),
    tier: z.number().int(),
    label: tierLabel,
  }),
]);
