import { describe, expect, it } from "vitest";
import { cascadeTeamConfig, type EmployeeModel } from "../../../src/team/cascade";
import type { TeamSettings } from "../../../src/team/settings";
import { recheckFrozenSpec, refusalVisibility, validateTeamSpec } from "../../../src/team/validate";

const own: EmployeeModel = { runtime: "claude", preferred: "claude-sonnet-4-6" };

const good: TeamSettings = {
  roles: {
    planner: { runtime: "claude", model: "claude-fable-5-1", effort: "high" },
    executor: { runtime: "codex", model: "gpt-5.5", effort: "medium" },
    verifier: { runtime: "antigravity", model: "gemini-3.7-flash", effort: "low" },
    utility: { runtime: "claude", model: "claude-haiku-4-5" },
  },
};

function validate(global: TeamSettings, employee?: TeamSettings, employeeModel = own) {
  return validateTeamSpec(cascadeTeamConfig(global, employee, employeeModel));
}

describe("team spec validation", () => {
  it("accepts the seed's example team and stores each role's family with it", () => {
    const v = validate(good);
    expect(v.ok).toBe(true);
    if (!v.ok) return;
    expect(v.spec.roles).toEqual({
      planner: { runtime: "claude", model: "claude-fable-5-1", family: "claude", effort: "high" },
      executor: { runtime: "codex", model: "gpt-5.5", family: "openai", effort: "medium" },
      verifier: { runtime: "antigravity", model: "gemini-3.7-flash", family: "gemini", effort: "low" },
      utility: { runtime: "claude", model: "claude-haiku-4-5", family: "claude" },
    });
  });

  it.each(["offline", "openai_compat", "qwen", "copilot", "cursor"])("refuses runtime %s with runtime_not_allowed", (runtime) => {
    const v = validate({ roles: { ...good.roles, executor: { runtime, model: "gpt-5.5" } } });
    expect(v).toMatchObject({ ok: false, reason: "runtime_not_allowed", role: "executor" });
  });

  it("refuses an employee whose own runtime is not a team runtime when a role cascades to it", () => {
    const v = validate({ roles: { executor: good.roles!.executor, verifier: good.roles!.verifier } }, undefined, {
      runtime: "offline",
      preferred: "claude-sonnet-4-6",
    });
    expect(v).toMatchObject({ ok: false, reason: "runtime_not_allowed", role: "planner" });
  });

  it("refuses a model whose family the runtime does not serve with model_runtime_mismatch", () => {
    const v = validate({ roles: { ...good.roles, executor: { runtime: "codex", model: "claude-opus-4" } } });
    expect(v).toMatchObject({ ok: false, reason: "model_runtime_mismatch", role: "executor" });
  });

  it("refuses a model of an unknown family instead of guessing a provider", () => {
    const v = validate({ roles: { ...good.roles, executor: { model: "qwen-3-coder" } } });
    expect(v).toMatchObject({ ok: false, reason: "model_runtime_mismatch", role: "executor" });
    expect(v.ok ? "" : v.detail).toContain("no family");
  });

  it("refuses the cascade trap: runtime codex declared for an employee whose preferred model is a Claude model", () => {
    const v = validate({ roles: { ...good.roles, executor: { runtime: "codex" } } });
    expect(v).toMatchObject({ ok: false, reason: "model_runtime_mismatch", role: "executor" });
  });

  it("binds a model-only role to the runtime the catalog gives its family", () => {
    const v = validate({ roles: { ...good.roles, verifier: { model: "grok-4" } } });
    expect(v.ok && v.spec.roles.verifier).toEqual({ runtime: "grok", model: "grok-4", family: "grok" });
  });

  it("refuses an effort it cannot parse with invalid_effort and accepts any letter case", () => {
    expect(
      validate({ roles: { ...good.roles, planner: { runtime: "claude", model: "claude-fable-5-1", effort: "extreme" } } }),
    ).toMatchObject({
      ok: false,
      reason: "invalid_effort",
      role: "planner",
    });
    const v = validate({ roles: { ...good.roles, planner: { runtime: "claude", model: "claude-fable-5-1", effort: "XHIGH" } } });
    expect(v.ok && v.spec.roles.planner.effort).toBe("xhigh");
  });

  it("refuses a verifier of the executor's family with verifier_same_family, across spellings of one family", () => {
    expect(validate({ roles: { ...good.roles, verifier: { runtime: "codex", model: "o3" } } })).toMatchObject({
      ok: false,
      reason: "verifier_same_family",
      role: "verifier",
    });
  });

  it("refuses an install whose roles all cascade to the employee's model: executor and verifier share a family", () => {
    expect(validate({})).toMatchObject({ ok: false, reason: "verifier_same_family" });
  });

  it("lists every problem, and names the first", () => {
    const v = validate({
      roles: {
        planner: { runtime: "qwen" },
        executor: { runtime: "codex", model: "gpt-5.5", effort: "loud" },
        verifier: { runtime: "codex", model: "gpt-5" },
      },
    });
    expect(v.ok).toBe(false);
    if (v.ok) return;
    expect(v.reason).toBe("runtime_not_allowed");
    expect(v.problems.map((p) => [p.role, p.reason])).toEqual([
      ["planner", "runtime_not_allowed"],
      ["executor", "invalid_effort"],
    ]);
  });
});

