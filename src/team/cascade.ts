import type { CapacityShort } from "./capacity";
import { modelFamily, normalizeRuntime, runtimeForFamily, type TeamRuntime } from "./catalog";
import {
  EXECUTOR_FANOUT_RANGE,
  GATE_MODES,
  TEAM_DEFAULTS,
  TEAM_ROLES,
  type GateMode,
  type RoleSettings,
  type TeamRole,
  type TeamSettings,
} from "./settings";

/** The employee's own model binding (`PUT /v1/employees/:id` `runtime` and `model`). */
export interface EmployeeModel {
  runtime: string;
  preferred: string;
  effort?: string;
}

export type Level = "employee" | "global" | "default";

/** A role after the cascade, still raw strings: validation (validate.ts) judges them. */
export interface CascadedRole {
  /** Undefined when only a model was declared: the catalog binds the runtime at validation. */
  runtime?: string;
  model: string;
  effort?: string;
  /** Whether the role itself binds a runtime or a model; an unbound role is the employee's model. */
  bound: boolean;
  sources: { runtime: Level | "employee_model" | "catalog"; model: Level | "employee_model" | "matrix"; effort?: Level | "employee_model" };
}

export type CascadeReport =
  | { token: "gate_unknown_fallback_auto"; value: string; level: Level }
  | { token: "executor_fanout_clamped"; value: number; clamped_to: number; level: Level }
  | { token: "effort_without_binding"; role: TeamRole; value: string; level: Level }
  | { token: "executor_files_do_not_persist"; role: "executor"; runtime: TeamRuntime }
  | CapacityShort;

/**
 * Runtimes whose members keep the scaffold as their working directory (their CLIs find MCP config
 * only there), so what an executor on them writes is removed with the scaffold (seed 002: file-writing
 * roles are claude and codex until that gap closes). Allowed, but said out loud.
 */
const SCAFFOLD_CWD_RUNTIMES: ReadonlySet<TeamRuntime> = new Set(["antigravity", "grok"]);

function effectiveRuntime(role: CascadedRole): TeamRuntime | null {
  if (role.runtime !== undefined) return normalizeRuntime(role.runtime);
  const family = modelFamily(role.model);
  return family ? runtimeForFamily(family) : null;
}

export interface EffectiveTeamConfig {
  enabled: boolean;
  enabled_source: Level;
  executor_fanout: number;
  gate: GateMode;
  roles: Record<TeamRole, CascadedRole>;
  /**
   * What the quiet-refusal rule reads: the operator explicitly turned the team on, or declared a
   * role field somewhere. An install that never configured `[team]` has neither.
   */
  explicitly_enabled: boolean;
  roles_configured: boolean;
  reports: CascadeReport[];
}

function pick<T>(employee: T | undefined, global: T | undefined): { value: T; level: Level } | undefined {
  if (employee !== undefined) return { value: employee, level: "employee" };
  if (global !== undefined) return { value: global, level: "global" };
  return undefined;
}

/**
 * The capability matrix's advice for a role whose model no level of `[team]` sets (seed 002: the
 * composer reads the matrix as a prior): the winning model on the role's runtime, or null. Supplied by
 * the caller (the composition root reads the matrix); without it the cascade is exactly as before.
 */
export type RolePrior = (role: TeamRole, runtime: string) => string | null;

