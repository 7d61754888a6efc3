import {
  modelFamily,
  normalizeRuntime,
  RUNTIME_FAMILY,
  runtimeForFamily,
  TEAM_RUNTIMES,
  type ModelFamily,
  type TeamRuntime,
} from "./catalog";
import type { EffectiveTeamConfig } from "./cascade";
import { parseEffort, type EffortLevel } from "./effort";
import { TEAM_ROLES, type GateMode, type TeamRole } from "./settings";

/** Refusal tokens of spec validation (seed 002, the three validator rules and effort). */
export const SPEC_REFUSALS = ["runtime_not_allowed", "model_runtime_mismatch", "invalid_effort", "verifier_same_family"] as const;
export type SpecRefusal = (typeof SPEC_REFUSALS)[number];

export interface SpecRole {
  runtime: TeamRuntime;
  model: string;
  /** Stored with the spec: the per-round re-check reads this string, never re-resolves the catalog. */
  family: ModelFamily;
  effort?: EffortLevel;
}

/** A validated team spec: what gets frozen on a task. */
export interface TeamSpec {
  version: 1;
  executor_fanout: number;
  gate: GateMode;
  roles: Record<TeamRole, SpecRole>;
}

export interface SpecProblem {
  reason: SpecRefusal;
  role: TeamRole;
  detail: string;
}

export type SpecValidation =
  { ok: true; spec: TeamSpec } | { ok: false; reason: SpecRefusal; role: TeamRole; detail: string; problems: SpecProblem[] };

function validateRole(role: TeamRole, cfg: EffectiveTeamConfig["roles"][TeamRole], problems: SpecProblem[]): SpecRole | null {
  const family = modelFamily(cfg.model);
  let runtime: TeamRuntime | null;
  if (cfg.runtime !== undefined) {
    runtime = normalizeRuntime(cfg.runtime);
    if (!runtime) {
      problems.push({
        reason: "runtime_not_allowed",
        role,
        detail: `runtime '${cfg.runtime}' cannot host a team role (claude, codex, antigravity, grok only)`,
      });
      return null;
    }
  } else {
    // A model-only role is bound to the runtime the catalog says serves its family.
    runtime = family ? runtimeForFamily(family) : null;
  }
  if (!family) {
    problems.push({
      reason: "model_runtime_mismatch",
      role,
      detail: `model '${cfg.model}' is of no family the runtime catalog knows; a provider is never guessed`,
    });
    return null;
  }
  if (!runtime || RUNTIME_FAMILY[runtime] !== family) {
    problems.push({
      reason: "model_runtime_mismatch",
      role,
      detail: `model '${cfg.model}' (${family}) is not served by runtime '${runtime}'`,
    });
    return null;
  }
  let effort: EffortLevel | undefined;
  if (cfg.effort !== undefined) {
    const parsed = parseEffort(cfg.effort);
    if (!parsed) {
      problems.push({ reason: "invalid_effort", role, detail: `effort '${cfg.effort}' is not one of low, medium, high, xhigh, max` });
      return null;
    }
    effort = parsed;
  }
  return { runtime, model: cfg.model.trim(), family, ...(effort ? { effort } : {}) };
}

/**
 * Validates the cascaded `[team]` into a spec, or refuses it with a stable token. A spec that breaks
 * any rule never forms a team: there is no such thing as a partial team. Every problem is listed;
 * `reason` is the first one (roles in order planner, executor, verifier, utility; the family rule last).
 */
export function validateTeamSpec(cfg: EffectiveTeamConfig): SpecValidation {
  const problems: SpecProblem[] = [];
  const roles: Partial<Record<TeamRole, SpecRole>> = {};
  for (const role of TEAM_ROLES) {
    const r = validateRole(role, cfg.roles[role], problems);
    if (r) roles[role] = r;
  }
  if (roles.executor && roles.verifier && roles.executor.family === roles.verifier.family) {
    problems.push({
      reason: "verifier_same_family",
      role: "verifier",
      detail: `verifier and executor are both ${roles.verifier.family} models; the verifier must be of another family`,
    });
  }
  const first = problems[0];
  if (first) return { ok: false, reason: first.reason, role: first.role, detail: first.detail, problems };
  return {
    ok: true,
    spec: { version: 1, executor_fanout: cfg.executor_fanout, gate: cfg.gate, roles: roles as Record<TeamRole, SpecRole> },
  };
}

/**
 * The quiet-refusal rule: an install that never configured `[team]` gets no audit row (a refusal on
 * every goal would bury the real ones); an explicit `enabled = true`, or roles that were configured
 * and fail validation, get a visible, audited refusal.
 */
export function refusalVisibility(cfg: Pick<EffectiveTeamConfig, "explicitly_enabled" | "roles_configured">): "quiet" | "audited" {
  return cfg.explicitly_enabled || cfg.roles_configured ? "audited" : "quiet";
}

/** Rules 2 and 3 re-checked on a stored spec, reading its stored family strings (seed 002). */
export type FrozenSpecCheck =
  { ok: true } | { ok: false; reason: "frozen_spec_runtime_not_allowed" | "frozen_spec_family_violation"; role: TeamRole; message: string };

/**
 * Every round re-checks the frozen spec before it spends a spawn: each role's runtime must still be
 * a team runtime, and the verifier's stored family must differ from the executor's. It reads what
 * was stored, not what the catalog would say today: the question is whether this task's spec still
 * holds. Anything unreadable fails closed.
 */
export function recheckFrozenSpec(stored: unknown): FrozenSpecCheck {
  const spec = (stored ?? {}) as { roles?: Record<string, { runtime?: unknown; family?: unknown } | undefined> };
  for (const role of TEAM_ROLES) {
    const r = spec.roles?.[role];
    const runtime = typeof r?.runtime === "string" ? r.runtime : "";
    if (!(TEAM_RUNTIMES as readonly string[]).includes(runtime)) {
      return {
        ok: false,
        reason: "frozen_spec_runtime_not_allowed",
        role,
        message: `The frozen team spec gives the ${role} runtime '${runtime || "(none)"}', which cannot host a team role. Set [team.roles.${role}] runtime to claude, codex, antigravity or grok and start a new task.`,
      };
    }
  }
  const exec = spec.roles?.executor?.family;
  const ver = spec.roles?.verifier?.family;
  if (typeof exec !== "string" || typeof ver !== "string" || exec === "" || exec === ver) {
    return {
      ok: false,
      reason: "frozen_spec_family_violation",
      role: "verifier",
      message: `The frozen team spec has verifier family '${String(ver ?? "(none)")}' and executor family '${String(exec ?? "(none)")}'; the verifier must be of another model family. Change [team.roles.verifier] (runtime and model) and start a new task.`,
    };
  }
  return { ok: true };
}