describe("the quiet-refusal rule", () => {
  it("keeps an install that never configured [team] quiet", () => {
    expect(refusalVisibility(cascadeTeamConfig({}, undefined, own))).toBe("quiet");
  });

  it("audits a refusal when enabled = true was written explicitly", () => {
    expect(refusalVisibility(cascadeTeamConfig({ enabled: true }, undefined, own))).toBe("audited");
    expect(refusalVisibility(cascadeTeamConfig({}, { enabled: true }, own))).toBe("audited");
  });

  it("audits a refusal when roles were configured (globally or per employee)", () => {
    expect(refusalVisibility(cascadeTeamConfig({ roles: { executor: { runtime: "codex" } } }, undefined, own))).toBe("audited");
    expect(refusalVisibility(cascadeTeamConfig({}, { roles: { verifier: { model: "gpt-5" } } }, own))).toBe("audited");
  });
});

describe("re-checking a frozen spec", () => {
  const frozen = () => {
    const v = validate(good);
    if (!v.ok) throw new Error("fixture");
    return structuredClone(v.spec);
  };

  it("passes a spec that still satisfies rules 2 and 3", () => {
    expect(recheckFrozenSpec(frozen())).toEqual({ ok: true });
  });

  it("fails a stored verifier runtime that is not a team runtime with frozen_spec_runtime_not_allowed", () => {
    const spec = frozen();
    (spec.roles.verifier as { runtime: string }).runtime = "openai_compat";
    const check = recheckFrozenSpec(spec);
    expect(check).toMatchObject({ ok: false, reason: "frozen_spec_runtime_not_allowed", role: "verifier" });
    expect(check.ok ? "" : check.message).toContain("[team.roles.verifier]");
  });

  it("fails a stored verifier family equal to the executor's with frozen_spec_family_violation, reading the stored string", () => {
    const spec = frozen();
    // The catalog would call gemini-3.7-flash "gemini"; the stored family string is what counts.
    spec.roles.verifier.family = "openai";
    expect(recheckFrozenSpec(spec)).toMatchObject({ ok: false, reason: "frozen_spec_family_violation", role: "verifier" });
  });

  it("fails closed on a spec with no families or no roles at all", () => {
    const spec = frozen() as unknown as { roles: Record<string, Record<string, unknown>> };
    delete spec.roles.verifier!.family;
    expect(recheckFrozenSpec(spec)).toMatchObject({ ok: false, reason: "frozen_spec_family_violation" });
    expect(recheckFrozenSpec(null)).toMatchObject({ ok: false, reason: "frozen_spec_runtime_not_allowed" });
  });
});
