import { describe, expect, it } from "vitest";
import { ADMIN_TOKEN, call, createOperator } from "../../factories";
import { login, web } from "../../factories/web";

const runner = async () => (await call("/v1/config/runner")).body as Record<string, unknown>;

describe("a config section's page: a form generated from its schema", () => {
  // First in the file, before any named operator exists: with nobody to approve, switching
  // topology evolution on is refused by its precondition, and the page says why.
  it("shows a section's precondition refusal (409) on the page and saves nothing", async () => {
    const boot = await login(ADMIN_TOKEN);
    const res = await web("/console/config/topology_evolution", {
      cookie: boot.cookie,
      form: { form: "fields", _csrf: boot.csrf, enabled: "on", lookback_days: "14" },
    });
    expect(res.status).toBe(409);
    expect(res.text).toContain('data-code="approval_broker_unavailable"');
    expect(res.text).toMatch(/<input type="checkbox" id="cfg-enabled" name="enabled" checked/); // the draft is kept
    expect((await call("/v1/config/topology_evolution")).body.enabled).toBe(false);
  });

  it("renders each field with its label, current value and hint", async () => {
    const admin = await login(await createOperator("admin", "cfg-admin-render"));
    const page = await web("/console/config/evolution", { cookie: admin.cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<input type="hidden" name="form" value="fields"');
    expect(page.text).toContain('<label for="cfg-noise_band-cases">');
    expect(page.text).toMatch(
      /<input type="number" id="cfg-noise_band-cases" name="noise_band\.cases" value="0\.05" step="any" min="0" max="1"/,
    );
    expect(page.text).toMatch(/<select id="cfg-strategy" name="strategy"[^>]*>.*<option value="balanced" selected/s);
    expect(page.text).toMatch(/<input type="checkbox" id="cfg-skill_auto_activate" name="skill_auto_activate" checked/);
    expect(page.text).toContain('id="cfg-max_gvu_generations-hint"');
    // The raw JSON fallback is still there, closed.
    expect(page.text).toContain('<details id="config-raw">');
    expect(page.text).toContain('id="config-json" name="json"');
  });

  it("saves through the fields form and the effective value changes", async () => {
    const admin = await login(await createOperator("admin", "cfg-admin-save"));
    const form = await web("/console/config/runner", { cookie: admin.cookie });
    const value = (name: string) => new RegExp(`name="${name}" value="(\\d+)"`).exec(form.text)?.[1];
    expect(value("max_attempts")).toBe(String((await runner()).max_attempts));
    const fields: Record<string, string> = { form: "fields", _csrf: admin.csrf };
    for (const key of Object.keys(await runner())) fields[key] = value(key)!;
    const res = await web("/console/config/runner", { cookie: admin.cookie, form: { ...fields, max_attempts: "7", max_wait_ms: "" } });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/console/config/runner?saved=1");
    expect(await runner()).toMatchObject({ max_attempts: 7, max_wait_ms: 25_000 });
    const after = await web("/console/config/runner?saved=1", { cookie: admin.cookie });
    expect(after.text).toContain("Saved.");
    expect(after.text).toContain('name="max_attempts" value="7"');
  });

  it("refuses a bad field (422) with the message next to it, keeps the draft, and stores nothing", async () => {
    const admin = await login(await createOperator("admin", "cfg-admin-bad"));
    const before = await runner();
    const res = await web("/console/config/runner", {
      cookie: admin.cookie,
      form: { form: "fields", _csrf: admin.csrf, max_attempts: "99", lease_visibility_ms: "lots" },
    });
    expect(res.status).toBe(422);
    expect(res.text).toContain('data-code="validation_failed"');
    expect(res.text).toMatch(
      /id="cfg-max_attempts" name="max_attempts" value="99"[^>]*aria-invalid="true" aria-describedby="cfg-max_attempts-errors cfg-max_attempts-hint"/,
    );
    expect(res.text).toMatch(/<ul class="field-errors" id="cfg-max_attempts-errors"><li>Too big: expected number to be &lt;=10<\/li>/);
    expect(res.text).toMatch(/<ul class="field-errors" id="cfg-lease_visibility_ms-errors"><li>[^<]*expected number/);
    // A field that was fine is not marked.
    expect(res.text).not.toMatch(/id="cfg-max_wait_ms"[^>]*aria-invalid/);
    expect(await runner()).toEqual(before);
  });

  it("places a JSON sub-field's problems on that field", async () => {
    const admin = await login(await createOperator("admin", "cfg-admin-json-field"));
    const res = await web("/console/config/inbox", {
      cookie: admin.cookie,
      form: { form: "fields", _csrf: admin.csrf, pools: "on", shards: '{"offline": [{"from": "yesterday", "shards": 4}]}' },
    });
    expect(res.status).toBe(422);
    expect(res.text).toMatch(/<textarea id="cfg-shards" name="shards"[^>]*aria-invalid="true"/);
    expect(res.text).toMatch(/<ul class="field-errors" id="cfg-shards-errors"><li>offline\.0\.from: /);
    const notJson = await web("/console/config/inbox", { cookie: admin.cookie, form: { form: "fields", _csrf: admin.csrf, shards: "{" } });
    expect(notJson.status).toBe(422);
    expect(notJson.text).toMatch(/id="cfg-shards-errors"><li>not JSON: /);
    expect((await call("/v1/config/inbox")).body).toMatchObject({ pools: true, shards: {} });
  });

  it("still saves the whole section as JSON, and shows its problems on the JSON field with the details open", async () => {
    const admin = await login(await createOperator("admin", "cfg-admin-raw"));
    const bad = await web("/console/config/events", { cookie: admin.cookie, form: { json: '{"retention_days":0}', _csrf: admin.csrf } });
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('<details id="config-raw" open="">');
    expect(bad.text).toMatch(/<ul class="field-errors" id="config-json-errors"><li>retention_days: /);
    expect(bad.text).not.toContain('aria-invalid="true" aria-describedby="cfg-');
    const good = await web("/console/config/events", {
      cookie: admin.cookie,
      form: { form: "json", json: '{"retention_days":30}', _csrf: admin.csrf },
    });
    expect(good.status).toBe(303);
    expect((await call("/v1/config/events")).body.retention_days).toBe(30);
  });

  it("shows a viewer the values read-only and refuses a viewer's save", async () => {
    const viewer = await login(await createOperator("viewer", "cfg-viewer"));
    const page = await web("/console/config/runner", { cookie: viewer.cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain("Editing needs the admin role.");
    expect(page.text).not.toContain('id="config-fields"');
    const before = await runner();
    const res = await web("/console/config/runner", {
      cookie: viewer.cookie,
      form: { form: "fields", _csrf: viewer.csrf, max_attempts: "2" },
    });
    expect(res.status).toBe(403);
    expect(await runner()).toEqual(before);
  });
});
