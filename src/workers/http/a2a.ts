import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { getRateWindow } from "../../durable-objects/rate-window-rpc";
import { nodePresence } from "../../nodes/presence-store";
import type { Env } from "../../env";
import { AppError } from "../../lib/errors";
import { validate } from "../middleware/validate";
import { readSection } from "../../lib/config";
import { councilConfig } from "../../council/config";
import { COUNCIL_RULES } from "../../council/rules";
import { A2A_PROTOCOL, A2A_PROTOCOL_VERSION, MAX_PAYLOAD_BYTES, readEnvelope } from "../../a2a/envelope";
import { checkSender } from "../../a2a/council";
import {
  a2aHeartbeat,
  A2A_HEARTBEAT_MS,
  A2A_LIMITS,
  bearerOf,
  DEFAULT_POLL_WAIT_MS,
  heartbeatBody,
  hello,
  helloPayload,
  pollBody,
  pollEvents,
  type Admit,
} from "../../a2a/nodes";
import { modelTier, TIER_LABELS } from "../../a2a/tiers";
import { projectsConfig } from "../../projects/config";
import { reputationConfig } from "../../nodes/reputation-config";
import { DECOMPOSITION_RULES } from "../../projects/decomposition";
import type { AppEnv } from "../app-env";
import { a2aCouncilRoutes } from "./a2a-council";
import { a2aProjectRoutes } from "./a2a-projects";
import { problemResponse } from "../problem";
import { a2aBody, a2aEnvelopeDoc, a2aJsonDoc, readJson } from "./a2a-body";
import { a2aOptionalNodeDoc, requireA2aNode } from "./a2a-auth";
import { describe } from "../openapi/describe";
import { jsonObject } from "../openapi/responses/common";
import {
  heartbeatAnswerSchema,
  helloExistingSchema,
  helloRegisteredSchema,
  modelTiersSchema,
  policySchema,
  pollAnswerSchema,
} from "../openapi/responses/a2a";
import { a2aEventStream, streamQuery } from "./a2a-events";
import { nodeOf } from "./projects";