function cascadeRole(
  role: TeamRole,
  employee: RoleSettings | undefined,
  global: RoleSettings | undefined,
  own: EmployeeModel,
  reports: CascadeReport[],
  prior?: RolePrior,
): CascadedRole {
  const runtime = pick(employee?.runtime, global?.runtime);
  const model = pick(employee?.model, global?.model);
  const effort = pick(employee?.effort, global?.effort);
  if (!runtime && !model) {
    // Neither binds anything: the role is the employee's own model, which carries the employee's
    // effort. A declared effort would have no effect, so it is reported rather than dropped quietly.
    if (effort) reports.push({ token: "effort_without_binding", role, value: effort.value, level: effort.level });
    const advised = prior?.(role, own.runtime) ?? null;
    if (advised) {
      return {
        runtime: own.runtime,
        model: advised,
        ...(own.effort !== undefined ? { effort: own.effort } : {}),
        bound: false,
        sources: {
          runtime: "employee_model",
          model: "matrix",
          ...(own.effort !== undefined ? { effort: "employee_model" as const } : {}),
        },
      };
    }
    return {
      runtime: own.runtime,
      model: own.preferred,
      ...(own.effort !== undefined ? { effort: own.effort } : {}),
      bound: false,
      sources: {
        runtime: "employee_model",
        model: "employee_model",
        ...(own.effort !== undefined ? { effort: "employee_model" as const } : {}),
      },
    };
  }
  // A runtime-only role: the matrix's winner on that runtime when there is one, else the employee's
  // preferred model (the seed's trap: that model must belong to the declared runtime, which
  // validation checks). An explicitly set model always wins over the matrix.
  const advised = !model && runtime ? (prior?.(role, runtime.value) ?? null) : null;
  return {
    ...(runtime ? { runtime: runtime.value } : {}),
    model: model ? model.value : (advised ?? own.preferred),
    ...(effort ? { effort: effort.value } : {}),
    bound: true,
    sources: {
      runtime: runtime ? runtime.level : "catalog",
      model: model ? model.level : advised ? "matrix" : "employee_model",
      ...(effort ? { effort: effort.level } : {}),
    },
  };
}

/**
 * The field-wise three-level cascade of seed 002: the employee's `[team]` value when written, else
 * the global `[team]` value, else the built-in default (for a role that binds neither runtime nor
 * model: the employee's own model). Overriding one field keeps the other fields of the level below.
 */
export function cascadeTeamConfig(
  global: TeamSettings,
  employee: TeamSettings | undefined,
  own: EmployeeModel,
  prior?: RolePrior,
): EffectiveTeamConfig {
  const reports: CascadeReport[] = [];
  const emp = employee ?? {};

  const enabled = pick(emp.enabled, global.enabled);

  const fanout = pick(emp.executor_fanout, global.executor_fanout);
  let executorFanout: number = TEAM_DEFAULTS.executor_fanout;
  if (fanout) {
    executorFanout = Math.min(EXECUTOR_FANOUT_RANGE.max, Math.max(EXECUTOR_FANOUT_RANGE.min, fanout.value));
    if (executorFanout !== fanout.value)
      reports.push({ token: "executor_fanout_clamped", value: fanout.value, clamped_to: executorFanout, level: fanout.level });
  }

  const gateRaw = pick(emp.gate, global.gate);
  let gate: GateMode = TEAM_DEFAULTS.gate;
  if (gateRaw) {
    const known = (GATE_MODES as readonly string[]).includes(gateRaw.value);
    if (known) gate = gateRaw.value as GateMode;
    else reports.push({ token: "gate_unknown_fallback_auto", value: gateRaw.value, level: gateRaw.level });
  }

  const roles = Object.fromEntries(
    TEAM_ROLES.map((role) => [role, cascadeRole(role, emp.roles?.[role], global.roles?.[role], own, reports, prior)]),
  ) as Record<TeamRole, CascadedRole>;

  const executorRuntime = effectiveRuntime(roles.executor);
  if (executorRuntime && SCAFFOLD_CWD_RUNTIMES.has(executorRuntime))
    reports.push({ token: "executor_files_do_not_persist", role: "executor", runtime: executorRuntime });

  const rolesConfigured = [global, emp].some((level) =>
    TEAM_ROLES.some((role) => {
      const r = level.roles?.[role];
      return r !== undefined && (r.runtime !== undefined || r.model !== undefined || r.effort !== undefined);
    }),
  );

  return {
    enabled: enabled ? enabled.value : TEAM_DEFAULTS.enabled,
    enabled_source: enabled ? enabled.level : "default",
    executor_fanout: executorFanout,
    gate,
    roles,
    explicitly_enabled: enabled?.value === true,
    roles_configured: rolesConfigured,
    reports,
  };
}
