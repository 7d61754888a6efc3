import { describe, expect, it } from "vitest";
import { policyAsksForTeam, overrideMayApply, usesRoster } from "../../../src/tasks/dispatch/route";
import { decideGate } from "../../../src/team/gate";
import { roundProgressLine } from "../../../src/team/progress";

const base = { mode: "auto" as const, sandbox_enabled: false, signals: {}, exclusions: {}, acceptance_criteria_count: 1 };

describe("the role_team dispatch policy", () => {
  it("asks for the team only for goal tasks the loop works", () => {
    expect(policyAsksForTeam("role_team", { mode: "goal", manual: false })).toBe(true);
    expect(policyAsksForTeam("role_team", { mode: "goal", manual: true })).toBe(false);
    expect(policyAsksForTeam("role_team", { mode: "plain", manual: false })).toBe(false);
    expect(policyAsksForTeam("fixed_hierarchy", { mode: "goal", manual: false })).toBe(false);
  });

  it("routes by the hierarchy: no roster, D5 overrides may apply", () => {
    expect(usesRoster("role_team")).toBe(false);
    expect(overrideMayApply("role_team", 3)).toBe(true);
  });

  it("makes the gate answer team without signals, but never past the kill switch, the sandbox or a hard exclusion", () => {
    expect(decideGate({ ...base, dispatch_role_team: true })).toMatchObject({ decision: "team", reason: "dispatch_role_team" });
    expect(decideGate(base)).toMatchObject({ decision: "solo", reason: "signals_solo" });
    expect(decideGate({ ...base, mode: "always_solo", dispatch_role_team: true })).toMatchObject({ reason: "gate_always_solo" });
    expect(decideGate({ ...base, sandbox_enabled: true, dispatch_role_team: true })).toMatchObject({ reason: "sandbox_enabled" });
    expect(decideGate({ ...base, rounds_left: 2, dispatch_role_team: true })).toMatchObject({ reason: "excluded_rounds_left" });
  });
});

describe("the round progress line", () => {
  it("estimates the progress interval times the 3 required stages and says it is an estimate", () => {
    const line = roundProgressLine({ title: "T", roundNo: 2, intervalMinutes: 5 });
    expect(line).toMatchObject({ estimate_minutes: 15, interval_minutes: 5, stages: 3 });
    expect(line.text).toContain("Team round 2");
    expect(line.text).toContain("about 15 min");
    expect(line.text).toContain("not a guarantee");
  });
});
