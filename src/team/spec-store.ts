import { eq, isNull, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { teamSpecs } from "../db/schema";
import { appendEvent } from "../lib/events";
import type { IsolatedWorkspace } from "../jobs/isolated-workspace";
import type { GateDecision } from "./gate";
import type { TeamSpec } from "./validate";

export interface FrozenGoal {
  title: string;
  acceptance_criteria: string[];
  /**
   * The round works in this isolated copy of the employee's workspace instead of the workspace itself
   * (an eval arm of the team 2×2: four rounds of one case must not see each other's files).
   */
  workspace?: IsolatedWorkspace;
}

export type TeamSpecRow = typeof teamSpecs.$inferSelect;

export function findTeamSpec(db: Db, taskId: string): Promise<TeamSpecRow | undefined> {
  return db.select().from(teamSpecs).where(eq(teamSpecs.taskId, taskId)).get();
}

/**
 * Freezes a task's spec once: one set-if-null statement (`… DO UPDATE … WHERE spec IS NULL`), so two
 * paths racing to create the same task are normal and safe. The loser does not keep its own copy:
 * it re-reads the row and adopts the spec that actually won, so one task never runs two ways.
 */
export async function freezeTeamSpec(
  db: Db,
  input: {
    taskId: string;
    employeeId: string;
    spec: TeamSpec;
    gate: GateDecision;
    goal: FrozenGoal;
    /** What the validation warned about (the capacity check), kept with the event that froze it. */
    warnings?: readonly Record<string, unknown>[];
  },
  now: Date,
): Promise<{ spec: TeamSpec; gate: GateDecision; won: boolean }> {
  const at = now.toISOString();
  const [won] = await db.batch([
    db
      .insert(teamSpecs)
      .values({
        taskId: input.taskId,
        employeeId: input.employeeId,
        spec: input.spec as unknown as Record<string, unknown>,
        specFrozenAt: at,
        gate: input.gate as unknown as Record<string, unknown>,
        goal: input.goal,
        createdAt: at,
      })
      .onConflictDoUpdate({
        target: teamSpecs.taskId,
        set: { spec: sql`excluded.spec`, specFrozenAt: sql`excluded.spec_frozen_at`, gate: sql`excluded.gate`, refusal: sql`NULL` },
        setWhere: isNull(teamSpecs.spec),
      })
      .returning({ taskId: teamSpecs.taskId }),
    // Keyed per task: only the batch that ran first (the winner) leaves the event.
    appendEvent(
      db,
      {
        type: "team_spec_frozen",
        subject: input.taskId,
        payload: {
          task_id: input.taskId,
          employee_id: input.employeeId,
          spec: input.spec,
          // The measured inputs travel with the decision, so the audit trail says why (issue 39).
          gate: {
            decision: input.gate.decision,
            reason: input.gate.reason,
            signals: input.gate.signals,
            ...(input.gate.measured ? { measured: input.gate.measured } : {}),
          },
          ...(input.warnings?.length ? { warnings: input.warnings } : {}),
        },
        dedupeKey: `team_spec_frozen:${input.taskId}`,
      },
      now,
    ),
  ]);
  if (won.length > 0) return { spec: input.spec, gate: input.gate, won: true };
  const row = await findTeamSpec(db, input.taskId);
  if (!row?.spec) throw new Error(`team spec of ${input.taskId} vanished after a lost freeze`);
  return { spec: row.spec as unknown as TeamSpec, gate: row.gate as unknown as GateDecision, won: false };
}

/** An audited refusal: the row records why no team was formed (only when no spec was ever frozen). */
export function recordTeamRefusal(
  db: Db,
  input: {
    taskId: string;
    employeeId: string;
    refusal: Record<string, unknown>;
    /** The gate as answered: solo, with the refusal's reason (the team gate is kept in `refusal.gate`). */
    gate: Omit<GateDecision, "decision" | "reason"> & { decision: string; reason: string };
    goal: FrozenGoal;
  },
  now: Date,
) {
  const at = now.toISOString();
  return [
    db
      .insert(teamSpecs)
      .values({
        taskId: input.taskId,
        employeeId: input.employeeId,
        refusal: input.refusal,
        gate: input.gate as unknown as Record<string, unknown>,
        goal: input.goal,
        createdAt: at,
      })
      .onConflictDoNothing(),
    appendEvent(
      db,
      {
        type: "team_refused",
        subject: input.taskId,
        payload: { task_id: input.taskId, employee_id: input.employeeId, ...input.refusal },
        dedupeKey: `team_refused:${input.taskId}`,
      },
      now,
    ),
  ] as const;
}
