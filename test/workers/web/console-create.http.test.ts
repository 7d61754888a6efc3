import { describe, expect, it } from "vitest";
import { call, createOperator } from "../../factories";
import { putEmployee } from "../../factories/org";
import { login, web } from "../../factories/web";

const employeeForm = (fields: Record<string, string>) => ({
  id: "",
  name: "",
  reports_to: "",
  runtime: "offline",
  model: "",
  effort: "",
  ...fields,
});

describe("the console's first run", () => {
  it("shows the Get started panel on an empty install, its steps done as they are done", async () => {
    const mgr = await login(await createOperator("manager", "first-run-manager"));
    for (const path of ["/console", "/console/employees"]) {
      const res = await web(path, { cookie: mgr.cookie });
      expect(res.status).toBe(200);
      expect(res.text).toContain('id="get-started"');
      // No runner asked for work: the command to connect one, with this console's origin.
      expect(res.text).toContain('data-step="1" data-done="false"');
      expect(res.text).toContain("local-runner/bin/crewplane-runner --url http://crewplane.test");
      expect(res.text).toContain("CREWPLANE_RUNNER_TOKEN=&lt;runner token&gt;");
      expect(res.text).toContain('data-step="2" data-done="false"');
      expect(res.text).toContain('href="/console/employees/new"');
    }
    expect((await web("/console/employees/new", { cookie: mgr.cookie })).status).toBe(200);
    const made = await web("/console/employees", {
      cookie: mgr.cookie,
      form: { ...employeeForm({ id: "fr-first", name: "First" }), _csrf: mgr.csrf },
    });
    expect(made.status).toBe(303);
    const after = await web("/console", { cookie: mgr.cookie });
    expect(after.text).toContain('data-step="2" data-done="true"');
    expect(after.text).toContain('data-step="3" data-done="false"');
  });
});

describe("the new-employee form", () => {
  it("offers every runtime, those no runner offers now marked, and creates with the runtime's default model", async () => {
    const mgr = await login(await createOperator("manager", "create-manager"));
    await putEmployee("cr-lead");
    const form = await web("/console/employees/new", { cookie: mgr.cookie });
    expect(form.status).toBe(200);
    for (const r of ["offline", "claude", "codex", "antigravity", "grok"]) expect(form.text).toContain(`<option value="${r}"`);
    expect(form.text).toContain("claude (no runner offers it now)");
    expect(form.text).toContain('<option value="cr-lead"');

    const res = await web("/console/employees", {
      cookie: mgr.cookie,
      form: { ...employeeForm({ id: "cr-ada", name: "Ada", reports_to: "cr-lead", runtime: "claude", effort: "high" }), _csrf: mgr.csrf },
    });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/console/employees/cr-ada");
    expect((await call("/v1/employees/cr-ada")).body).toMatchObject({
      name: "Ada",
      reports_to: "cr-lead",
      runtime: "claude",
      model: { preferred: "claude-sonnet-4-6", effort: "high" },
      status: "active",
    });
    const codex = await web("/console/employees", {
      cookie: mgr.cookie,
      form: { ...employeeForm({ id: "cr-cod", name: "Cod", runtime: "codex" }), _csrf: mgr.csrf },
    });
    expect(codex.status).toBe(303);
    expect((await call("/v1/employees/cr-cod")).body.model).toEqual({ preferred: "gpt-5-codex" });
  });

  it("refuses a bad id, an unknown manager, no name and a runtime without a default model, each next to its field", async () => {
    const mgr = await login(await createOperator("manager", "create-refusals"));
    const res = await web("/console/employees", {
      cookie: mgr.cookie,
      form: { ...employeeForm({ id: "Bad Id!", reports_to: "nobody-here", runtime: "grok" }), _csrf: mgr.csrf },
    });
    expect(res.status).toBe(422);
    expect(res.text).toContain('data-code="validation_failed"');
    expect(res.text).toMatch(/id="employee-id"[^>]*aria-invalid="true"/);
    expect(res.text).toContain('<ul class="field-errors" id="employee-id-errors"><li>1-63 characters');
    expect(res.text).toMatch(/id="employee-name-errors"><li>/);
    expect(res.text).toContain("name a model: grok has no default");
    // The draft comes back as typed.
    expect(res.text).toContain('value="Bad Id!"');

    const unknownBoss = await web("/console/employees", {
      cookie: mgr.cookie,
      form: { ...employeeForm({ id: "cr-orphan", name: "Orphan", reports_to: "nobody-here" }), _csrf: mgr.csrf },
    });
    expect(unknownBoss.status).toBe(422);
    expect(unknownBoss.text).toMatch(/id="employee-reports-to"[^>]*aria-invalid="true"/);
    expect(unknownBoss.text).toContain("unknown employee &#39;nobody-here&#39;");
    expect((await call("/v1/employees/cr-orphan")).status).toBe(404);
  });

  it("answers 409 on a taken id and leaves the existing employee as it was", async () => {
    const mgr = await login(await createOperator("manager", "create-taken"));
    await putEmployee("cr-taken", { name: "Original" });
    const res = await web("/console/employees", {
      cookie: mgr.cookie,
      form: { ...employeeForm({ id: "cr-taken", name: "Impostor", runtime: "claude" }), _csrf: mgr.csrf },
    });
    expect(res.status).toBe(409);
    expect(res.text).toContain('data-code="conflict"');
    expect(res.text).toMatch(/id="employee-id"[^>]*aria-invalid="true"/);
    expect(res.text).toContain("cr-taken is already an employee");
    expect((await call("/v1/employees/cr-taken")).body).toMatchObject({ name: "Original", runtime: "offline", revision: 1 });
  });

  it("refuses a post without the form token (403 csrf_failed) and a viewer (403), and gives a viewer no link", async () => {
    const mgr = await login(await createOperator("manager", "create-csrf"));
    const noToken = await web("/console/employees", { cookie: mgr.cookie, form: employeeForm({ id: "cr-csrf", name: "X" }) });
    expect(noToken.status).toBe(403);
    expect(noToken.text).toContain('data-code="csrf_failed"');
    const viewer = await login(await createOperator("viewer", "create-viewer"));
    const refused = await web("/console/employees", {
      cookie: viewer.cookie,
      form: { ...employeeForm({ id: "cr-view", name: "X" }), _csrf: viewer.csrf },
    });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('data-code="forbidden"');
    expect((await web("/console/employees/new", { cookie: viewer.cookie })).status).toBe(403);
    expect((await web("/console/employees", { cookie: viewer.cookie })).text).not.toContain('href="/console/employees/new"');
    expect((await call("/v1/employees/cr-csrf")).status).toBe(404);
    expect((await call("/v1/employees/cr-view")).status).toBe(404);
  });
});

