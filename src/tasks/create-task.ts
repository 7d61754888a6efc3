import { eq, inArray, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import * as z from "zod";
import type { Db } from "../db/client";
import { conversations, dispatchCursors, employees, TASK_MODES, TASK_PRIORITIES, tasks } from "../db/schema";
import { getRateWindow } from "../durable-objects/rate-window-rpc";
import type { Env } from "../env";
import { readSection } from "../lib/config";
import { AppError } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { appendEventWhere, insertWhere, rowsChanged } from "../lib/guarded-insert";
import { newId } from "../lib/ids";
import { label } from "../lib/validation";
import { topologyConfig } from "../topology/config";
import { findOverrideInForce } from "../topology/overrides";
import { dispatchConfig, dispatchGuardConfig, type DispatchConfig, type DispatchPolicy } from "./dispatch/config";
import { buildPickPrompt, runPick } from "./dispatch/llm-select";
import { hierarchyRoute, overrideMayApply, roundRobinPick, usesRoster, type Fallback, type Route } from "./dispatch/route";
import { employeeId, existingEmployeeIds, findEmployee } from "./employees";
import { checkFrozenGoalSize } from "./frozen-goal";
import { taskClassOf } from "./task-class";

export const conversationRef = z.string().regex(/^conv_[A-Za-z0-9_-]{1,80}$/, "a conversation id");

export const newTaskBody = z
  .strictObject({
    title: label(300),
    tags: z.array(label(64)).max(20).default([]),
    priority: z.enum(TASK_PRIORITIES).default("medium"),
    mode: z.enum(TASK_MODES),
    assignee: employeeId,
    acceptance_criteria: z.array(z.string().trim().min(1).max(2_000)).max(50).default([]),
    /** A manual task is never worked by the goal loop: a person does it and settles it by hand. */
    manual: z.boolean().default(false),
    /** Rounds the goal loop may spend on it (default: `[goals] iteration_cap`); not for a manual task. */
    rounds_left: z.number().int().min(0).max(50).optional(),
    /** The conversation the task came from: a team round's progress line is posted there (seed 002). */
    conversation_id: conversationRef.optional(),
  })
  .superRefine((body, ctx) => {
    if (body.manual && body.rounds_left !== undefined)
      ctx.addIssue({ code: "custom", path: ["rounds_left"], message: "a manual task is not worked in rounds" });
    checkFrozenGoalSize(body, ctx);
  });
export type NewTask = z.infer<typeof newTaskBody>;

/** Turns a round_robin dispatch may lose to concurrent ones before it answers 409 (each round one wins). */
const MAX_TURN_ATTEMPTS = 32;

/** The window key `[dispatch_guard]` counts an employee's dispatches under. */
export const dispatchWindowKey = (employee: string) => `dispatch:${employee}`;

/**
 * Creates a task and routes it (POST /v1/tasks). The row is written once, with its final route, in
 * one batch with its event: a task is never seen unrouted and never assigned twice. The dispatch
 * guard admits the dispatch first; refused → 429 and nothing is written.
 * With `llm_select` this call waits (bounded by `wait_ms`) for the pick, then answers with it or
 * with the hierarchy's route, whose record names the reason (`llm_select_timeout`, …).
 */
export async function createTask(
  env: Env,
  db: Db,
  body: NewTask,
  actor: string,
  now: Date,
  /** The goal loop's round budget, frozen on the row (null for a manual task). */
  roundsBudget: number | null = null,
) {
  const taskId = newId("task");
  const assignee = await findEmployee(db, body.assignee);
  if (assignee?.status === "retired")
    throw new AppError("employee_retired", `employee ${body.assignee} is retired and takes no new work; assign the task to someone else`);
  if (!assignee) {
    throw new AppError("validation_failed", `assignee: unknown employee '${body.assignee}'`, {
      errors: [{ path: "assignee", message: `unknown employee '${body.assignee}'` }],
    });
  }
  if (body.conversation_id && !(await findConversationId(db, body.conversation_id))) {
    throw new AppError("validation_failed", `conversation_id: unknown conversation '${body.conversation_id}'`, {
      errors: [{ path: "conversation_id", message: `unknown conversation '${body.conversation_id}'` }],
    });
  }
  const taskClass = taskClassOf(body.tags, body.priority);
  const [dispatch, guard] = await Promise.all([readSection(db, dispatchConfig), readSection(db, dispatchGuardConfig)]);
  const windowMs = guard.window_secs * 1000;

  // Own keys only: a class is a user's tag, and `constructor` or `__proto__` must not read Object.prototype.
  const configured = Object.hasOwn(dispatch.rosters, taskClass) ? dispatch.rosters[taskClass]! : [];
  const roster = usesRoster(dispatch.policy) ? await existingEmployeeIds(db, configured) : [];
  // round_robin takes the class's turn by compare-and-set: a dispatch that raced another for the same
  // turn lands nothing, gives its window slot back and takes the next turn (each round one of them wins).
  for (let attempt = 1; ; attempt++) {
    let route: Route;
    let cursor: number | undefined;
    let advance = 1;
    let window: ReturnType<typeof getRateWindow>;
    if (dispatch.policy === "round_robin" && roster.length > 0) {
      // Peeked, and moved on in the same batch as the task, so a refused dispatch leaves it where it was.
      cursor = (await db.select().from(dispatchCursors).where(eq(dispatchCursors.taskClass, taskClass)).get())?.counter ?? 0;
      const turn = await takeRoundRobinTurn(env, roster, cursor, { taskId, taskClass, limit: guard.max_in_window, windowMs, now });
      if (!turn.ok) {
        // Every window looked full, but a full window may be a concurrent dispatch's slot that it gives
        // back on losing its turn: while turns are still moving, look again before answering 429.
        const moved = (await db.select().from(dispatchCursors).where(eq(dispatchCursors.taskClass, taskClass)).get())?.counter ?? 0;
        if (moved !== cursor && attempt < MAX_TURN_ATTEMPTS) continue;
        throw turn.refusal;
      }
      window = turn.window;
      advance = turn.skipped.length + 1;
      route = {
        assignedTo: turn.member,
        routedBy: "round_robin",
        route: { policy: "round_robin", roster, ...(turn.skipped.length > 0 ? { skipped_at_limit: turn.skipped } : {}) },
      };
    } else {
      if (dispatch.policy === "llm_select" && roster.length > 0) {
        route = await llmSelectRoute(env, db, { taskId, body, taskClass, roster, dispatch, windowMs, limit: guard.max_in_window, now });
      } else {
        route = await hierarchy(
          db,
          dispatch.policy,
          body.assignee,
          taskClass,
          roster.length,
          usesRoster(dispatch.policy) ? "roster_empty" : undefined,
        );
      }
      window = getRateWindow(env, dispatchWindowKey(route.assignedTo));
      await admit(window, route.assignedTo, { taskId, limit: guard.max_in_window, windowMs, now, windowSecs: guard.window_secs });
    }

    const at = now.toISOString();
    const row = {
      id: taskId,
      title: body.title,
      mode: body.mode,
      tags: body.tags,
      priority: body.priority,
      taskClass,
      acceptanceCriteria: body.acceptance_criteria,
      assignee: body.assignee,
      assignedTo: route.assignedTo,
      routedBy: route.routedBy,
      route: route.route,
      status: "assigned" as const,
      retryCount: 0,
      createdBy: actor,
      createdAt: at,
      manual: body.manual,
      roundsBudget: body.manual ? null : roundsBudget,
      originConversationId: body.conversation_id ?? null,
    };
    const event = {
      type: "task.created",
      subject: taskId,
      payload: {
        task_id: taskId,
        mode: body.mode,
        task_class: taskClass,
        assignee: body.assignee,
        assigned_to: route.assignedTo,
        routed_by: route.routedBy,
        route: route.route,
        manual: body.manual,
        ...(body.conversation_id ? { conversation_id: body.conversation_id } : {}),
        by: actor,
      },
    };
    let statements: [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]];
    if (cursor === undefined) {
      statements = [db.insert(tasks).values(row), appendEvent(db, event, now)];
    } else {
      // Everything holds only while the class's turn is still the one peeked; moving it is last.
      const turn = sql`COALESCE((SELECT ${dispatchCursors.counter} FROM ${dispatchCursors} WHERE ${dispatchCursors.taskClass} = ${taskClass}), 0) = ${cursor}`;
      statements = [
        appendEventWhere(db, event, now, turn),
        insertWhere(db, tasks, row, turn),
        db
          .insert(dispatchCursors)
          .values({ taskClass, counter: cursor + advance })
          .onConflictDoUpdate({
            target: dispatchCursors.taskClass,
            set: { counter: cursor + advance },
            setWhere: eq(dispatchCursors.counter, cursor),
          }),
      ];
    }
    let landed: boolean;
    try {
      const results = await db.batch(statements);
      landed = cursor === undefined || rowsChanged(results[1]) > 0;
    } catch (err) {
      // Nothing was written: give the admitted slot back so the window counts only real dispatches.
      await window.release({ token: taskId }).catch((e: unknown) => console.error("dispatch: could not release a window slot", e));
      throw err;
    }
    if (landed) {
      return { task_id: taskId, assigned_to: route.assignedTo, routed_by: route.routedBy, task_class: taskClass, route: route.route };
    }
    await window.release({ token: taskId });
    if (attempt >= MAX_TURN_ATTEMPTS) {
      throw new AppError("conflict", `the ${taskClass} round-robin turn kept moving under concurrent dispatches; try again`);
    }
  }
}

