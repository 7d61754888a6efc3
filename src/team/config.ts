import { defineConfigSection } from "../lib/config";
import { cascadeTeamConfig } from "./cascade";
import { teamSettings, TEAM_ROLES, type TeamSettings } from "./settings";

/**
 * `PUT /v1/config/team`: the global `[team]`. It stores exactly what was written (unset stays
 * unset, for the cascade and the quiet-refusal rule) and shows the effective global values, the
 * stored value and what the cascade reported (an unknown gate, a clamped fan-out).
 */
export const teamConfig = defineConfigSection("team", teamSettings, { view: teamConfigView });

function teamConfigView(stored: TeamSettings): Record<string, unknown> {
  // Roles that bind nothing cascade to each employee's own model; the placeholder employee only
  // lets the cascade compute the global fields, and its values are never shown.
  const eff = cascadeTeamConfig(stored, undefined, { runtime: "", preferred: "" });
  const roles = Object.fromEntries(
    TEAM_ROLES.map((role) => {
      const r = stored.roles?.[role];
      return [role, r && Object.keys(r).length > 0 ? { ...r } : { cascades_to: "employee_model" }];
    }),
  );
  return {
    enabled: eff.enabled,
    executor_fanout: eff.executor_fanout,
    gate: eff.gate,
    roles,
    stored,
    reports: eff.reports,
  };
}
