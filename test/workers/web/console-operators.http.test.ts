import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createOperator } from "../../factories";
import { login, web } from "../../factories/web";

const operatorCount = async () =>
  (await env.DB.prepare("SELECT count(*) AS n FROM credentials WHERE kind = 'operator'").first<number>("n"))!;

const idOf = async (name: string) =>
  (await env.DB.prepare("SELECT id FROM credentials WHERE kind = 'operator' AND name = ?").bind(name).first<string>("id"))!;

describe("the operators page", () => {
  it("mints an operator token an admin sees once, and the token calls the API with its role", async () => {
    const admin = await login(await createOperator("admin", "ops-admin"));
    const page = await web("/console/operators", { cookie: admin.cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain('id="operator-create"');
    expect(page.text).toContain('href="/console/operators"');

    const res = await web("/console/operators", { cookie: admin.cookie, form: { name: "  mia  ", role: "manager", _csrf: admin.csrf } });
    expect(res.status).toBe(201);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.text).toContain("Operator token for mia (manager)");
    const token = /<code id="operator-token">([^<]+)<\/code>/.exec(res.text)?.[1];
    expect(token).toBeTruthy();

    // A manager's token: it reads and gives work, but is no admin.
    expect((await call("/v1/employees", { token: token! })).status).toBe(200);
    expect((await call("/v1/admin/operators", { token: token! })).status).toBe(403);
    // Shown once: the list names the operator, never its token again.
    const again = await web("/console/operators", { cookie: admin.cookie });
    expect(again.text).toContain("mia");
    expect(again.text).not.toContain(token!);
    const listed = (await call("/v1/admin/operators?limit=200")).body.operators as { name: string; role: string }[];
    expect(listed).toContainEqual(expect.objectContaining({ name: "mia", role: "manager" }));
  });

  it("refuses a blank name and an unknown role next to their fields and creates nothing", async () => {
    const admin = await login(await createOperator("admin", "ops-admin-2"));
    const before = await operatorCount();
    const res = await web("/console/operators", { cookie: admin.cookie, form: { name: " ", role: "owner", _csrf: admin.csrf } });
    expect(res.status).toBe(422);
    expect(res.text).toContain('data-code="validation_failed"');
    expect(res.text).toContain('id="operator-name-errors"');
    expect(res.text).toContain('id="operator-role-errors"');
    expect(res.text).toContain('aria-invalid="true"');
    expect(await operatorCount()).toBe(before);
  });

  it("is an admin's: a viewer and a manager are refused the page and the form, with no link to it", async () => {
    for (const role of ["viewer", "manager"] as const) {
      const who = await login(await createOperator(role, `ops-${role}`));
      const home = await web("/console", { cookie: who.cookie });
      expect(home.text).not.toContain('href="/console/operators"');
      expect((await web("/console/operators", { cookie: who.cookie })).status).toBe(403);
      const before = await operatorCount();
      const res = await web("/console/operators", { cookie: who.cookie, form: { name: "sneaky", role: "admin", _csrf: who.csrf } });
      expect(res.status).toBe(403);
      expect(await operatorCount()).toBe(before);
    }
  });

  it("revokes another operator's token, whose API calls and console session then stop, but not one's own", async () => {
    const admin = await login(await createOperator("admin", "ops-admin-3"));
    const victimToken = await createOperator("viewer", "ops-leaver");
    const victim = await login(victimToken);
    const id = await idOf("ops-leaver");
    const page = await web("/console/operators", { cookie: admin.cookie });
    expect(page.text).toMatch(
      new RegExp(`<form method="post" action="/console/operators/${id}/revoke" class="inline" data-confirm="[^"]+">`),
    );

    const forged = await web(`/console/operators/${id}/revoke`, { cookie: admin.cookie, form: { confirm: "yes" } });
    expect(forged.status).toBe(403);
    expect((await call("/v1/employees", { token: victimToken })).status).toBe(200);

    const res = await web(`/console/operators/${id}/revoke`, { cookie: admin.cookie, form: { _csrf: admin.csrf } });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`/console/operators#operator-${id}`);
    expect((await call("/v1/employees", { token: victimToken })).status).toBe(401);
    expect((await web("/console", { cookie: victim.cookie })).status).not.toBe(200);

    // One's own token is not offered, and is refused when asked for anyway.
    const selfId = await idOf("ops-admin-3");
    expect(page.text).not.toContain(`/console/operators/${selfId}/revoke`);
    const self = await web(`/console/operators/${selfId}/revoke`, { cookie: admin.cookie, form: { _csrf: admin.csrf } });
    expect(self.status).toBe(403);
    expect(self.text).toContain('data-code="forbidden"');
    expect((await call("/v1/admin/operators?limit=200")).body.operators).toContainEqual(
      expect.objectContaining({ operator_id: selfId, revoked_at: null }),
    );
  });
});
