import { describe, expect, it } from "vitest";
import { cascadeTeamConfig, type EmployeeModel } from "../../../src/team/cascade";
import type { TeamSettings } from "../../../src/team/settings";

const own: EmployeeModel = { runtime: "claude", preferred: "claude-sonnet-4-6", effort: "medium" };

const global: TeamSettings = {
  enabled: true,
  executor_fanout: 2,
  gate: "auto",
  roles: {
    planner: { runtime: "claude", model: "claude-fable-5-1", effort: "high" },
    executor: { runtime: "codex", model: "gpt-5.5", effort: "medium" },
    verifier: { runtime: "antigravity", model: "gemini-3.7-flash", effort: "low" },
  },
};

describe("the [team] cascade", () => {
  it("takes every field from the global section when the employee overrides nothing", () => {
    const eff = cascadeTeamConfig(global, undefined, own);
    expect(eff).toMatchObject({ enabled: true, enabled_source: "global", executor_fanout: 2, gate: "auto" });
    expect(eff.roles.executor).toMatchObject({ runtime: "codex", model: "gpt-5.5", effort: "medium", bound: true });
  });

  it("overrides field by field: an employee that only sets the executor's effort keeps the global runtime and model", () => {
    const eff = cascadeTeamConfig(global, { roles: { executor: { effort: "xhigh" } } }, own);
    expect(eff.roles.executor).toMatchObject({ runtime: "codex", model: "gpt-5.5", effort: "xhigh" });
    expect(eff.roles.executor.sources).toEqual({ runtime: "global", model: "global", effort: "employee" });
    expect(eff.roles.planner).toMatchObject({ runtime: "claude", model: "claude-fable-5-1", effort: "high" });
  });

  it("falls back to the employee's own model (with its effort) for a role that binds neither runtime nor model", () => {
    const eff = cascadeTeamConfig(global, undefined, own);
    expect(eff.roles.utility).toEqual({
      runtime: "claude",
      model: "claude-sonnet-4-6",
      effort: "medium",
      bound: false,
      sources: { runtime: "employee_model", model: "employee_model", effort: "employee_model" },
    });
  });

  it("cascades a runtime-only role's model to the employee's preferred model", () => {
    const eff = cascadeTeamConfig({ roles: { executor: { runtime: "codex" } } }, undefined, own);
    expect(eff.roles.executor).toMatchObject({ runtime: "codex", model: "claude-sonnet-4-6", bound: true });
    expect(eff.roles.executor.effort).toBeUndefined();
  });

  it("leaves a model-only role's runtime to the catalog", () => {
    const eff = cascadeTeamConfig({ roles: { verifier: { model: "gemini-3.7-flash" } } }, undefined, own);
    expect(eff.roles.verifier.runtime).toBeUndefined();
    expect(eff.roles.verifier.sources.runtime).toBe("catalog");
  });

  it("treats an employee's explicit enabled=false as an opt-out over a global true, and unset as inherit", () => {
    expect(cascadeTeamConfig({ enabled: true }, { enabled: false }, own)).toMatchObject({ enabled: false, enabled_source: "employee" });
    expect(cascadeTeamConfig({ enabled: false }, {}, own)).toMatchObject({ enabled: false, enabled_source: "global" });
    expect(cascadeTeamConfig({ enabled: false }, { enabled: true }, own)).toMatchObject({ enabled: true, enabled_source: "employee" });
  });

  it("defaults to enabled when nothing was ever written, without counting that as an explicit enable", () => {
    const eff = cascadeTeamConfig({}, undefined, own);
    expect(eff).toMatchObject({
      enabled: true,
      enabled_source: "default",
      explicitly_enabled: false,
      roles_configured: false,
      executor_fanout: 1,
      gate: "auto",
    });
    expect(eff.reports).toEqual([]);
  });

  it.each([
    [0, 1],
    [-4, 1],
    [4, 3],
    [99, 3],
  ])("clamps executor_fanout %i to %i and reports it", (value, clamped) => {
    const eff = cascadeTeamConfig({ executor_fanout: value }, undefined, own);
    expect(eff.executor_fanout).toBe(clamped);
    expect(eff.reports).toContainEqual({ token: "executor_fanout_clamped", value, clamped_to: clamped, level: "global" });
  });

  it("keeps executor_fanout 1..3 as written without a report", () => {
    for (const n of [1, 2, 3])
      expect(cascadeTeamConfig({}, { executor_fanout: n }, own)).toMatchObject({ executor_fanout: n, reports: [] });
  });

  it("falls back to auto for an unknown gate mode and reports it", () => {
    const eff = cascadeTeamConfig({ gate: "always_team" }, { gate: "sometimes" }, own);
    expect(eff.gate).toBe("auto");
    expect(eff.reports).toContainEqual({ token: "gate_unknown_fallback_auto", value: "sometimes", level: "employee" });
    expect(cascadeTeamConfig({ gate: "always_solo" }, undefined, own).gate).toBe("always_solo");
  });

  it("reports an effort declared on a role that binds neither runtime nor model, and does not apply it", () => {
    const eff = cascadeTeamConfig({ roles: { planner: { effort: "max" } } }, undefined, own);
    expect(eff.roles.planner.effort).toBe("medium");
    expect(eff.reports).toContainEqual({ token: "effort_without_binding", role: "planner", value: "max", level: "global" });
  });

  it("says that an executor on antigravity or grok keeps no files across rounds (its scaffold is its cwd), and nothing for claude or codex", () => {
    const withExecutor = (executor: Record<string, string>) =>
      cascadeTeamConfig({ ...global, roles: { ...global.roles, executor } }, undefined, own);
    expect(withExecutor({ runtime: "grok", model: "grok-4" }).reports).toContainEqual({
      token: "executor_files_do_not_persist",
      role: "executor",
      runtime: "grok",
    });
    // A model-only role: the runtime is the catalog's for its family.
    expect(withExecutor({ model: "gemini-3.7-pro" }).reports).toContainEqual(expect.objectContaining({ runtime: "antigravity" }));
    expect(withExecutor({ runtime: "agy", model: "gemini-3.7-pro" }).reports).toContainEqual(
      expect.objectContaining({ runtime: "antigravity" }),
    );
    const quiet: Record<string, string>[] = [
      { runtime: "codex", model: "gpt-5.5" },
      { runtime: "claude", model: "claude-opus-4-6" },
      { model: "gpt-5.5" },
    ];
    for (const executor of quiet) expect(withExecutor(executor).reports).toEqual([]);
  });

  it("marks roles as configured when any level declares any role field, and explicit enable only for a true that decides", () => {
    expect(cascadeTeamConfig({}, { roles: { verifier: { effort: "low" } } }, own).roles_configured).toBe(true);
    expect(cascadeTeamConfig({ roles: {} }, undefined, own).roles_configured).toBe(false);
    expect(cascadeTeamConfig({ enabled: true }, undefined, own).explicitly_enabled).toBe(true);
    expect(cascadeTeamConfig({ enabled: true }, { enabled: false }, own).explicitly_enabled).toBe(false);
  });
});