interface Admission {
  taskId: string;
  limit: number;
  windowMs: number;
  now: Date;
}

/** Takes a slot in `member`'s dispatch window for this task, or answers 429 (nothing is written). */
async function admit(window: ReturnType<typeof getRateWindow>, member: string, input: Admission & { windowSecs: number }) {
  const admitted = await window.take({ limit: input.limit, windowMs: input.windowMs, now: input.now.getTime(), token: input.taskId });
  if (!admitted.ok) {
    throw new AppError("rate_limited", `${member} already has ${admitted.count} dispatches in the last ${input.windowSecs} s`, {
      extra: { employee_id: member, limit: admitted.limit, window_secs: input.windowSecs, retry_after_ms: admitted.retry_after_ms },
    });
  }
}

/**
 * round_robin's turn: the member whose turn it is, or — when that one is at its dispatch limit — the
 * next one in the roster with room, in turn order (the turn then moves past it). A refused take
 * records nothing, so the skipped members' windows are untouched. Every member at its limit → the 429 to answer,
 * as llm_select answers.
 */
async function takeRoundRobinTurn(env: Env, roster: string[], cursor: number, input: Admission & { taskClass: string }) {
  const skipped: string[] = [];
  let retryAfterMs = Number.POSITIVE_INFINITY;
  for (let k = 0; k < roster.length; k++) {
    const member = roundRobinPick(roster, cursor + k);
    const window = getRateWindow(env, dispatchWindowKey(member));
    const taken = await window.take({ limit: input.limit, windowMs: input.windowMs, now: input.now.getTime(), token: input.taskId });
    if (taken.ok) return { ok: true as const, member, window, skipped };
    skipped.push(member);
    retryAfterMs = Math.min(retryAfterMs, taken.retry_after_ms);
  }
  const refusal = new AppError("rate_limited", `every ${input.taskClass} roster member is at its dispatch limit`, {
    extra: { roster, limit: input.limit, window_secs: input.windowMs / 1000, retry_after_ms: retryAfterMs },
  });
  return { ok: false as const, refusal };
}

