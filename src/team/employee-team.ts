import type { Db } from "../db/client";
import type { EmployeeRow } from "../db/schema";
import { readSection } from "../lib/config";
import { employeeBody } from "../tasks/employees";
import { cascadeTeamConfig } from "./cascade";
import { teamConfig } from "./config";
import { goalEmployee } from "./goal-request";
import { teamSettings } from "./settings";
import { validateTeamSpec } from "./validate";

/**
 * `PUT /v1/employees/:id` with the employee's own `[team]` (its `team` field, stored in the row's
 * per-employee `config` under `team`, exactly as written: unset stays unset for the cascade).
 */
export const employeeWithTeamBody = employeeBody.extend({ team: teamSettings.optional() });

/**
 * The employee's effective `[team]` for `GET /v1/employees/:id`: the field-wise cascade of the
 * employee's own section over the global one over the employee's model, with where each value came
 * from, and whether a goal task would form a team with it (or the refusal token it would get).
 */
export async function effectiveTeam(db: Db, row: EmployeeRow) {
  const employee = goalEmployee(row);
  const eff = cascadeTeamConfig(await readSection(db, teamConfig), employee.team, employee.model);
  const validation = validateTeamSpec(eff);
  return {
    enabled: eff.enabled,
    enabled_source: eff.enabled_source,
    executor_fanout: eff.executor_fanout,
    gate: eff.gate,
    roles: eff.roles,
    ...(validation.ok
      ? { valid: true, spec: validation.spec }
      : { valid: false, refusal: { reason: validation.reason, role: validation.role, detail: validation.detail } }),
    reports: eff.reports,
  };
}
