import { and, asc, eq, gt, inArray, ne, sql, type SQL } from "drizzle-orm";
import * as z from "zod";
import { DEFAULT_ALLOWED_TOOLS } from "../jobs/default-tools";
import type { Db } from "../db/client";
import { employees, MODEL_EFFORTS, type EmployeeRow } from "../db/schema";
import { RUNTIMES } from "../jobs/payloads";
import { AppError, notFound } from "../lib/errors";
import { appendEventWhere, insertWhere, rowsChanged } from "../lib/guarded-insert";
import { label } from "../lib/validation";

export const EMPLOYEE_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const employeeId = z.string().regex(EMPLOYEE_ID_PATTERN, "1-63 characters of a-z, 0-9, _ and -, starting with a letter or digit");

/**
 * `PUT /v1/employees/:id` body. Exported as a shape so later features extend it (Team-as-Agent adds
 * `team` with `employeeBody.extend({ team })` and keeps it in the row's per-employee `config`).
 */
export const employeeBodyShape = {
  name: label(100),
  reports_to: employeeId.nullable().optional(),
  runtime: z.enum(RUNTIMES),
  model: z.strictObject({ preferred: label(200), effort: z.enum(MODEL_EFFORTS).optional() }),
  capabilities: z
    .strictObject({
      allowed_tools: z.array(label(200)).max(200).optional(),
      denied_tools: z.array(label(200)).max(200).optional(),
    })
    .optional(),
  sandbox_enabled: z.boolean().optional(),
};
export const employeeBody = z.strictObject(employeeBodyShape);
export type EmployeeBody = z.infer<typeof employeeBody>;

