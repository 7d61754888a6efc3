import * as z from "zod";
import { CONVERSATION_STATUSES } from "../../../db/schema";
import type { ConversationOutcome } from "../../../conversations/close";
import type { openConversation, sendMessage } from "../../../conversations/messages";
import type { turnView } from "../../../conversations/store";
import type { TriggerOutcome } from "../../../evolution/triggers";
import { timestamp } from "./common";

/** `POST /v1/employees/:id/conversations`: the conversation, open. */
export const conversationOpenedSchema = z.object({
  conversation_id: z.string(),
  employee_id: z.string(),
  user_id: z.string(),
  status: z.literal("open"),
}) satisfies z.ZodType<Awaited<ReturnType<typeof openConversation>>>;

/** `POST /v1/conversations/:id/messages`: the user's turn is stored and the employee's reply runs. */
export const messageAcceptedSchema = z.object({
  conversation_id: z.string(),
  turn: z.number().int(),
  job_id: z.string(),
  status: z.literal("reply_pending"),
}) satisfies z.ZodType<Awaited<ReturnType<typeof sendMessage>>>;

// What the prediction engine made of a closed conversation (src/prediction, src/conversations/close.ts).

const predictionSchema = z.object({
  expected_satisfaction: z.number(),
  expected_follow_up_rate: z.number(),
  expected_topic: z.string().nullable(),
  confidence: z.number(),
  timestamp,
  expected_topics: z.array(z.string()),
  expected_correction_rate: z.number().nullable(),
}) satisfies z.ZodType<ConversationOutcome["prediction"]>;

const predictionErrorSchema = z.object({
  delta_satisfaction: z.number(),
  topic_surprise: z.number(),
  unexpected_correction: z.boolean(),
  unexpected_follow_up: z.boolean(),
  composite_error: z.number(),
  category: z.enum(["negligible", "moderate", "significant", "critical"]),
  inferred_satisfaction: z.number(),
}) satisfies z.ZodType<ConversationOutcome["error"]>;

const triggerSchema = z.union([
  z.object({
    status: z.literal("refused"),
    request_id: z.string(),
    reason: z.enum(["gvu_disabled", "cooldown", "agent_locked", "semaphore_full"]),
  }),
  z.object({ status: z.enum(["accepted", "running"]), request_id: z.string(), job_id: z.string().optional() }),
]) satisfies z.ZodType<TriggerOutcome>;

/** Where the router sent the conversation; a reflection or emergency evolution carries what its trigger did. */
const actionSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("none") }),
  z.object({ kind: z.literal("store_episodic"), content: z.string(), importance: z.number() }),
  z.object({ kind: z.literal("trigger_reflection"), context: z.string(), trigger: triggerSchema.optional() }),
  z.object({
    kind: z.literal("trigger_emergency_evolution"),
    context: z.string(),
    reason: z.enum(["critical", "consecutive_significant"]),
    trigger: triggerSchema.optional(),
  }),
]) satisfies z.ZodType<ConversationOutcome["action"]>;

const turnSchema = z.object({
  seq: z.number().int(),
  role: z.enum(["user", "assistant"]),
  content: z.string(),
  status: z.enum(["ok", "failed"]),
  at: timestamp,
  feedback: z.object({ polarity: z.enum(["positive", "negative"]), strength: z.number() }).optional(),
  job_id: z.string().optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
}) satisfies z.ZodType<ReturnType<typeof turnView>>;

/** `GET /v1/conversations/:id` (and `POST …/close`): the turns, and after the close what the prediction engine made of it. */
export const conversationSchema = z.object({
  conversation_id: z.string(),
  employee_id: z.string(),
  user_id: z.string(),
  source: z.enum(["live", "batch"]),
  status: z.enum(CONVERSATION_STATUSES),
  reply_pending: z.boolean(),
  created_at: timestamp,
  last_activity_at: timestamp,
  closed_at: timestamp.optional(),
  close_reason: z.string().nullable().optional(),
  turns: z.array(turnSchema),
  /** Lines the goal loop posted here (`GET` only): a team round's start and its estimated minutes. */
  notices: z
    .array(
      z.object({
        kind: z.literal("goal_progress"),
        task_id: z.string(),
        round_id: z.string().optional(),
        content: z.string(),
        at: timestamp,
      }),
    )
    .optional(),
  prediction: predictionSchema.optional(),
  error: predictionErrorSchema.optional(),
  action: actionSchema.optional(),
});

/** `POST /v1/conversations`: the transcript, recorded and closed, and what the prediction engine made of it. */
export const transcriptIngestedSchema = z.object({
  conversation_id: z.string(),
  prediction: predictionSchema,
  error: predictionErrorSchema,
  action: actionSchema,
});
