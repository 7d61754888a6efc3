import { and, asc, desc, eq, ne, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { isUniqueFailure } from "../db/guard";
import { employeeSkills, predictionLog, type EmployeeSkillRow } from "../db/schema";
import { scanText } from "../council/scan";
import { AppError, notFound } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { appendEventWhere, rowsChanged } from "../lib/guarded-insert";
import { newId } from "../lib/ids";
import { findEmployee } from "../tasks/employees";
import { employeeEvolutionConfig, type EvolutionConfig } from "./config";
import { BASELINE_WINDOW, baselineOf, liftOf, selectPromptSkills, shouldDeactivate, triggersMatch, type SkillInput } from "./skills";

/**
 * Loading and saving an employee's skills: the API's list/create/update/activate/deactivate/retire,
 * the prompt's active set, and the close pipeline's diagnose statements. Every change lands in one
 * batch with its `skill.*` event; an activation is one conditional statement that counts the active
 * skills as it writes, so two racing activations never exceed `max_active_skills`.
 */

export function skillView(row: EmployeeSkillRow) {
  return {
    skill_id: row.skillId,
    employee_id: row.employeeId,
    name: row.name,
    description: row.description,
    triggers: row.triggers,
    body: row.body,
    state: row.state,
    state_reason: row.stateReason,
    state_since: row.stateSince,
    activated_at: row.activatedAt,
    uses: row.uses,
    measured_uses: row.measuredUses,
    lift: liftOf(row),
    created_by: row.createdBy,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}
export type SkillView = ReturnType<typeof skillView>;

async function requireEmployee(db: Db, employeeId: string) {
  const employee = await findEmployee(db, employeeId);
  if (!employee) throw notFound(`employee ${employeeId}`);
  return employee;
}

function findSkill(db: Db, employeeId: string, skillId: string) {
  return db
    .select()
    .from(employeeSkills)
    .where(and(eq(employeeSkills.employeeId, employeeId), eq(employeeSkills.skillId, skillId)))
    .get();
}

async function requireSkill(db: Db, employeeId: string, skillId: string) {
  const row = await findSkill(db, employeeId, skillId);
  if (!row) throw notFound(`skill ${skillId} of employee ${employeeId}`);
  return row;
}

export async function listSkills(db: Db, employeeId: string) {
  const employee = await requireEmployee(db, employeeId);
  const rows = await db
    .select()
    .from(employeeSkills)
    .where(eq(employeeSkills.employeeId, employeeId))
    .orderBy(asc(employeeSkills.createdAt), asc(employeeSkills.skillId))
    .all();
  const cfg = await employeeEvolutionConfig(db, employee);
  return {
    employee_id: employeeId,
    max_active_skills: cfg.max_active_skills,
    skill_token_budget: cfg.skill_token_budget,
    skills: rows.map(skillView),
  };
}

/**
 * `skill_security_scan` on: the text a skill puts into the prompt is scanned with the council's
 * static scan; an attack is refused (`security_scan`, 403) and the refusal is recorded as
 * `skill.scan_refused`, the employee's security event. Off: nothing is scanned.
 */
async function scanOrRefuse(db: Db, cfg: EvolutionConfig, employeeId: string, input: Partial<SkillInput>, actor: string, now: Date) {
  if (!cfg.skill_security_scan) return;
  const scan = scanText(input.name, input.description, input.triggers?.join("\n"), input.body);
  if (scan.clean) return;
  await appendEvent(
    db,
    {
      type: "skill.scan_refused",
      subject: employeeId,
      payload: { employee_id: employeeId, name: input.name ?? null, categories: scan.categories, patterns: scan.patterns, by: actor },
    },
    now,
  );
  throw new AppError("security_scan", `The skill matched the static security scan (${scan.categories.join(", ")})`, {
    extra: { reason: "skill_security_scan", categories: scan.categories },
  });
}

function duplicateName(name: string) {
  return new AppError("conflict", `the employee already has a skill named '${name}'`, { extra: { reason: "skill_name_taken" } });
}

export async function createSkill(db: Db, employeeId: string, input: SkillInput, actor: string, now: Date) {
  const employee = await requireEmployee(db, employeeId);
  await scanOrRefuse(db, await employeeEvolutionConfig(db, employee), employeeId, input, actor, now);
  const skillId = newId("skill");
  const at = now.toISOString();
  try {
    await db.batch([
      db.insert(employeeSkills).values({
        employeeId,
        skillId,
        name: input.name,
        description: input.description,
        triggers: input.triggers,
        body: input.body,
        state: "inactive",
        stateSince: at,
        createdBy: actor,
        createdAt: at,
        updatedAt: at,
      }),
      appendEvent(
        db,
        { type: "skill.created", subject: skillId, payload: { employee_id: employeeId, skill_id: skillId, name: input.name, by: actor } },
        now,
      ),
    ]);
  } catch (err) {
    if (isUniqueFailure(err, "employee_skills")) throw duplicateName(input.name);
    throw err;
  }
  return skillView(await requireSkill(db, employeeId, skillId));
}

/** A changed skill keeps its state and its lift; a changed text is scanned like a new one. */
export async function updateSkill(db: Db, employeeId: string, skillId: string, input: Partial<SkillInput>, actor: string, now: Date) {
  const employee = await requireEmployee(db, employeeId);
  const row = await requireSkill(db, employeeId, skillId);
  if (row.state === "retired") throw illegal(skillId, "retired", "update");
  await scanOrRefuse(db, await employeeEvolutionConfig(db, employee), employeeId, input, actor, now);
  const at = now.toISOString();
  try {
    await db.batch([
      db
        .update(employeeSkills)
        .set({ ...input, updatedAt: at })
        .where(and(eq(employeeSkills.employeeId, employeeId), eq(employeeSkills.skillId, skillId))),
      appendEvent(
        db,
        {
          type: "skill.updated",
          subject: skillId,
          payload: { employee_id: employeeId, skill_id: skillId, fields: Object.keys(input).sort(), by: actor },
        },
        now,
      ),
    ]);
  } catch (err) {
    if (isUniqueFailure(err, "employee_skills") && input.name) throw duplicateName(input.name);
    throw err;
  }
  return skillView(await requireSkill(db, employeeId, skillId));
}

function illegal(skillId: string, from: string, action: string) {
  return new AppError("illegal_transition", `skill ${skillId} is ${from}: it cannot ${action}`, { extra: { state: from } });
}

const activeCount = (employeeId: string) =>
  sql`(SELECT COUNT(*) FROM ${employeeSkills} WHERE ${employeeSkills.employeeId} = ${employeeId} AND ${employeeSkills.state} = 'active')`;

/**
 * An inactive skill becomes active only while fewer than `max` of the employee's skills are: the
 * event and the update carry the same guard (the count taken as the statement runs), so they land
 * together or not at all, and of two activations racing for the last place exactly one lands.
 */
function activation(db: Db, employeeId: string, skillId: string, max: number, payload: Record<string, unknown>, now: Date, extra?: SQL) {
  const at = now.toISOString();
  const mine = and(eq(employeeSkills.employeeId, employeeId), eq(employeeSkills.skillId, skillId), eq(employeeSkills.state, "inactive"));
  const room = sql`${activeCount(employeeId)} < ${max}`;
  const guard = sql`EXISTS (SELECT 1 FROM ${employeeSkills} WHERE ${mine}) AND ${room}${extra ? sql` AND ${extra}` : sql``}`;
  return [
    appendEventWhere(
      db,
      { type: "skill.activated", subject: skillId, payload: { employee_id: employeeId, skill_id: skillId, ...payload } },
      now,
      guard,
    ),
    db
      .update(employeeSkills)
      .set({ state: "active", stateReason: String(payload.reason), stateSince: at, activatedAt: at, updatedAt: at })
      .where(and(mine, room, ...(extra ? [extra] : []))),
  ] as const;
}

function stateChange(
  db: Db,
  row: EmployeeSkillRow,
  to: "inactive" | "retired",
  reason: string,
  payload: Record<string, unknown>,
  now: Date,
  extra?: SQL,
) {
  const at = now.toISOString();
  const mine = and(
    eq(employeeSkills.employeeId, row.employeeId),
    eq(employeeSkills.skillId, row.skillId),
    eq(employeeSkills.state, row.state),
    ...(extra ? [extra] : []),
  );
  return [
    appendEventWhere(
      db,
      {
        type: to === "retired" ? "skill.retired" : "skill.deactivated",
        subject: row.skillId,
        payload: { employee_id: row.employeeId, skill_id: row.skillId, from: row.state, reason, ...payload },
      },
      now,
      sql`EXISTS (SELECT 1 FROM ${employeeSkills} WHERE ${mine})`,
    ),
    db.update(employeeSkills).set({ state: to, stateReason: reason, stateSince: at, updatedAt: at }).where(mine),
  ] as const;
}

export type SkillAction = "activate" | "deactivate" | "retire";

/**
 * An operator's state change. Asking for the state a skill is already in changes nothing and answers
 * it; a retired skill stays retired (`illegal_transition`); an activation with no place left under
 * `max_active_skills` is `409 conflict` with reason `max_active_skills`.
 */
export async function changeSkillState(db: Db, employeeId: string, skillId: string, action: SkillAction, actor: string, now: Date) {
  const employee = await requireEmployee(db, employeeId);
  for (let attempt = 0; attempt < 4; attempt++) {
    const row = await requireSkill(db, employeeId, skillId);
    const target = action === "activate" ? "active" : action === "deactivate" ? "inactive" : "retired";
    if (row.state === target) return skillView(row);
    if (row.state === "retired") throw illegal(skillId, "retired", action);
    let update: unknown;
    if (action === "activate") {
      const cfg = await employeeEvolutionConfig(db, employee);
      const [event, write] = activation(db, employeeId, skillId, cfg.max_active_skills, { reason: "operator", by: actor }, now);
      [, update] = await db.batch([event, write]);
      if (rowsChanged(update) === 0) {
        const again = await requireSkill(db, employeeId, skillId);
        if (again.state === "inactive") {
          throw new AppError("conflict", `employee ${employeeId} already has ${cfg.max_active_skills} active skills (max_active_skills)`, {
            extra: { reason: "max_active_skills", max_active_skills: cfg.max_active_skills },
          });
        }
        continue;
      }
    } else {
      const [event, write] = stateChange(db, row, target as "inactive" | "retired", "operator", { by: actor }, now);
      [, update] = await db.batch([event, write]);
      if (rowsChanged(update) === 0) continue; // it changed under us: read it again
    }
    return skillView(await requireSkill(db, employeeId, skillId));
  }
  throw new AppError("conflict", `skill ${skillId} kept changing; try again`);
}

/** The employee's active skills for its next turn, ranked and cut to its `skill_*` limits. */
export async function promptSkills(db: Db, employeeId: string, cfg: EvolutionConfig, tokenCap: number) {
  const rows = await db
    .select()
    .from(employeeSkills)
    .where(and(eq(employeeSkills.employeeId, employeeId), eq(employeeSkills.state, "active")))
    .all();
  return selectPromptSkills(rows, Math.min(cfg.skill_token_budget, tokenCap), cfg.max_active_skills);
}

export interface DiagnoseInput {
  employeeId: string;
  conversationId: string;
  compositeError: number;
  /** The closed conversation's text (its turns), which trigger terms are matched against. */
  text: string;
  cfg: EvolutionConfig;
  /** Holds while the close has not landed: every statement here lands only with it. */
  open: SQL;
}

/**
 * Step 5 of the close pipeline (diagnose): each skill active at the close counts a use, and a
 * measured one when the employee has a baseline (the mean composite error of its latest
 * `BASELINE_WINDOW` closes); with `skill_auto_activate`, a skill whose lift is negative after
 * `MIN_USES_FOR_DEACTIVATION` measured uses is deactivated, and inactive skills whose trigger terms
 * occur in the conversation are activated (oldest first) while places under `max_active_skills`
 * remain, except one it switched off for negative lift (that one waits for an operator). Returns the statements for the close's batch; none when the employee has no skills.
 */
export async function diagnoseStatements(db: Db, input: DiagnoseInput, now: Date): Promise<BatchItem<"sqlite">[]> {
  const rows = await db
    .select()
    .from(employeeSkills)
    .where(and(eq(employeeSkills.employeeId, input.employeeId), ne(employeeSkills.state, "retired")))
    .orderBy(asc(employeeSkills.createdAt), asc(employeeSkills.skillId))
    .all();
  if (rows.length === 0) return [];
  const recent = await db
    .select({ error: predictionLog.compositeError })
    .from(predictionLog)
    .where(eq(predictionLog.agentId, input.employeeId))
    .orderBy(desc(predictionLog.id))
    .limit(BASELINE_WINDOW)
    .all();
  const baseline = baselineOf(recent.map((r) => r.error).filter((e): e is number => typeof e === "number"));
  const at = now.toISOString();
  const out: BatchItem<"sqlite">[] = [];
  for (const row of rows.filter((r) => r.state === "active")) {
    const measured = baseline === null ? 0 : 1;
    const counters = {
      measuredUses: row.measuredUses + measured,
      errorSum: row.errorSum + (baseline === null ? 0 : input.compositeError),
      baselineSum: row.baselineSum + (baseline ?? 0),
    };
    out.push(
      db
        .update(employeeSkills)
        .set({
          uses: sql`${employeeSkills.uses} + 1`,
          measuredUses: sql`${employeeSkills.measuredUses} + ${measured}`,
          errorSum: sql`${employeeSkills.errorSum} + ${baseline === null ? 0 : input.compositeError}`,
          baselineSum: sql`${employeeSkills.baselineSum} + ${baseline ?? 0}`,
          updatedAt: at,
        })
        .where(and(eq(employeeSkills.employeeId, row.employeeId), eq(employeeSkills.skillId, row.skillId), input.open)),
    );
    if (input.cfg.skill_auto_activate && shouldDeactivate(counters)) {
      const lift = liftOf(counters);
      out.push(
        ...stateChange(
          db,
          row,
          "inactive",
          "negative_lift",
          { by: "diagnose", conversation_id: input.conversationId, lift, measured_uses: counters.measuredUses },
          now,
          input.open,
        ),
      );
    }
  }
  if (input.cfg.skill_auto_activate) {
    // A skill diagnose switched off for its negative lift stays off until an operator activates it again.
    const candidates = rows.filter(
      (r) => r.state === "inactive" && r.stateReason !== "negative_lift" && triggersMatch(r.triggers, input.text),
    );
    for (const row of candidates) {
      out.push(
        ...activation(
          db,
          input.employeeId,
          row.skillId,
          input.cfg.max_active_skills,
          { reason: "trigger_match", by: "diagnose", conversation_id: input.conversationId },
          now,
          input.open,
        ),
      );
    }
  }
  return out;
}