describe("the employee page's goal form", () => {
  it("opens a goal and goes on to its task page", async () => {
    await putEmployee("goal-ada");
    const mgr = await login(await createOperator("manager", "goal-manager"));
    const page = await web("/console/employees/goal-ada", { cookie: mgr.cookie });
    expect(page.text).toContain('action="/console/employees/goal-ada/goals"');
    const res = await web("/console/employees/goal-ada/goals", {
      cookie: mgr.cookie,
      form: { title: "Write the notes", acceptance_criteria: "notes exist\r\n\r\n  they are short  \n", rounds_left: "2", _csrf: mgr.csrf },
    });
    expect(res.status).toBe(303);
    const taskId = /^\/console\/tasks\/(task_[0-9a-f]+)$/.exec(res.headers.get("location") ?? "")?.[1];
    expect(taskId).toBeDefined();
    const task = await call(`/v1/tasks/${taskId}`);
    expect(task.body).toMatchObject({
      title: "Write the notes",
      mode: "goal",
      assigned_to: "goal-ada",
      acceptance_criteria: ["notes exist", "they are short"],
    });
    expect((await web(`/console/tasks/${taskId}`, { cookie: mgr.cookie })).status).toBe(200);
    // The employee page lists the open goal with its loop: the first round started, two allowed.
    const after = await web("/console/employees/goal-ada", { cookie: mgr.cookie });
    const goal = new RegExp(`<li data-goal="${taskId}">([\\s\\S]*?)</li>`).exec(after.text)?.[1] ?? "";
    expect(goal).toContain("Write the notes");
    expect(goal).toMatch(/round 1 of 2 \(round 1, (solo|team), \w+\)/);
    expect(goal).toContain(`href="/console/tasks/${taskId}/roles"`);
  });

  it("refuses no criterion, no title and bad rounds inline with the draft, and a retired employee with 409", async () => {
    await putEmployee("goal-bob");
    const mgr = await login(await createOperator("manager", "goal-refusals"));
    const path = "/console/employees/goal-bob/goals";
    const none = await web(path, { cookie: mgr.cookie, form: { title: "Kept title", acceptance_criteria: " \n ", _csrf: mgr.csrf } });
    expect(none.status).toBe(422);
    expect(none.text).toMatch(/id="goal-criteria"[^>]*aria-invalid="true"/);
    expect(none.text).toContain("at least one criterion, one per line");
    expect(none.text).toContain('value="Kept title"');
    const bad = await web(path, { cookie: mgr.cookie, form: { title: "", acceptance_criteria: "ok", rounds_left: "99", _csrf: mgr.csrf } });
    expect(bad.status).toBe(422);
    expect(bad.text).toMatch(/id="goal-title"[^>]*aria-invalid="true"/);
    expect(bad.text).toMatch(/id="goal-rounds"[^>]*aria-invalid="true"/);

    const noToken = await web(path, { cookie: mgr.cookie, form: { title: "t", acceptance_criteria: "c" } });
    expect(noToken.status).toBe(403);
    expect(noToken.text).toContain('data-code="csrf_failed"');
    const viewer = await login(await createOperator("viewer", "goal-viewer"));
    const refused = await web(path, { cookie: viewer.cookie, form: { title: "t", acceptance_criteria: "c", _csrf: viewer.csrf } });
    expect(refused.status).toBe(403);
    expect((await web("/console/employees/goal-bob", { cookie: viewer.cookie })).text).toContain("Giving a goal needs the manager role.");

    expect((await call("/v1/employees/goal-bob/retire", { body: {} })).status).toBe(200);
    const retired = await web(path, { cookie: mgr.cookie, form: { title: "Too late", acceptance_criteria: "c", _csrf: mgr.csrf } });
    expect(retired.status).toBe(409);
    expect(retired.text).toContain('data-code="employee_retired"');
    expect(retired.text).toContain('value="Too late"');
    expect(
      (
        await web("/console/employees/nobody-at-all/goals", {
          cookie: mgr.cookie,
          form: { title: "t", acceptance_criteria: "c", _csrf: mgr.csrf },
        })
      ).status,
    ).toBe(404);
  });
});
