import { and, eq, isNull, sql } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { conversations, conversationTurns, jobs, type EmployeeRow } from "../db/schema";
import type { Env } from "../env";
import { readSection } from "../lib/config";
import { AppError, notFound } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { appendEventWhere, insertWhere, rowsChanged } from "../lib/guarded-insert";
import { newId } from "../lib/ids";
import { jsonStringBytes } from "../jobs/limits";
import { employeeTurnPayload, type EmployeeTurnPayload } from "../jobs/payloads";
import { mintEmployeeToken, revokeEmployeeToken } from "../jobs/employee-token";
import { dispatchJob, prepareJob, REDACTED_SECRET } from "../jobs/submit";
import { searchMemory } from "../knowledge/memory";
import { extractTopics } from "../prediction";
import { findEmployee } from "../tasks/employees";
import { DEFAULT_ALLOWED_TOOLS } from "../jobs/default-tools";
import { soulForEmployeeRun, withSoul } from "../evolution/soul-run";
import { employeeEvolutionConfig } from "../evolution/config";
import { promptSkills } from "../evolution/skills-store";
import { conversationsConfig } from "./config";
import { playbookInjectionStatements, selectPlaybookEntries } from "./playbook";
import { turnPrompt } from "./prompt";
import { listTurns, requireConversation } from "./store";

/** A user turn is at most this many bytes (its JSON encoding), so the turn's prompt always fits a job. */
export const MESSAGE_MAX_BYTES = 24 * 1024;
const MEMORY_ENTRIES = 5;
/**
 * The skills block never exceeds this many estimated tokens whatever `skill_token_budget` says, so a
 * turn's prompt (a 24 KiB message, the playbook, memory, skills) always fits a job prompt.
 */
const SKILL_PROMPT_TOKEN_CAP = 8_000;

const userId = z.string().trim().min(1).max(200);

export const openBody = z.strictObject({ user_id: userId });

/** Feedback on the employee's last reply (seed 003 §3.4: ±0.2–0.4). */
export const feedback = z.strictObject({ polarity: z.enum(["positive", "negative"]), strength: z.number().min(0.2).max(0.4) });

export const messageBody = z.strictObject({
  content: z
    .string()
    .min(1)
    .refine((c) => c.trim().length > 0, "must not be blank")
    .refine((c) => c.isWellFormed(), "must not contain lone surrogates")
    .refine((c) => jsonStringBytes(c) <= MESSAGE_MAX_BYTES, `must be at most ${MESSAGE_MAX_BYTES} bytes of UTF-8 in its JSON encoding`),
  feedback: feedback.optional(),
});
export type MessageBody = z.infer<typeof messageBody>;

/** `POST /v1/employees/:id/conversations`: a conversation for `user_id`, open until closed or idle. */
export async function openConversation(db: Db, employeeId: string, input: { user_id: string }, actor: string, now: Date) {
  if (!(await findEmployee(db, employeeId))) throw notFound(`employee ${employeeId}`);
  const id = newId("conv");
  const at = now.toISOString();
  await db.batch([
    db.insert(conversations).values({
      id,
      employeeId,
      userId: input.user_id,
      source: "live",
      status: "open",
      openedBy: actor,
      createdAt: at,
      lastActivityAt: at,
    }),
    appendEvent(
      db,
      {
        type: "conversation.opened",
        subject: id,
        payload: { conversation_id: id, employee_id: employeeId, user_id: input.user_id, by: actor },
      },
      now,
    ),
  ]);
  return { conversation_id: id, employee_id: employeeId, user_id: input.user_id, status: "open" as const };
}

/**
 * What the employee remembers that matches a message: its memory searched by the message's top
 * keywords (the prediction engine's topic extraction), each on its own, best matches first. A whole
 * message as one query would demand every word of it.
 */
export async function matchingMemory(db: Db, employeeId: string, text: string): Promise<string[]> {
  const found = new Map<string, string>();
  for (const keyword of extractTopics([text], 3)) {
    for (const entry of await searchMemory(db, employeeId, keyword, MEMORY_ENTRIES).catch(() => [])) {
      if (found.size < MEMORY_ENTRIES) found.set(entry.memory_id, entry.text);
    }
  }
  return [...found.values()];
}

/** The runner job that runs the employee for one reply: the same `employee_turn` a solo goal round runs. */
export function replyPayload(employee: EmployeeRow, conversationId: string, prompt: string, timeoutMs: number): EmployeeTurnPayload {
  return employeeTurnPayload.parse({
    runtime: employee.runtime,
    model: employee.modelPreferred,
    ...(["low", "medium", "high", "xhigh", "max"].includes(employee.modelEffort ?? "") ? { effort: employee.modelEffort } : {}),
    employee_id: employee.id,
    employee: {
      name: employee.name,
      capabilities: {
        allowed_tools: employee.capabilities?.allowed_tools ?? DEFAULT_ALLOWED_TOOLS,
        denied_tools: employee.capabilities?.denied_tools ?? [],
      },
      sandbox_enabled: employee.sandboxEnabled === true,
    },
    purpose: "conversation",
    conversation_id: conversationId,
    prompt,
    timeout_ms: timeoutMs,
  });
}

