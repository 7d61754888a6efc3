import { Hono } from "hono";
import { z } from "zod";
import { getDb } from "../../db/client";
import { requireAuth } from "../../lib/auth";
import { validate } from "../../lib/validation";
import { readSection } from "../../lib/config";
import { councilConfig } from "../../council/config";
import { COUNCIL_RULES } from "../../council/rules";
import { A2A_PROTOCOL, A2A_PROTOCOL_VERSION, MAX_PAYLOAD_BYTES, readEnvelope } from "../../a2a/envelope";
import { checkSender } from "../../a2a/council";
import { a2aHeartbeat, A2A_HEARTBEAT_MS, bearerOf, heartbeatBody, hello, pollBody, pollEvents } from "../../a2a/nodes";
import { modelTier, TIER_LABELS } from "../../a2a/tiers";
import { projectsConfig } from "../../projects/config";
import { DECOMPOSITION_RULES } from "../../projects/decomposition";
import type { AppEnv } from "../app-env";
import { a2aBody, readJson } from "./a2a-body";
import { nodeOf } from "./projects";

/**
 * The EvoMap node protocol's core (hello, heartbeat, events, policy) on crewplane's node registry.
 * Every route translates onto the functions `/v1` uses; the facade has no rules of its own.
 */
export const a2aRoutes = new Hono<AppEnv>()
  .post("/hello", async (c) => {
    const db = getDb(c.env.DB);
    const envelope = readEnvelope(await readJson(c), "hello");
    const out = await hello(c.env, db, envelope, bearerOf(c.req.header("authorization")), c.var.clock.now(), {
      initialReputation: (await readSection(db, councilConfig)).initial_reputation,
      production: c.env.ENVIRONMENT === "production",
    });
    return c.json(out.body, out.status);
  })
  .post("/heartbeat", async (c) => {
    const body = await a2aBody(c, heartbeatBody);
    return c.json(await a2aHeartbeat(c.env, getDb(c.env.DB), body, bearerOf(c.req.header("authorization")), c.var.clock.now()));
  })
  .post("/events/poll", requireAuth({ node: true }), async (c) => {
    const body = await a2aBody(c, pollBody);
    const nodeId = nodeOf(c.var.principal);
    checkSender(nodeId, body);
    return c.json(await pollEvents(getDb(c.env.DB), nodeId, body, c.var.clock.now()));
  })
  .get("/policy", async (c) => {
    const projects = await readSection(getDb(c.env.DB), projectsConfig);
    const r = COUNCIL_RULES;
    return c.json({
      protocol: A2A_PROTOCOL,
      protocol_version: A2A_PROTOCOL_VERSION,
      heartbeat_interval_ms: A2A_HEARTBEAT_MS,
      max_payload_bytes: MAX_PAYLOAD_BYTES,
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
        claim: { min_reputation: projects.claim_min_reputation, ttl_hours: projects.claim_ttl_hours },
        completion_credit: projects.completion_credit,
        contribution: {
          max_files: projects.max_contribution_files,
          max_file_bytes: projects.max_file_bytes,
          max_bytes: projects.max_contribution_bytes,
        },
      },
      model_tiers: TIER_LABELS.map((label, tier) => ({ tier, label })),
    });
  })
  .get("/policy/model-tiers", validate("query", z.object({ model: z.string().max(200).optional() })), async (c) => {
    const { model } = c.req.valid("query");
    return c.json({
      tiers: TIER_LABELS.map((label, tier) => ({ tier, label })),
      ...(model !== undefined ? { model, ...modelTier(model) } : {}),
    });
  });
