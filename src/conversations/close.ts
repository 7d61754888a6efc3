import { and, desc, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { getAgentLock } from "../durable-objects/agent-lock-rpc";
import { getDb, type Db } from "../db/client";
import { errorText, guarded } from "../db/guard";
import { conversations, predictionLog, userModels, type ConversationRow, type ConversationTurnRow } from "../db/schema";
import type { Env } from "../env";
import { AppError } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { appendEventWhere } from "../lib/guarded-insert";
import {
  calculateError,
  calibrate,
  extract,
  observe,
  predict,
  route,
  updateModel,
  type EvolutionAction,
  type Feedback,
  type Prediction,
  type PredictionError,
  type Turn,
  type UserModel,
} from "../prediction";
import { employeeEvolutionConfig, evolutionConfig, type EvolutionConfig } from "../evolution/config";
import { feedbackFactor, securitySignals } from "../evolution/external-factors";
import { addMemoryStatement } from "../evolution/memory-entry";
import { diagnoseStatements } from "../evolution/skills-store";
import { readSection } from "../lib/config";
import { findEmployee } from "../tasks/employees";
import { isStateConflict, loadEvolutionState, saveEvolutionState } from "../evolution/state";
import { trigger, type TriggerOutcome } from "../evolution/triggers";
import { conversationView, listTurns, requireConversation } from "./store";

/**
 * The end of a conversation (seed 003 §5.1, the channel reply handler): the prediction engine runs
 * once, in the seed's order — predict → extract → calculate_error → update_model → route — and its
 * metacognition observes the result (calibrating every 100 predictions). Everything it decides lands
 * in one batch with the close: the conversation's outcome, the user model (persisted at every close,
 * which is at least as often as the seed's "every 5 updates and on close", so a crash loses none),
 * the prediction_log row, the agent's counters and thresholds, an episodic memory entry for a
 * Moderate error, and their events. The user model and the agent's state are guarded by version: two
 * conversations of one pair closing at once both count, one after the other. What needs a model
 * (a reflection) or the evolution rounds (an emergency evolution) is triggered after the batch,
 * through the lock, the semaphore and the cooldown.
 */
export type CloseReason = "closed_by_request" | "idle" | "batch";

export interface ConversationOutcome {
  prediction: Prediction;
  error: Omit<PredictionError, "prediction" | "actual">;
  metrics: PredictionError["actual"];
  action: EvolutionAction & { trigger?: TriggerOutcome };
}

const MAX_ATTEMPTS = 8;

export function turnsOf(rows: readonly ConversationTurnRow[]): { turns: Turn[]; feedback: Feedback[] } {
  const ok = rows.filter((t) => t.status === "ok");
  return {
    turns: ok.map((t) => ({ role: t.role, content: t.content, at: t.at })),
    feedback: rows.flatMap((t) => (t.feedback ? [t.feedback] : [])),
  };
}

interface Computed {
  outcome: ConversationOutcome;
  model: UserModel;
  modelVersion: number;
  consecutive: number;
  calibration: ReturnType<typeof calibrate>["changed"];
}

/** The pure part: what the engine makes of these turns for this pair, against what it knew. */
async function compute(db: Db, conv: ConversationRow, rows: readonly ConversationTurnRow[], evo: EvolutionConfig, now: Date) {
  const state = await loadEvolutionState(db, conv.employeeId);
  const stored = await db
    .select()
    .from(userModels)
    .where(and(eq(userModels.userId, conv.userId), eq(userModels.agentId, conv.employeeId)))
    .get();
  const model = (stored?.model as unknown as UserModel | undefined) ?? null;
  const { turns, feedback } = turnsOf(rows);
  const firstUser = turns.find((t) => t.role === "user")?.content ?? "";
  const prediction = predict(model, firstUser, now);
  // `[evolution.external_factors] user_feedback = false`: the users' feedback does not reach the engine.
  const actual = extract(turns, [...feedbackFactor(evo, feedback)]);
  const error = calculateError(prediction, actual, state.thresholds);
  const nextModel = updateModel(model, actual, error.inferred_satisfaction, now);
  const routed = route(error, state.consecutive_significant);
  const previous = await db
    .select({ detail: predictionLog.detail })
    .from(predictionLog)
    .where(and(eq(predictionLog.agentId, conv.employeeId), eq(predictionLog.userId, conv.userId)))
    .orderBy(desc(predictionLog.id))
    .limit(1)
    .get();
  const observed = observe(state.metacognition, error, (previous?.detail?.error as PredictionError | undefined) ?? null);
  const calibrated = calibrate(observed);
  const { prediction: _p, actual: _a, ...errorFields } = error;
  return {
    state,
    computed: {
      outcome: { prediction, error: errorFields, metrics: actual, action: routed.action },
      model: nextModel,
      modelVersion: stored?.version ?? 0,
      consecutive: routed.consecutive_significant,
      calibration: calibrated.changed,
    } satisfies Computed,
    nextState: {
      ...state,
      thresholds: calibrated.state.thresholds,
      metacognition: calibrated.state,
      consecutive_significant: routed.consecutive_significant,
      predictions: state.predictions + 1,
    },
  };
}

function saveModel(db: Db, userId: string, agentId: string, model: UserModel, readVersion: number, now: Date) {
  const at = now.toISOString();
  const values = { model: model as unknown as Record<string, unknown>, totalConversations: model.total_conversations, lastUpdated: at };
  if (readVersion === 0) return db.insert(userModels).values({ userId, agentId, ...values, version: 1 });
  return db
    .update(userModels)
    .set({ ...values, version: sql`${guarded(sql`${userModels.version} = ${readVersion}`, readVersion + 1)}` })
    .where(and(eq(userModels.userId, userId), eq(userModels.agentId, agentId)));
}

/** How long a close may hold its employee's turn, and wait for it (real time; a close takes tens of ms). */
const TURN_TTL_MS = 15_000;
const TURN_WAIT_MS = 25_000;

/**
 * Closes an open conversation and runs the prediction engine on it; closing a closed one answers
 * what its close decided (idempotent). The outcome is the response of `POST …/close`.
 *
 * Closes of one employee's conversations take turns (its `turn:<employee>` object): each reads and
 * writes the employee's evolution state and a user model, so concurrent ones would collide and retry,
 * and twenty at once ran out of retries. In turn, each lands first time. If the turn cannot be had
 * in time the close goes ahead anyway: its conditional writes and retries still keep it correct.
 */
export async function closeConversation(env: Env, conversationId: string, reason: CloseReason, actor: string, now: Date) {
  const conv = await requireConversation(getDb(env.DB), conversationId);
  if (conv.status === "closed") return closeInTurn(env, conversationId, reason, actor, now);
  const turn = getAgentLock(env, `turn:${conv.employeeId}`);
  const holder = `close:${conversationId}:${crypto.randomUUID()}`;
  const entered = await turn.enterTurn({ holder, ttl_ms: TURN_TTL_MS, wait_ms: TURN_WAIT_MS }).catch((err: unknown) => {
    console.warn(`close ${conversationId}: could not take its employee's turn; closing without it`, err);
    return { ok: false as const };
  });
  try {
    return await closeInTurn(env, conversationId, reason, actor, now);
  } finally {
    if (entered.ok) await turn.leaveTurn({ holder }).catch(() => undefined);
  }
}

async function closeInTurn(env: Env, conversationId: string, reason: CloseReason, actor: string, now: Date) {
  const db = getDb(env.DB);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const conv = await requireConversation(db, conversationId);
    if (conv.status === "closed") return conversationView(conv, await listTurns(db, conversationId));
    const rows = await listTurns(db, conversationId);
    const employee = await findEmployee(db, conv.employeeId);
    const evo = employee ? await employeeEvolutionConfig(db, employee) : await readSection(db, evolutionConfig);
    const { state, computed, nextState } = await compute(db, conv, rows, evo, now);
    const at = now.toISOString();
    const open = sql`EXISTS (SELECT 1 FROM ${conversations} WHERE ${conversations.id} = ${conversationId} AND ${conversations.status} = 'open')`;
    // `security_events`: what happened to the employee since its previous close joins the evolution context.
    const security = await securitySignals(db, evo, conv.employeeId);
    const routed = computed.outcome.action;
    const action: EvolutionAction =
      "context" in routed && security.length ? { ...routed, context: `${routed.context}\n${security.join("\n")}` } : routed;
    const outcome = { ...computed.outcome, action };
    // Step 5, diagnose (the skill lifecycle), between update_model and route: lands with the close or not at all.
    const diagnose = await diagnoseStatements(
      db,
      {
        employeeId: conv.employeeId,
        conversationId,
        compositeError: outcome.error.composite_error,
        text: turnsOf(rows)
          .turns.map((t) => t.content)
          .join("\n"),
        cfg: evo,
        open,
      },
      now,
    );
    const statements: BatchItem<"sqlite">[] = [
      appendEventWhere(
        db,
        {
          type: "conversation.closed",
          subject: conversationId,
          payload: {
            conversation_id: conversationId,
            employee_id: conv.employeeId,
            user_id: conv.userId,
            reason,
            turns: conv.turnCount,
            composite_error: outcome.error.composite_error,
            category: outcome.error.category,
            action: action.kind,
            by: actor,
          },
          dedupeKey: `conversation.closed:${conversationId}`,
        },
        now,
        open,
      ),
      ...(action.kind === "store_episodic"
        ? [
            addMemoryStatement(
              db,
              conv.employeeId,
              action.content,
              ["episodic"],
              action.importance,
              `prediction:${conversationId}`,
              now,
              open,
            ),
          ]
        : []),
      db.insert(predictionLog).values({
        agentId: conv.employeeId,
        userId: conv.userId,
        conversationId,
        compositeError: outcome.error.composite_error,
        category: outcome.error.category,
        action: action.kind,
        detail: { prediction: outcome.prediction, error: { ...outcome.error }, action } as unknown as Record<string, unknown>,
        timestamp: at,
      }),
      saveModel(db, conv.userId, conv.employeeId, computed.model, computed.modelVersion, now),
      ...diagnose,
      saveEvolutionState(db, state, nextState, now),
      ...(computed.calibration
        ? [
            appendEvent(
              db,
              {
                type: "evolution.thresholds_adjusted",
                subject: conv.employeeId,
                payload: {
                  agent_id: conv.employeeId,
                  before: computed.calibration.before,
                  after: computed.calibration.after,
                  rules: computed.calibration.rules,
                },
              },
              now,
            ),
          ]
        : []),
      // Last: closing is what makes every guard above false, and it aborts the batch if someone closed first.
      db
        .update(conversations)
        .set({
          status: sql`${guarded(sql`${conversations.status} = 'open'`, "closed")}`,
          closedAt: at,
          closeReason: reason,
          lastActivityAt: at,
          outcome: { prediction: outcome.prediction, error: outcome.error, action } as unknown as Record<string, unknown>,
        })
        .where(eq(conversations.id, conversationId)),
    ];
    try {
      await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
    } catch (err) {
      const text = errorText(err);
      if (text.includes("conversations.status") || /UNIQUE constraint failed: prediction_log/.test(text)) continue; // closed by someone else: read theirs
      if (isStateConflict(text) || text.includes("user_models.version") || /UNIQUE constraint failed: user_models/.test(text)) continue;
      throw err;
    }
    // The router's actions that need a model, or the evolution rounds, go through the triggers.
    if (action.kind === "trigger_reflection" || action.kind === "trigger_emergency_evolution") {
      const triggered = await trigger(
        env,
        {
          agentId: conv.employeeId,
          kind: action.kind === "trigger_reflection" ? "reflection" : "emergency_evolution",
          context: action.context,
          conversationId,
        },
        now,
      );
      const withTrigger = { ...action, trigger: triggered };
      await db
        .update(conversations)
        .set({
          outcome: { prediction: outcome.prediction, error: outcome.error, action: withTrigger } as unknown as Record<string, unknown>,
        })
        .where(eq(conversations.id, conversationId));
    }
    return conversationView(await requireConversation(db, conversationId), rows);
  }
  throw new AppError("conflict", `conversation ${conversationId} could not be closed: its user model kept changing; try again`);
}
