import { describe, expect, it } from "vitest";
import { call, createOperator } from "../../factories";
import { putEmployee } from "../../factories/org";
import { login, web } from "../../factories/web";

/** The employee page's status controls: pause and resume for a manager, retire for an admin. */
describe("the employee page's status controls", () => {
  it("lets a manager pause and resume, refuses a bad action inline, and keeps retire for admins", async () => {
    await putEmployee("ctl-ada");
    const mgr = await login(await createOperator("manager", "ctl-manager"));
    const path = "/console/employees/ctl-ada/lifecycle";
    const page = await web("/console/employees/ctl-ada", { cookie: mgr.cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-status="active"');
    expect(page.text).toContain('<input type="hidden" name="action" value="pause"/>');
    // Retire is an admin's: a manager is not offered it, and is refused when asking anyway.
    expect(page.text).not.toContain('value="retire"');

    const noToken = await web(path, { cookie: mgr.cookie, form: { action: "pause" } });
    expect(noToken.status).toBe(403);
    expect(noToken.text).toContain('data-code="csrf_failed"');
    const bad = await web(path, { cookie: mgr.cookie, form: { action: "fire", _csrf: mgr.csrf } });
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('data-code="validation_failed"');
    const notAdmin = await web(path, { cookie: mgr.cookie, form: { action: "retire", _csrf: mgr.csrf } });
    expect(notAdmin.status).toBe(403);
    expect(notAdmin.text).toContain('data-code="forbidden"');
    expect((await call("/v1/employees/ctl-ada")).body.status).toBe("active");

    const paused = await web(path, { cookie: mgr.cookie, form: { action: "pause", _csrf: mgr.csrf } });
    expect(paused.status).toBe(303);
    expect(paused.headers.get("location")).toBe("/console/employees/ctl-ada#employee-status");
    expect((await call("/v1/employees/ctl-ada")).body).toMatchObject({ status: "paused", paused_reason: "manual" });
    const pausedPage = await web("/console/employees/ctl-ada", { cookie: mgr.cookie });
    expect(pausedPage.text).toContain('data-status="paused"');
    expect(pausedPage.text).toContain('value="resume"');
    expect((await web("/console/employees", { cookie: mgr.cookie })).text).toContain('data-status="paused"');

    expect((await web(path, { cookie: mgr.cookie, form: { action: "resume", _csrf: mgr.csrf } })).status).toBe(303);
    expect((await call("/v1/employees/ctl-ada")).body.status).toBe("active");
  });

  it("lets an admin retire after a confirmation, and shows a retired employee without controls", async () => {
    await putEmployee("ctl-bo");
    const admin = await login(await createOperator("admin", "ctl-admin"));
    const page = await web("/console/employees/ctl-bo", { cookie: admin.cookie });
    expect(page.text).toMatch(/<form method="post" action="\/console\/employees\/ctl-bo\/lifecycle" class="inline" data-confirm="Retire [^"]+">/);
    const done = await web("/console/employees/ctl-bo/lifecycle", { cookie: admin.cookie, form: { action: "retire", _csrf: admin.csrf } });
    expect(done.status).toBe(303);
    const after = await web("/console/employees/ctl-bo", { cookie: admin.cookie });
    expect(after.text).toContain('data-status="retired"');
    expect(after.text).not.toContain("/lifecycle");
    const again = await web("/console/employees/ctl-bo/lifecycle", { cookie: admin.cookie, form: { action: "pause", _csrf: admin.csrf } });
    expect(again.status).toBe(409);
    expect(again.text).toContain('data-code="employee_retired"');
  });
});
