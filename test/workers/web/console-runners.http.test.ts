import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createOperator } from "../../factories";
import { login, web } from "../../factories/web";

const runnerCount = async () => (await env.DB.prepare("SELECT count(*) AS n FROM credentials WHERE kind = 'runner'").first<number>("n"))!;

describe("the runner fleet page's new-token form", () => {
  it("mints a token an admin sees once, with the commands that run a runner, and the token works", async () => {
    const admin = await login(await createOperator("admin", "fleet-admin"));
    const form = await web("/console/runners", { cookie: admin.cookie });
    expect(form.status).toBe(200);
    expect(form.text).toContain('id="runner-create"');

    const res = await web("/console/runners", { cookie: admin.cookie, form: { name: "  build box  ", _csrf: admin.csrf } });
    expect(res.status).toBe(201);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const token = /<code id="runner-token">([^<]+)<\/code>/.exec(res.text)?.[1];
    expect(token).toBeTruthy();
    expect(res.text).toContain(`CREWPLANE_RUNNER_TOKEN=${token} local-runner/bin/crewplane-runner --url http://crewplane.test`);
    expect(res.text).toContain("install-service --url http://crewplane.test");
    expect(res.text).toContain("Runner token for build box");

    // The token is a runner's: it leases (nothing queued for it, but it is let in).
    const lease = await call("/v1/runner/lease", { token: token!, body: { capacity: 1, wait_ms: 0, runtimes: ["offline"] } });
    expect(lease.status).toBe(200);
    // Shown once: the fleet lists the runner by name, never its token again.
    const again = await web("/console/runners", { cookie: admin.cookie });
    expect(again.text).toContain("build box");
    expect(again.text).not.toContain(token!);
    const listed = (await call("/v1/admin/runners")).body.runners as { name: string }[];
    expect(listed.map((r) => r.name)).toContain("build box");
  });

  it("refuses a blank name next to its field and creates nothing", async () => {
    const admin = await login(await createOperator("admin", "fleet-admin-2"));
    const before = await runnerCount();
    const res = await web("/console/runners", { cookie: admin.cookie, form: { name: "   ", _csrf: admin.csrf } });
    expect(res.status).toBe(422);
    expect(res.text).toContain('id="runner-name" name="name" required');
    expect(res.text).toContain('aria-invalid="true"');
    expect(res.text).toContain('id="runner-name-errors"');
    expect(res.text).toContain('data-code="validation_failed"');
    expect(await runnerCount()).toBe(before);
  });

  it("is an admin's: a manager sees no form and is refused, and a post without the form token is refused", async () => {
    const mgr = await login(await createOperator("manager", "fleet-manager"));
    const page = await web("/console/runners", { cookie: mgr.cookie });
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('id="runner-create"');
    const before = await runnerCount();
    expect((await web("/console/runners", { cookie: mgr.cookie, form: { name: "sneaky", _csrf: mgr.csrf } })).status).toBe(403);
    const admin = await login(await createOperator("admin", "fleet-admin-3"));
    const forged = await web("/console/runners", { cookie: admin.cookie, form: { name: "forged" } });
    expect(forged.status).toBe(403);
    expect(forged.text).toContain('data-code="csrf_failed"');
    expect(await runnerCount()).toBe(before);
  });
});
