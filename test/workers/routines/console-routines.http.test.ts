import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createOperator } from "../../factories";
import { putEmployee } from "../../factories/org";
import { login, web } from "../../factories/web";

/** `/console/routines`: the list, the create form with its inline refusals, and each routine's buttons. */
const routineIds = async (employee: string) =>
  (await env.DB.prepare("SELECT id FROM routines WHERE employee_id = ? ORDER BY id").bind(employee).all<{ id: string }>()).results.map(
    (r) => r.id,
  );

const FORM = {
  employee_id: "cr-ada",
  name: "Monday report",
  cron: "0 9 * * MON",
  every_minutes: "",
  title: "Write the report",
  acceptance_criteria: "report.md exists\n\nindex links it\n",
};

describe("the console's routines page", () => {
  it("shows a manager the form, refuses a bad cron expression next to its field, and creates a valid routine", async () => {
    await putEmployee("cr-ada", { name: "Ada" });
    const m = await login(await createOperator("manager", "routines-console-manager"));
    const page = await web("/console/routines", { cookie: m.cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<a href="/console/routines" aria-current="page">Routines</a>');
    expect(page.text).toContain('<form method="post" action="/console/routines" id="routine-create">');
    expect(page.text).toContain('<option value="cr-ada">Ada (cr-ada)</option>');

    const bad = await web("/console/routines", { cookie: m.cookie, form: { ...FORM, cron: "61 9 * * MON", _csrf: m.csrf } });
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('data-code="validation_failed"');
    expect(bad.text).toMatch(
      /<input id="routine-cron" name="cron" type="text" value="61 9 \* \* MON"[^>]*aria-invalid="true" aria-describedby="routine-cron-errors"/,
    );
    expect(bad.text).toContain(
      '<ul class="field-errors" id="routine-cron-errors"><li>not a valid cron expression: minute: 61 is outside 0-59</li></ul>',
    );
    // The draft stays as typed.
    expect(bad.text).toContain('value="Monday report"');
    expect(bad.text).toContain('<option value="cr-ada" selected="">');
    expect(await routineIds("cr-ada")).toEqual([]);

    const none = await web("/console/routines", { cookie: m.cookie, form: { ...FORM, cron: "", _csrf: m.csrf } });
    expect(none.status).toBe(422);
    expect(none.text).toContain('id="routine-schedule-errors"><li>give exactly one of cron and every_minutes</li>');
    const noTitle = await web("/console/routines", { cookie: m.cookie, form: { ...FORM, title: "", _csrf: m.csrf } });
    expect(noTitle.status).toBe(422);
    expect(noTitle.text).toContain('id="routine-title-errors"');

    const made = await web("/console/routines", { cookie: m.cookie, form: { ...FORM, _csrf: m.csrf } });
    expect(made.status).toBe(303);
    const [id] = await routineIds("cr-ada");
    expect(made.headers.get("location")).toBe(`/console/routines#routine-${id}`);
    const api = (await call(`/v1/routines/${id}`)).body;
    expect(api).toMatchObject({
      name: "Monday report",
      schedule: { cron: "0 9 * * MON" },
      template: { title: "Write the report", acceptance_criteria: ["report.md exists", "index links it"] },
      enabled: true,
    });
    const listed = await web("/console/routines", { cookie: m.cookie });
    expect(listed.text).toContain(`<tr id="routine-${id}" data-enabled="true">`);
    expect(listed.text).toContain("cron 0 9 * * MON (UTC)");

    const every = await web("/console/routines", { cookie: m.cookie, form: { ...FORM, cron: "", every_minutes: "90", _csrf: m.csrf } });
    expect(every.status).toBe(303);
    expect((await web("/console/routines", { cookie: m.cookie })).text).toContain("every 90 minutes");
  });

  it("disables, enables and deletes a routine with its buttons", async () => {
    await putEmployee("cr-bo");
    const m = await login(await createOperator("manager", "routines-console-buttons"));
    const made = await call("/v1/routines", {
      body: { employee_id: "cr-bo", name: "hourly", schedule: { every_minutes: 60 }, template: { title: "t", acceptance_criteria: [] } },
    });
    const id = made.body.routine_id as string;
    const off = await web(`/console/routines/${id}/disable`, { cookie: m.cookie, form: { _csrf: m.csrf } });
    expect(off.status).toBe(303);
    expect(off.headers.get("location")).toBe(`/console/routines#routine-${id}`);
    expect((await call(`/v1/routines/${id}`)).body.enabled).toBe(false);
    expect((await web("/console/routines", { cookie: m.cookie })).text).toContain(`<tr id="routine-${id}" data-enabled="false">`);
    expect((await web(`/console/routines/${id}/enable`, { cookie: m.cookie, form: { _csrf: m.csrf } })).status).toBe(303);
    expect((await call(`/v1/routines/${id}`)).body.enabled).toBe(true);

    // Enabling a retired employee's routine is refused on its row.
    expect((await web(`/console/routines/${id}/disable`, { cookie: m.cookie, form: { _csrf: m.csrf } })).status).toBe(303);
    expect((await call("/v1/employees/cr-bo/retire", { body: {} })).status).toBe(200);
    const refused = await web(`/console/routines/${id}/enable`, { cookie: m.cookie, form: { _csrf: m.csrf } });
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('data-code="employee_retired"');

    expect((await web(`/console/routines/${id}/delete`, { cookie: m.cookie, form: { _csrf: m.csrf } })).status).toBe(303);
    expect((await call(`/v1/routines/${id}`)).status).toBe(404);
    const gone = await web(`/console/routines/${id}/delete`, { cookie: m.cookie, form: { _csrf: m.csrf } });
    expect(gone.status).toBe(404);
    expect(gone.text).toContain('data-code="not_found"');
  });

  it("shows a viewer no forms and refuses the viewer's posts; a post without the form token is refused", async () => {
    await putEmployee("cr-cy");
    const v = await login(await createOperator("viewer", "routines-console-viewer"));
    const page = await web("/console/routines", { cookie: v.cookie });
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('id="routine-create"');
    expect(page.text).toContain("needs the manager role");
    const post = await web("/console/routines", { cookie: v.cookie, form: { ...FORM, employee_id: "cr-cy", _csrf: v.csrf } });
    expect(post.status).toBe(403);
    expect(post.text).toContain('data-code="forbidden"');

    const m = await login(await createOperator("manager", "routines-console-csrf"));
    const noToken = await web("/console/routines", { cookie: m.cookie, form: { ...FORM, employee_id: "cr-cy" } });
    expect(noToken.status).toBe(403);
    expect(noToken.text).toContain('data-code="csrf_failed"');
    const elsewhere = await web("/console/routines", {
      cookie: m.cookie,
      form: { ...FORM, employee_id: "cr-cy", _csrf: m.csrf },
      origin: "https://evil.example",
    });
    expect(elsewhere.status).toBe(403);
    expect(await routineIds("cr-cy")).toEqual([]);
    expect((await web("/console/routines")).status).toBe(303);
  });

  it("is served with the CSP and no inline script or style", async () => {
    const admin = await login(await createOperator("admin", "routines-console-admin"));
    const res = await web("/console/routines", { cookie: admin.cookie });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(res.text).not.toMatch(/\sstyle=/);
    expect(res.text).not.toMatch(/\son[a-z]+=/);
  });
});
