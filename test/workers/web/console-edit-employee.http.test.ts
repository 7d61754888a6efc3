import { describe, expect, it } from "vitest";
import { call, createOperator } from "../../factories";
import { putEmployee } from "../../factories/org";
import { formOf, login, web } from "../../factories/web";

const employee = async (id: string) => (await call(`/v1/employees/${id}`)).body;

/** An employee with its own [team], [evolution] and contract, as the API writes them. */
async function fullEmployee(id: string, reportsTo?: string) {
  return putEmployee(id, {
    name: "Ada",
    ...(reportsTo ? { reports_to: reportsTo } : {}),
    runtime: "claude",
    model: { preferred: "claude-sonnet-4-6", effort: "high" },
    capabilities: { allowed_tools: ["Read", "Edit"] },
    team: { gate: "always_team", executor_fanout: 2, roles: { verifier: { runtime: "codex", model: "gpt-5-codex" } } },
    evolution: { gvu_enabled: false, strategy: "harden" },
    contract: { must_not: ["rm -rf"], must_always: ["cite sources"] },
  });
}

describe("the employee edit form", () => {
  it("shows every stored field, and a save that changes two keeps the rest: [team], [evolution], contract, tools", async () => {
    const mgr = await login(await createOperator("manager", "edit-keeps"));
    await putEmployee("ed-lead");
    await fullEmployee("ed-ada", "ed-lead");
    const page = await web("/console/employees/ed-ada/edit", { cookie: mgr.cookie });
    expect(page.status).toBe(200);
    const form = formOf(page.text, "employee-edit");
    expect(form).toMatchObject({
      revision: "1",
      name: "Ada",
      reports_to: "ed-lead",
      runtime: "claude",
      "model.preferred": "claude-sonnet-4-6",
      "model.effort": "high",
      "capabilities.allowed_tools": "Read\nEdit",
      "capabilities.denied_tools": "",
      "team.gate": "always_team",
      "team.executor_fanout": "2",
      "team.roles.verifier.runtime": "codex",
      "team.roles.planner.runtime": "",
      "evolution.gvu_enabled": "false",
      "evolution.strategy": "harden",
      "evolution.require_approval": "",
      "contract.must_not": "rm -rf",
      "contract.must_always": "cite sources",
    });
    // The workspace is named, not asked for.
    expect(page.text).toContain("&lt;home&gt;/agents/ed-ada/");

    const saved = await web("/console/employees/ed-ada/edit", {
      cookie: mgr.cookie,
      form: { ...form, name: "Ada Lovelace", "team.gate": "auto" },
    });
    expect(saved.status).toBe(303);
    expect(saved.headers.get("location")).toBe("/console/employees/ed-ada");
    const after = await employee("ed-ada");
    expect(after).toMatchObject({
      name: "Ada Lovelace",
      reports_to: "ed-lead",
      model: { preferred: "claude-sonnet-4-6", effort: "high" },
      capabilities: { allowed_tools: ["Read", "Edit"] },
      revision: 2,
      team: { gate: "auto", executor_fanout: 2, roles: { verifier: { runtime: "codex", model: "gpt-5-codex" } } },
    });
    expect(after.effective.config.evolution).toEqual({ gvu_enabled: false, strategy: "harden" });
    expect(after.effective.config.contract).toEqual({ must_not: ["rm -rf"], must_always: ["cite sources"] });
    // The employee page links the form for a manager.
    expect((await web("/console/employees/ed-ada", { cookie: mgr.cookie })).text).toContain('href="/console/employees/ed-ada/edit"');
  });

  it("leaves what was never set unset: no contract, no team, the default tools", async () => {
    const mgr = await login(await createOperator("manager", "edit-unset"));
    await putEmployee("ed-plain");
    const form = formOf((await web("/console/employees/ed-plain/edit", { cookie: mgr.cookie })).text, "employee-edit");
    const saved = await web("/console/employees/ed-plain/edit", { cookie: mgr.cookie, form: { ...form, name: "Plain" } });
    expect(saved.status).toBe(303);
    const after = await employee("ed-plain");
    expect(after.name).toBe("Plain");
    expect(after.capabilities).toBeUndefined();
    expect(after.effective.capabilities.allowed_tools_source).toBe("default");
    expect(after.team).toBeUndefined();
    expect(after.effective.config).toEqual({});
  });

  it("refuses a blank name, a fanout that is not a number and a reports_to cycle, each beside its field, and stores nothing", async () => {
    const mgr = await login(await createOperator("manager", "edit-refusals"));
    await putEmployee("ed-boss");
    await putEmployee("ed-mid", { reports_to: "ed-boss" });
    const form = formOf((await web("/console/employees/ed-boss/edit", { cookie: mgr.cookie })).text, "employee-edit");
    const bad = await web("/console/employees/ed-boss/edit", {
      cookie: mgr.cookie,
      form: { ...form, name: " ", "team.executor_fanout": "three", "evolution.gvu_cooldown_minutes": "99999" },
    });
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('data-code="validation_failed"');
    expect(bad.text).toMatch(/id="emp-name"[^>]*aria-invalid="true"/);
    expect(bad.text).toMatch(/<ul class="field-errors" id="emp-team-executor_fanout-errors"><li>[^<]*expected number/);
    expect(bad.text).toMatch(/<ul class="field-errors" id="emp-evolution-gvu_cooldown_minutes-errors"><li>Too big/);
    // The draft comes back as typed.
    expect(bad.text).toMatch(/name="team\.executor_fanout" value="three"/);

    // The boss cannot report to its own report.
    const cycle = await web("/console/employees/ed-boss/edit", { cookie: mgr.cookie, form: { ...form, reports_to: "ed-mid" } });
    expect(cycle.status).toBe(422);
    expect(cycle.text).toMatch(/id="emp-reports_to"[^>]*aria-invalid="true"/);
    expect(cycle.text).toContain("would make a cycle");
    expect(await employee("ed-boss")).toMatchObject({ name: "Employee ed-boss", reports_to: null, revision: 1 });
  });

  it("refuses a save over a change made since the form was read (409), the draft kept and the newer revision offered", async () => {
    const mgr = await login(await createOperator("manager", "edit-stale"));
    await putEmployee("ed-race");
    const form = formOf((await web("/console/employees/ed-race/edit", { cookie: mgr.cookie })).text, "employee-edit");
    await putEmployee("ed-race", { name: "Changed by the API" });
    const stale = await web("/console/employees/ed-race/edit", { cookie: mgr.cookie, form: { ...form, name: "From the form" } });
    expect(stale.status).toBe(409);
    expect(stale.text).toContain('data-code="conflict"');
    expect(stale.text).toContain("changed since revision 1 (it is at 2 now)");
    expect(stale.text).toContain('value="From the form"');
    expect(stale.text).toContain('name="revision" value="2"');
    expect(await employee("ed-race")).toMatchObject({ name: "Changed by the API", revision: 2 });
  });

  it("races two saves of one form: one lands, the other is refused, the revision moves by one", async () => {
    const mgr = await login(await createOperator("manager", "edit-race"));
    await putEmployee("ed-two");
    const form = formOf((await web("/console/employees/ed-two/edit", { cookie: mgr.cookie })).text, "employee-edit");
    const [a, b] = await Promise.all(
      ["First", "Second"].map((name) => web("/console/employees/ed-two/edit", { cookie: mgr.cookie, form: { ...form, name } })),
    );
    expect([a!.status, b!.status].sort()).toEqual([303, 409]);
    const after = await employee("ed-two");
    expect(after.revision).toBe(2);
    expect(after.name).toBe(a!.status === 303 ? "First" : "Second");
  });

  it("gives a viewer 403 and no link, refuses a post without the form token, and answers 404 for an unknown employee", async () => {
    await putEmployee("ed-guard");
    const viewer = await login(await createOperator("viewer", "edit-viewer"));
    expect((await web("/console/employees/ed-guard/edit", { cookie: viewer.cookie })).status).toBe(403);
    expect((await web("/console/employees/ed-guard", { cookie: viewer.cookie })).text).not.toContain("/edit");
    const mgr = await login(await createOperator("manager", "edit-guard"));
    const form = formOf((await web("/console/employees/ed-guard/edit", { cookie: mgr.cookie })).text, "employee-edit");
    const { _csrf, ...noToken } = form;
    const refused = await web("/console/employees/ed-guard/edit", { cookie: mgr.cookie, form: { ...noToken, name: "X" } });
    expect(refused.status).toBe(403);
    expect((await web("/console/employees/ed-nobody/edit", { cookie: mgr.cookie })).status).toBe(404);
    expect((await employee("ed-guard")).revision).toBe(1);
  });
});