/**
 * `POST /v1/conversations/:id/messages`: stores the user's turn and starts the employee's reply (a
 * runner job owned by the conversation). One reply at a time: while one is in flight another message
 * is `409 reply_pending`, decided in the same guarded batch that stores the turn, so two racing
 * messages never both start a reply. A closed conversation is `409 conversation_closed`.
 */
export async function sendMessage(env: Env, db: Db, conversationId: string, body: MessageBody, actor: string, now: Date) {
  const conv = await requireConversation(db, conversationId);
  if (conv.status !== "open")
    throw new AppError("conflict", `conversation ${conversationId} is closed`, { extra: { reason: "conversation_closed" } });
  if (conv.pendingJobId) throw replyPending(conversationId, conv.pendingJobId);
  const employee = await findEmployee(db, conv.employeeId);
  if (!employee) throw new AppError("conflict", `employee ${conv.employeeId} no longer exists`, { extra: { reason: "employee_gone" } });
  const cfg = await readSection(db, conversationsConfig);
  const history = (await listTurns(db, conversationId)).slice(-cfg.history_turns);
  const [playbook, memory, skills] = await Promise.all([
    selectPlaybookEntries(db, employee.id, body.content, { user_id: conv.userId }),
    matchingMemory(db, employee.id, body.content),
    employeeEvolutionConfig(db, employee).then((evo) => promptSkills(db, employee.id, evo, SKILL_PROMPT_TOKEN_CAP)),
  ]);
  const prompt = turnPrompt({
    employee: { name: employee.name },
    user_id: conv.userId,
    playbook,
    skills: skills.included,
    memory,
    history,
    message: body.content,
  });
  const jobId = newId("job");
  // The reply runs with its own short-lived token (the employee's MCP tools); the job row keeps none.
  const expires = new Date(now.getTime() + cfg.reply_timeout_ms * 3 + 10 * 60_000);
  const token = await mintEmployeeToken(db, { employee_id: employee.id, job_id: jobId }, expires, now);
  // The employee's current SOUL travels with the run, which renders it and checks it (the soul guard).
  const soul = await soulForEmployeeRun(db, employee);
  const payload = {
    ...withSoul(replyPayload(employee, conversationId, prompt, cfg.reply_timeout_ms), soul),
    employee_token: token.token,
    employee_token_expires_at: expires.toISOString(),
  };
  const prepared = prepareJob(db, { kind: "employee_turn", payload, owner: { kind: "conversation", id: conversationId } }, now, jobId, {
    rowPayload: { ...payload, employee_token: REDACTED_SECRET },
  });
  const seq = conv.turnCount + 1;
  const at = now.toISOString();
  // Everything lands only while the conversation is open with no reply in flight and still at this turn.
  const free = sql`EXISTS (SELECT 1 FROM ${conversations} WHERE ${conversations.id} = ${conversationId} AND ${conversations.status} = 'open' AND ${conversations.pendingJobId} IS NULL AND ${conversations.turnCount} = ${conv.turnCount})`;
  const landed = await db.batch([
    token.insert,
    insertWhere(
      db,
      conversationTurns,
      { conversationId, seq, role: "user", content: body.content, status: "ok", ...(body.feedback ? { feedback: body.feedback } : {}), at },
      free,
    ),
    insertWhere(db, jobs, jobRow(prepared.jobId, { ...payload, employee_token: REDACTED_SECRET }, conversationId, at), free),
    appendEventWhere(
      db,
      {
        type: "job.queued",
        subject: prepared.jobId,
        payload: {
          job_id: prepared.jobId,
          kind: "employee_turn",
          runtime: payload.runtime,
          owner: { kind: "conversation", id: conversationId },
        },
        dedupeKey: `job:${prepared.jobId}:queued`,
      },
      now,
      free,
    ),
    appendEventWhere(
      db,
      {
        type: "conversation.message",
        subject: conversationId,
        payload: {
          conversation_id: conversationId,
          turn: seq,
          job_id: prepared.jobId,
          ...(body.feedback ? { feedback: body.feedback } : {}),
          // Which active skills the prompt carries and which it left out, and why (only when there are any).
          ...(skills.included.length || skills.left_out.length
            ? { skills: { included: skills.included.map((s) => s.skillId), left_out: skills.left_out, tokens: skills.tokens } }
            : {}),
          by: actor,
        },
      },
      now,
      free,
    ),
    // The playbook entries this prompt carries, for their applications once the conversation closes.
    ...playbookInjectionStatements(
      db,
      { agent_id: employee.id, conversation_id: conversationId, turn: seq, entry_ids: playbook.map((e) => e.entry_id) },
      now,
      free,
    ),
    db
      .update(conversations)
      .set({ pendingJobId: prepared.jobId, turnCount: seq, lastActivityAt: at })
      .where(
        and(
          eq(conversations.id, conversationId),
          eq(conversations.status, "open"),
          isNull(conversations.pendingJobId),
          eq(conversations.turnCount, conv.turnCount),
        ),
      ),
  ]);
  const [turn, update] = [landed[1], landed[landed.length - 1]];
  if (rowsChanged(turn) === 0 || rowsChanged(update) === 0) {
    await revokeEmployeeToken(db, prepared.jobId, now);
    const now2 = await requireConversation(db, conversationId);
    if (now2.status !== "open")
      throw new AppError("conflict", `conversation ${conversationId} is closed`, { extra: { reason: "conversation_closed" } });
    throw replyPending(conversationId, now2.pendingJobId);
  }
  try {
    await dispatchJob(env, prepared.message);
  } catch (err) {
    console.error(`conversations: reply job ${prepared.jobId} could not be queued`, err);
    await recordReplyEnd(
      db,
      conversationId,
      prepared.jobId,
      { status: "failed", error: { code: "dispatch_failed", message: "the dispatch queue refused the reply job" } },
      now,
      true,
    );
  }
  return { conversation_id: conversationId, turn: seq, job_id: prepared.jobId, status: "reply_pending" as const };
}

