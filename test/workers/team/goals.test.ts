import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { teamSpecs } from "../../../src/db/schema";
import { decideGate } from "../../../src/team/gate";
import { openTeamGoal } from "../../../src/team/goals";
import { freezeTeamSpec } from "../../../src/team/spec-store";
import { validateTeamSpec, type TeamSpec } from "../../../src/team/validate";
import { cascadeTeamConfig } from "../../../src/team/cascade";
import { db, employee, eventsOf, newTaskId, putTeamConfig, SEED_TEAM } from "../../factories/team";

const goal = { title: "Write the onboarding notes", acceptance_criteria: ["notes/a.md exists", "notes/b.md exists", "index links both"] };
const teamSignals = { independent_items: 5, dependency_hubs: 0, fits_one_context: false, produces_artifacts: true };
// A goal that measures as a team: 4 criteria, each naming its own file (volume; long horizon), and a
// capability gap the matrix measured at twice its MDE.
const teamGoal = {
  title: "Write the onboarding notes",
  acceptance_criteria: ["notes/a.md covers accounts", "notes/b.md covers tools", "notes/c.md covers people", "notes/d.md covers rituals"],
};
const measuredGap = { gap_pp: 20, mde_pp: 10 };

function specWith(executorModel: string): TeamSpec {
  const v = validateTeamSpec(
    cascadeTeamConfig({ ...SEED_TEAM, roles: { ...SEED_TEAM.roles, executor: { runtime: "codex", model: executorModel } } }, undefined, {
      runtime: "claude",
      preferred: "claude-sonnet-4-6",
    }),
  );
  if (!v.ok) throw new Error(v.reason);
  return v.spec;
}

describe("freezing a task's team spec", () => {
  it("lets exactly one of 10 racing freezes win; every loser adopts the winner's spec, and one event is left", async () => {
    const taskId = newTaskId();
    const gate = decideGate({ mode: "auto", sandbox_enabled: false, signals: teamSignals, exclusions: {}, acceptance_criteria_count: 3 });
    const specs = Array.from({ length: 10 }, (_, i) => specWith(`gpt-5.${i}`));
    const results = await Promise.all(
      specs.map((spec) => freezeTeamSpec(db(), { taskId, employeeId: "emp_1", spec, gate, goal }, new Date())),
    );
    expect(results.filter((r) => r.won)).toHaveLength(1);
    const winner = results.find((r) => r.won)!.spec;
    for (const r of results) expect(r.spec).toEqual(winner);
    const row = await db().select().from(teamSpecs).where(eq(teamSpecs.taskId, taskId)).get();
    expect(row?.spec).toEqual(winner);
    expect(await eventsOf("team_spec_frozen", taskId)).toHaveLength(1);
  });

  it("never changes a frozen spec afterwards", async () => {
    const taskId = newTaskId();
    const gate = decideGate({ mode: "auto", sandbox_enabled: false, signals: {}, exclusions: {}, acceptance_criteria_count: 1 });
    const first = await freezeTeamSpec(db(), { taskId, employeeId: "e", spec: specWith("gpt-5.5"), gate, goal }, new Date());
    const second = await freezeTeamSpec(db(), { taskId, employeeId: "e", spec: specWith("o3"), gate, goal }, new Date());
    expect(first.won).toBe(true);
    expect(second).toMatchObject({ won: false, spec: { roles: { executor: { model: "gpt-5.5" } } } });
  });
});

describe("opening a goal's team side", () => {
  it("refuses quietly on an install that never configured [team]: solo, no row, no event", async () => {
    const taskId = newTaskId();
    const res = await openTeamGoal(db(), { taskId, employee: employee(), goal }, new Date());
    expect(res).toMatchObject({ team: "refused", audited: false, team_refused: { reason: "verifier_same_family" } });
    expect(await db().select().from(teamSpecs).where(eq(teamSpecs.taskId, taskId)).get()).toBeUndefined();
    expect(await eventsOf("team_refused", taskId)).toHaveLength(0);
  });

  it("audits the refusal when the employee explicitly enabled the team", async () => {
    const taskId = newTaskId();
    const res = await openTeamGoal(db(), { taskId, employee: employee({ team: { enabled: true } }), goal }, new Date());
    expect(res).toMatchObject({ team: "refused", audited: true, team_refused: { reason: "verifier_same_family" } });
    const row = await db().select().from(teamSpecs).where(eq(teamSpecs.taskId, taskId)).get();
    expect(row).toMatchObject({ spec: null, refusal: { reason: "verifier_same_family", role: "verifier" } });
    const [event] = await eventsOf("team_refused", taskId);
    expect(event?.payload).toMatchObject({ reason: "verifier_same_family", task_id: taskId });
  });

  it("audits the refusal when configured roles fail validation", async () => {
    const taskId = newTaskId();
    const team = { roles: { executor: { runtime: "qwen", model: "qwen-3" } } };
    const res = await openTeamGoal(db(), { taskId, employee: employee({ team }), goal }, new Date());
    expect(res).toMatchObject({ team: "refused", audited: true, team_refused: { reason: "runtime_not_allowed", role: "executor" } });
    expect(await eventsOf("team_refused", taskId)).toHaveLength(1);
  });

  it("records nothing at all for an employee who opted out with enabled = false", async () => {
    const taskId = newTaskId();
    const res = await openTeamGoal(
      db(),
      { taskId, employee: employee({ team: { ...SEED_TEAM, enabled: false } }), goal: teamGoal, capability_gap: measuredGap },
      new Date(),
    );
    expect(res).toEqual({ team: "disabled" });
    expect(await db().select().from(teamSpecs).where(eq(teamSpecs.taskId, taskId)).get()).toBeUndefined();
    expect(await eventsOf("team_", taskId)).toEqual([]);
  });

  it("freezes a valid spec with the gate's decision, from the global section cascaded with the employee's override", async () => {
    await putTeamConfig(SEED_TEAM);
    const taskId = newTaskId();
    const res = await openTeamGoal(
      db(),
      { taskId, employee: employee({ team: { roles: { executor: { effort: "HIGH" } } } }), goal: teamGoal, capability_gap: measuredGap },
      new Date(),
    );
    expect(res).toMatchObject({
      team: "frozen",
      gate: {
        decision: "team",
        reason: "signals_team",
        signals: { held: 3 },
        measured: { items: [{ artifact: "notes/a.md" }, {}, {}, {}] },
      },
    });
    if (res.team !== "frozen") return;
    expect(res.team_spec.roles.executor).toEqual({ runtime: "codex", model: "gpt-5.5", family: "openai", effort: "high" });
    const row = await db().select().from(teamSpecs).where(eq(teamSpecs.taskId, taskId)).get();
    expect(row).toMatchObject({ spec: res.team_spec, gate: { decision: "team", measured: { hubs: [] } }, goal: teamGoal });
    // The audit trail says why: the frozen event carries the measured signals with the decision.
    const [frozen] = await eventsOf("team_spec_frozen", taskId);
    expect(frozen!.payload.gate).toMatchObject({
      reason: "signals_team",
      signals: { volume: { holds: true } },
      measured: { artifacts_total: 4 },
    });
    await putTeamConfig({});
  });

  it("keeps a sandboxed employee solo even with a valid spec (the spec is still frozen)", async () => {
    const taskId = newTaskId();
    const res = await openTeamGoal(
      db(),
      { taskId, employee: employee({ team: SEED_TEAM, sandbox_enabled: true }), goal: teamGoal, capability_gap: measuredGap },
      new Date(),
    );
    expect(res).toMatchObject({ team: "frozen", gate: { decision: "solo", reason: "sandbox_enabled" } });
  });
});