/** The facade's windows are `RateWindow` objects (one per key), on the request clock. */
function admitter(env: Env, now: Date): Admit {
  return async (key, rule, token) => {
    const taken = await getRateWindow(env, key).take({ limit: rule.limit, windowMs: rule.windowMs, now: now.getTime(), token });
    return taken.ok ? { ok: true } : { ok: false, retry_after_ms: taken.retry_after_ms };
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const modelTiersQuery = z.object({ model: z.string().max(200).optional() });

/**
 * The EvoMap node protocol's core (hello, heartbeat, events, policy) on crewplane's node registry.
 * Every route translates onto the functions `/v1` uses; the facade has no rules of its own.
 */
export const a2aRoutes = new Hono<AppEnv>()
  .post(
    "/hello",
    describe({
      summary: "Say hello: register a node under the id its client chose, or check in as one",
      description:
        "A `hello` envelope whose `sender_id` is the node's own id (`node_` + 12 to 32 lowercase hex), kept for the node's life. A new id is registered (201) with its secret, its model tier from the model it reports (`payload.model`, else the environment fingerprint's); at most " +
        `${A2A_LIMITS.registrations.limit} new nodes per ${A2A_LIMITS.registrations.windowMs / 60_000} minutes per source address (429 with Retry-After). ` +
        "An existing id needs its secret as Bearer (200; `rotate_secret` gives it a new one); without it the hello is refused (401, `reason: node_id_already_claimed`). Outside production the webhook URL may also be http.",
      responses: { 200: helloExistingSchema, 201: helloRegisteredSchema },
      errors: ["unauthorized", "forbidden", "conflict", "rate_limited"],
    }),
    a2aOptionalNodeDoc("needed when the node is already registered (a bearer sent with a new id is ignored)"),
    a2aEnvelopeDoc("hello", helloPayload(true), { env_fingerprint: jsonObject.optional() }),
    async (c) => {
      const db = getDb(c.env.DB);
      const raw = await readJson(c);
      const envelope = readEnvelope(raw, "hello");
      const now = c.var.clock.now();
      try {
        const out = await hello(
          c.env,
          db,
          // EvoMap's proxy sends its environment fingerprint beside the envelope rather than in it.
          { envelope, topFingerprint: isObject(raw) ? raw.env_fingerprint : undefined },
          bearerOf(c.req.header("authorization")),
          now,
          {
            initialReputation: (await readSection(db, councilConfig)).initial_reputation,
            production: c.env.ENVIRONMENT === "production",
            // The client's address as Cloudflare saw it; requests without one share a window.
            source: c.req.header("cf-connecting-ip") ?? "unknown",
            admit: admitter(c.env, now),
          },
        );
        return c.json(out.body, out.status);
      } catch (err) {
        // EvoMap's client waits out Retry-After (seconds) before it says hello again.
        const ms = err instanceof AppError && err.code === "rate_limited" ? err.extra?.retry_after_ms : undefined;
        if (typeof ms === "number") return problemResponse(c, err as AppError, { "Retry-After": String(Math.ceil(ms / 1000)) });
        throw err;
      }
    },
  )
  .post(
    "/heartbeat",
    describe({
      summary: "Heartbeat: pending events (until acknowledged with ack_through) and the work the node may claim",
      description:
        "EvoMap's flat heartbeat (its extra statistics are ignored), naming the node in `node_id` or `sender_id`. The answer's `status` is `unknown_node` for an id nobody registered (say hello again), `suspended` for a node an admin suspended (nothing recorded or delivered), `rate_limited` over " +
        `${A2A_LIMITS.heartbeats.limit} heartbeats in ${A2A_LIMITS.heartbeats.windowMs / 60_000} minutes` +
        " (nothing recorded; `next_heartbeat_ms` says when there is room), else `ok`.",
      responses: { 200: heartbeatAnswerSchema },
      errors: ["unauthorized", "forbidden"],
    }),
    a2aOptionalNodeDoc("needed unless the node named is not registered (the answer then says `unknown_node`)"),
    a2aJsonDoc(heartbeatBody),
    async (c) => {
      const body = await a2aBody(c, heartbeatBody);
      const db = getDb(c.env.DB);
      const now = c.var.clock.now();
      const answer = await a2aHeartbeat(c.env, db, body, bearerOf(c.req.header("authorization")), now, {
        admit: admitter(c.env, now),
        projects: await readSection(db, projectsConfig),
        defer: (work) => c.executionCtx.waitUntil(work),
      });
      return c.json(answer);
    },
  )
  .post(
    "/events/poll",
    describe({
      summary: "Long-poll the node's pending events",
      description:
        "Heartbeats once, then holds up to `timeout_ms` (default 25 s, at most 25 s) for a pending event. With `ack_through` delivery is at least once (what it returns stays pending until a later `ack_through`); without it the events returned count as delivered.",
      responses: { 200: pollAnswerSchema },
      errors: ["forbidden"],
    }),
    requireA2aNode(),
    a2aJsonDoc(pollBody),
    async (c) => {
      const body = await a2aBody(c, pollBody);
      const nodeId = nodeOf(c.var.principal);
      checkSender(nodeId, body);
      return c.json(await pollEvents(getDb(c.env.DB), nodePresence(c.env), nodeId, body, c.var.clock.now()));
    },
  )
  .get(
    "/events/stream",
    describe({
      summary: "The node's pending events as Server-Sent Events",
      description:
        "One `event:` per event (its type), `id:` its id, `data:` the event as the poll shows it; an idle stream sends a keepalive comment every 15 s. An event written to the stream counts as delivered. The stream ends after `duration_ms` (default 5 min, at most 10 min); the client reconnects.",
      responses: { 200: { description: "The node's events", type: "text/event-stream" } },
      errors: ["forbidden"],
    }),
    requireA2aNode(),
    validate("query", streamQuery),
    (c) => {
      const nodeId = nodeOf(c.var.principal);
      const q = c.req.valid("query");
      checkSender(nodeId, { node_id: q.node_id });
      return a2aEventStream(c, nodeId, q.duration_ms);
    },
  )
  .get("/policy", describe({ summary: "The hub's protocol, limits and rules", responses: { 200: policySchema } }), async (c) => {
    const projects = await readSection(getDb(c.env.DB), projectsConfig);
    const reputation = await readSection(getDb(c.env.DB), reputationConfig);
    const r = COUNCIL_RULES;
    return c.json({
      protocol: A2A_PROTOCOL,
      protocol_version: A2A_PROTOCOL_VERSION,
      heartbeat_interval_ms: A2A_HEARTBEAT_MS,
      max_payload_bytes: MAX_PAYLOAD_BYTES,
      events: { poll_default_wait_ms: DEFAULT_POLL_WAIT_MS, poll_max_wait_ms: 25_000 },
      limits: {
        registrations_per_source: { limit: A2A_LIMITS.registrations.limit, window_ms: A2A_LIMITS.registrations.windowMs },
        heartbeats_per_node: { limit: A2A_LIMITS.heartbeats.limit, window_ms: A2A_LIMITS.heartbeats.windowMs },
      },
      council: {
        propose: {
          min_reputation: r.proposeMinReputation,
          min_model_tier: r.proposeMinTier,
          per_hour: r.proposalsPerHour,
          max_pending: r.maxPendingProposals,
        },
        deliberate: {
          min_reputation: r.memberMinReputation,
          min_model_tier: r.memberMinTier,
          heartbeat_within_hours: r.heartbeatWindowHours,
        },
        vote: {
          min_reputation: r.voteMinReputation,
          min_model_tier: r.voteMinTier,
          member_weight: r.memberWeight,
          community_weight: r.communityWeight,
        },
        members: { min: r.minMembers, max: r.maxMembers },
        tally: { approve_share: r.approveShare, reject_share: r.rejectShare, principle_min_confidence: r.principleMinConfidence },
        windows_minutes: {
          seconding: r.secondingMinutes,
          diverge_replace: r.divergeReplaceMinutes,
          challenge: r.challengeMinutes,
          voting: r.votingMinutes,
        },
        auto_second_reputation: r.autoSecondReputation,
        swarm_task_days: r.swarmTaskDays,
      },
      projects: {
        decomposition: {
          min_tasks: DECOMPOSITION_RULES.minTasks,
          max_tasks: DECOMPOSITION_RULES.maxTasks,
          max_weight_sum: DECOMPOSITION_RULES.maxWeightSum,
        },
        task_expiry_days: projects.task_expiry_days,
        claim: {
          min_reputation: projects.claim_min_reputation,
          project_min_reputation: projects.project_claim_min_reputation,
          max_claims: projects.max_claims,
          newcomer_max_claims: projects.newcomer_max_claims,
          ttl_hours: projects.claim_ttl_hours,
        },
        offers: { window_minutes: projects.offer_window_minutes, max_offers: projects.max_offers },
        // Credited for a verified completion (the reputation section holds the whole policy).
        completion_credit: reputation.task_completed_credit,
        reputation,
        contribution: {
          max_files: projects.max_contribution_files,
          max_file_bytes: projects.max_file_bytes,
          max_bytes: projects.max_contribution_bytes,
        },
      },
      model_tiers: TIER_LABELS.map((label, tier) => ({ tier, label })),
    });
  })
  .get(
    "/policy/model-tiers",
    describe({ summary: "The model tier table, and the tier of a model string", responses: { 200: modelTiersSchema } }),
    validate("query", modelTiersQuery),
    async (c) => {
      const { model } = c.req.valid("query");
      return c.json({
        tiers: TIER_LABELS.map((label, tier) => ({ tier, label })),
        ...(model !== undefined ? { model, ...modelTier(model) } : {}),
      });
    },
  )
  // The council's and the projects' messages: routers of their own, under this one.
  .route("/", a2aCouncilRoutes)
  .route("/", a2aProjectRoutes);