/**
 * The hierarchy, with a D5 override applied only when topology evolution is on and the policy lets
 * it (fixed_hierarchy, or an empty roster). With D5 off no override is looked up at all.
 */
async function hierarchy(db: Db, policy: DispatchPolicy, assignee: string, taskClass: string, rosterSize: number, fallback?: Fallback) {
  const extra = fallback ? { fallback } : {};
  if (!overrideMayApply(policy, rosterSize)) return hierarchyRoute(policy, assignee, null, extra);
  const topology = await readSection(db, topologyConfig);
  if (!topology.enabled) return hierarchyRoute(policy, assignee, null, extra);
  return hierarchyRoute(policy, assignee, await findOverrideInForce(db, taskClass, assignee), extra);
}

/**
 * llm_select: the model picks among roster members with room in their dispatch window (a member at
 * its limit is not offered; none with room → 429 before any job). A failed pick falls back to the
 * plain hierarchy; D5 overrides do not apply there (seed 000: only when the roster is empty).
 */
async function llmSelectRoute(
  env: Env,
  db: Db,
  input: {
    taskId: string;
    body: NewTask;
    taskClass: string;
    roster: string[];
    dispatch: DispatchConfig;
    windowMs: number;
    limit: number;
    now: Date;
  },
): Promise<Route> {
  const { body, roster, now } = input;
  const counts = await Promise.all(
    roster.map((id) => getRateWindow(env, dispatchWindowKey(id)).peek({ windowMs: input.windowMs, now: now.getTime() })),
  );
  const open = roster.filter((_, i) => counts[i]!.count < input.limit);
  if (open.length === 0) {
    throw new AppError("rate_limited", `every ${input.taskClass} roster member is at its dispatch limit`, {
      extra: { roster, limit: input.limit, window_secs: input.windowMs / 1000 },
    });
  }
  const names = await db.select({ id: employees.id, name: employees.name }).from(employees).where(inArray(employees.id, open));
  const candidates = open.map((id) => ({ id, name: names.find((n) => n.id === id)?.name ?? id }));
  const prompt = buildPickPrompt(
    {
      title: body.title,
      tags: body.tags,
      priority: body.priority,
      task_class: input.taskClass,
      acceptance_criteria: body.acceptance_criteria,
    },
    candidates,
  );
  const pick = await runPick(env, db, { taskId: input.taskId, prompt, candidateIds: open, config: input.dispatch.llm_select, now });
  if (pick.ok)
    return { assignedTo: pick.employeeId, routedBy: "llm_select", route: { policy: "llm_select", roster: open, job_id: pick.jobId } };
  return hierarchyRoute("llm_select", body.assignee, null, {
    fallback: pick.fallback,
    roster: open,
    ...(pick.jobId ? { job_id: pick.jobId } : {}),
  });
}

async function findConversationId(db: Db, id: string): Promise<boolean> {
  return (await db.select({ id: conversations.id }).from(conversations).where(eq(conversations.id, id)).get()) !== undefined;
}