/** The employee as stored, plus `effective`: what dispatch and the runner will actually use. */
export function employeeView(row: EmployeeRow, directReports?: string[]) {
  return {
    employee_id: row.id,
    name: row.name,
    reports_to: row.reportsTo,
    runtime: row.runtime,
    model: { preferred: row.modelPreferred, ...(row.modelEffort ? { effort: row.modelEffort } : {}) },
    ...(row.capabilities ? { capabilities: row.capabilities } : {}),
    ...(row.sandboxEnabled !== null ? { sandbox_enabled: row.sandboxEnabled } : {}),
    effective: {
      runtime: row.runtime,
      model: { preferred: row.modelPreferred, effort: row.modelEffort ?? null },
      capabilities: {
        allowed_tools: row.capabilities?.allowed_tools ?? DEFAULT_ALLOWED_TOOLS,
        allowed_tools_source: row.capabilities?.allowed_tools ? "employee" : "default",
        denied_tools: row.capabilities?.denied_tools ?? [],
      },
      sandbox_enabled: row.sandboxEnabled ?? false,
      config: row.config,
    },
    ...(directReports ? { direct_reports: directReports } : {}),
    status: row.status,
    paused_reason: row.pausedReason,
    status_changed_at: row.statusChangedAt,
    status_changed_by: row.statusChangedBy,
    revision: row.revision,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

export function findEmployee(db: Db, id: string) {
  return db.select().from(employees).where(eq(employees.id, id)).get();
}

/** The chain of managers above `start` (start included), through a recursive query; bounded. */
async function chainFrom(db: Db, start: string): Promise<string[]> {
  const rows = await db.all<{ id: string }>(sql`
    WITH RECURSIVE chain(id, depth) AS (
      SELECT ${start}, 0
      UNION
      SELECT e.reports_to, c.depth + 1 FROM ${employees} e JOIN chain c ON e.id = c.id
      WHERE e.reports_to IS NOT NULL AND c.depth < 10000
    ) SELECT id FROM chain`);
  return rows.map((r) => r.id);
}

/**
 * The forest rule as a SQL condition, evaluated inside the write itself: the parent exists and `id`
 * is not among its managers. Two concurrent PUTs (A→B, B→A) cannot both pass: D1 runs one at a time.
 */
function forestGuard(id: string, reportsTo: string | null): SQL {
  if (reportsTo === null) return sql`1`;
  return sql`(EXISTS (SELECT 1 FROM ${employees} WHERE id = ${reportsTo}) AND NOT EXISTS (
    WITH RECURSIVE chain(id) AS (
      SELECT ${reportsTo}
      UNION
      SELECT e.reports_to FROM ${employees} e JOIN chain c ON e.id = c.id WHERE e.reports_to IS NOT NULL
    ) SELECT 1 FROM chain WHERE id = ${id}))`;
}

/** Why `reports_to` is refused (422), or null when it keeps the forest a forest. */
async function forestProblem(db: Db, id: string, reportsTo: string | null): Promise<string | null> {
  if (reportsTo === null) return null;
  if (reportsTo === id) return "an employee cannot report to itself";
  if (!(await findEmployee(db, reportsTo))) return `unknown employee '${reportsTo}'`;
  const chain = await chainFrom(db, reportsTo);
  if (chain.includes(id)) return `would make a cycle: ${[id, ...chain.slice(0, chain.indexOf(id) + 1)].join(" → ")}`;
  return null;
}

function forestError(message: string) {
  return new AppError("validation_failed", `reports_to: ${message}`, { errors: [{ path: "reports_to", message }] });
}

/**
 * Creates or replaces an employee (PUT semantics: absent optional fields become unset). The write is
 * conditional on the forest rule and on the revision read, so a concurrent change is never lost
 * silently (409) and a cycle can never be stored. `config` (per-employee sections) is kept as is,
 * except for the `sections` a feature's fields set in the same PUT (undefined removes one).
 */
export async function putEmployee(
  db: Db,
  id: string,
  body: EmployeeBody,
  actor: string,
  now: Date,
  sections: Record<string, unknown> = {},
  /** The revision the writer read (a form opened earlier): a change made since is refused (409), not overwritten. */
  expectedRevision?: number,
): Promise<{ row: EmployeeRow; created: boolean }> {
  const reportsTo = body.reports_to ?? null;
  const problem = await forestProblem(db, id, reportsTo);
  if (problem) throw forestError(problem);
  const existing = await findEmployee(db, id);
  if (expectedRevision !== undefined) {
    if (!existing) throw notFound(`employee ${id}`);
    if (existing.revision !== expectedRevision) throw revisionConflict(id, expectedRevision, existing.revision);
  }
  const at = now.toISOString();
  const fields = {
    name: body.name,
    reportsTo,
    runtime: body.runtime,
    modelPreferred: body.model.preferred,
    modelEffort: body.model.effort ?? null,
    capabilities: body.capabilities ?? null,
    sandboxEnabled: body.sandbox_enabled ?? null,
    config: withSections(existing?.config ?? {}, sections),
    updatedAt: at,
  };
  const payload = { employee_id: id, name: body.name, reports_to: reportsTo, runtime: body.runtime, model: body.model, by: actor };
  const forest = forestGuard(id, reportsTo);

  if (existing) {
    const same = and(eq(employees.id, id), eq(employees.revision, existing.revision));
    const guard = sql`(EXISTS (SELECT 1 FROM ${employees} WHERE ${same}) AND ${forest})`;
    const [, updated] = await db.batch([
      appendEventWhere(db, { type: "employee.updated", subject: id, payload: { ...payload, revision: existing.revision + 1 } }, now, guard),
      db
        .update(employees)
        .set({ ...fields, revision: existing.revision + 1 })
        .where(and(same, forest))
        .returning(),
    ]);
    if (updated[0]) return { row: updated[0], created: false };
  } else {
    const guard = sql`(NOT EXISTS (SELECT 1 FROM ${employees} WHERE id = ${id}) AND ${forest})`;
    const [, inserted] = await db.batch([
      appendEventWhere(db, { type: "employee.created", subject: id, payload: { ...payload, revision: 1 } }, now, guard),
      insertWhere(db, employees, { id, ...fields, revision: 1, createdAt: at }, guard),
    ]);
    if (rowsChanged(inserted) > 0) return { row: (await findEmployee(db, id))!, created: true };
  }
  // The guarded write lost: either the forest rule fails now, or someone changed the employee first.
  const nowProblem = await forestProblem(db, id, reportsTo);
  if (nowProblem) throw forestError(nowProblem);
  if (expectedRevision !== undefined) throw revisionConflict(id, expectedRevision, undefined);
  throw new AppError("conflict", `employee ${id} was changed concurrently; read it again and retry`);
}

function revisionConflict(id: string, read: number, now: number | undefined) {
  return new AppError(
    "conflict",
    `employee ${id} changed since revision ${read}${now !== undefined ? ` (it is at ${now} now)` : ""}; read it again and redo the change`,
  );
}

/** `config` with the given sections set (an undefined value removes its section). */
function withSections(config: Record<string, unknown>, sections: Record<string, unknown>): Record<string, unknown> {
  const out = { ...config };
  for (const [name, value] of Object.entries(sections)) {
    if (value === undefined) delete out[name];
    else out[name] = value;
  }
  return out;
}

export async function getEmployeeView(db: Db, id: string) {
  const row = await findEmployee(db, id);
  if (!row) throw notFound(`employee ${id}`);
  const reports = await db.select({ id: employees.id }).from(employees).where(eq(employees.reportsTo, id)).orderBy(asc(employees.id));
  return employeeView(
    row,
    reports.map((r) => r.id),
  );
}

/** Ordered by id; `cursor` is the last id of the previous page. */
export async function listEmployees(db: Db, q: { limit: number; cursor?: string }) {
  const rows = await db
    .select()
    .from(employees)
    .where(q.cursor !== undefined ? gt(employees.id, q.cursor) : undefined)
    .orderBy(asc(employees.id))
    .limit(q.limit + 1);
  const page = rows.slice(0, q.limit);
  return { employees: page.map((r) => employeeView(r)), next_cursor: rows.length > q.limit ? page[page.length - 1]!.id : null };
}

/** Which of `ids` exist and are not retired, in the order given (a roster naming a departed employee skips them). */
export async function existingEmployeeIds(db: Db, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .select({ id: employees.id })
    .from(employees)
    .where(and(inArray(employees.id, ids), ne(employees.status, "retired")));
  const found = new Set(rows.map((r) => r.id));
  return ids.filter((id, i) => found.has(id) && ids.indexOf(id) === i);
}