function jobRow(id: string, payload: EmployeeTurnPayload, conversationId: string, at: string) {
  return {
    id,
    kind: "employee_turn",
    runtime: payload.runtime,
    status: "queued" as const,
    ownerKind: "conversation",
    ownerId: conversationId,
    payload: payload as unknown as Record<string, unknown>,
    attempt: 0,
    createdAt: at,
    updatedAt: at,
  };
}

function replyPending(conversationId: string, jobId: string | null) {
  return new AppError("conflict", `conversation ${conversationId} is still waiting for the employee's reply`, {
    extra: { reason: "reply_pending", ...(jobId ? { job_id: jobId } : {}) },
  });
}

export type ReplyEnd =
  { status: "completed"; text: string; runtime?: string; model?: string } | { status: "failed"; error: { code: string; message: string } };

/**
 * The reply job ended: the employee's turn (or a failed turn saying why) lands once, keyed by the job,
 * the conversation is free for the next message, and `conversation.replied` (or `reply_failed`) says
 * so. A reply that arrives after the conversation closed is still recorded in its transcript.
 */
export async function recordReplyEnd(db: Db, conversationId: string, jobId: string, end: ReplyEnd, now: Date, jobDead = false) {
  const conv = await requireConversation(db, conversationId);
  const at = now.toISOString();
  const seq = conv.turnCount + 1;
  const waiting = sql`EXISTS (SELECT 1 FROM ${conversations} WHERE ${conversations.id} = ${conversationId} AND ${conversations.pendingJobId} = ${jobId} AND ${conversations.turnCount} = ${conv.turnCount})`;
  const turn =
    end.status === "completed"
      ? { conversationId, seq, role: "assistant" as const, content: end.text, status: "ok" as const, jobId, at }
      : { conversationId, seq, role: "assistant" as const, content: "", status: "failed" as const, jobId, error: end.error, at };
  const event =
    end.status === "completed"
      ? {
          type: "conversation.replied",
          subject: conversationId,
          payload: {
            conversation_id: conversationId,
            employee_id: conv.employeeId,
            turn: seq,
            job_id: jobId,
            content: end.text,
            ...(end.runtime ? { runtime: end.runtime } : {}),
            ...(end.model ? { model: end.model } : {}),
          },
          dedupeKey: `conversation.replied:${jobId}`,
        }
      : {
          type: "conversation.reply_failed",
          subject: conversationId,
          payload: { conversation_id: conversationId, employee_id: conv.employeeId, turn: seq, job_id: jobId, error: end.error },
          dedupeKey: `conversation.replied:${jobId}`,
        };
  await db.batch([
    revokeEmployeeToken(db, jobId, now),
    insertWhere(db, conversationTurns, turn, waiting).onConflictDoNothing(),
    appendEventWhere(db, event, now, waiting),
    ...(jobDead
      ? [
          db
            .update(jobs)
            .set({ status: "dead", error: end.status === "failed" ? end.error : null, updatedAt: at, finishedAt: at })
            .where(and(eq(jobs.id, jobId), eq(jobs.status, "queued"))),
        ]
      : []),
    db
      .update(conversations)
      .set({ pendingJobId: null, turnCount: seq, lastActivityAt: at })
      .where(and(eq(conversations.id, conversationId), eq(conversations.pendingJobId, jobId), eq(conversations.turnCount, conv.turnCount))),
  ]);
}
