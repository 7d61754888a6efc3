import { and, eq, sql } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { employees } from "../db/schema";
import { readSection } from "../lib/config";
import { AppError, notFound } from "../lib/errors";
import { appendEventWhere } from "../lib/guarded-insert";
import { findEmployee } from "../tasks/employees";
import { effectiveEvolution, employeeEvolution, evolutionConfig, TOGGLEABLE } from "./config";

/**
 * `evolution_toggle` (seed 003 §7): the employee (through its own run's token) or a manager flips one
 * of the employee's own evolution flags. `cognitive_memory` is refused: the cognitive memory layer is
 * always resident, and writes to that key are refused as the seed says; so is every key that is not a
 * flag. The write is guarded by the employee's revision, so it never overwrites a concurrent PUT.
 */
export const toggleBody = z.strictObject({ key: z.string().min(1).max(64), value: z.boolean() });

export async function toggleEvolution(db: Db, employeeId: string, body: z.infer<typeof toggleBody>, actor: string, now: Date) {
  if (!(TOGGLEABLE as readonly string[]).includes(body.key)) {
    throw new AppError(
      "validation_failed",
      `'${body.key}' cannot be toggled${body.key === "cognitive_memory" ? ": the cognitive memory layer is always resident" : ""}`,
      {
        errors: [{ path: "key", message: `one of ${TOGGLEABLE.join(", ")}` }],
        extra: { reason: "not_toggleable", toggleable: [...TOGGLEABLE] },
      },
    );
  }
  for (let attempt = 0; attempt < 5; attempt++) {
    const row = await findEmployee(db, employeeId);
    if (!row) throw notFound(`employee ${employeeId}`);
    const own = employeeEvolution.safeParse(row.config?.evolution ?? {});
    const next = { ...(own.success ? own.data : {}), [body.key]: body.value };
    const same = and(eq(employees.id, employeeId), eq(employees.revision, row.revision));
    const [, updated] = await db.batch([
      appendEventWhere(
        db,
        {
          type: "evolution.toggled",
          subject: employeeId,
          payload: {
            employee_id: employeeId,
            key: body.key,
            value: body.value,
            before: (own.success ? own.data : {})[body.key as keyof typeof next] ?? null,
            by: actor,
          },
        },
        now,
        sql`EXISTS (SELECT 1 FROM ${employees} WHERE ${same})`,
      ),
      db
        .update(employees)
        .set({ config: { ...row.config, evolution: next }, revision: row.revision + 1, updatedAt: now.toISOString() })
        .where(same)
        .returning(),
    ]);
    if (updated[0]) {
      const config = effectiveEvolution(await readSection(db, evolutionConfig), next);
      return { employee_id: employeeId, key: body.key, value: body.value, config };
    }
  }
  throw new AppError("conflict", `employee ${employeeId} kept changing; try again`);
}
