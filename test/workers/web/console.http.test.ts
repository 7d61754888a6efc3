import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { requestApproval } from "../../../src/approvals/broker";
import { getDb } from "../../../src/db/client";
import { call, createOperator, createRunner } from "../../factories";
import { login, web } from "../../factories/web";

const now = async () => new Date((await call("/v1/admin/clock")).body.now);

async function pendingApproval(subject: string, ttlSecs = 3600) {
  const made = await requestApproval(
    env,
    getDb(env.DB),
    {
      action: { kind: "topology_reroute", subject, params: { task_class: "billing", from_agent: "alice", to_agent: "bob" } },
      evidence: { samples: 5, reject_rate: 0.8 },
      ttlSecs,
      requestedBy: "web-test",
    },
    await now(),
  );
  expect(made.status).toBe("pending");
  return made.approval_id;
}

const approvalStatus = async (id: string) => (await call(`/v1/approvals/${id}`)).body.status as string;

describe("console login and the session cookie", () => {
  it("exchanges an operator token for an HttpOnly, Secure, SameSite=Strict __Host- cookie that opens the console", async () => {
    const token = await createOperator("viewer", "cookie-viewer");
    const { setCookie, cookie } = await login(token);
    expect(setCookie).toMatch(/^__Host-crewplane-console=csess_[0-9a-f]{16}\.[0-9a-f]{64};/);
    expect(setCookie).toMatch(/; HttpOnly/i);
    expect(setCookie).toMatch(/; Secure/i);
    expect(setCookie).toMatch(/; SameSite=Strict/i);
    expect(setCookie).toMatch(/; Path=\//i);
    expect(setCookie).not.toMatch(/Domain=/i);
    // The token itself is not in the cookie.
    expect(setCookie).not.toContain(token.split(".")[1]!);
    const home = await web("/console", { cookie });
    expect(home.status).toBe(200);
    expect(home.text).toContain("Signed in as <strong>cookie-viewer</strong>");
  });

  it("refuses a wrong token and a runner's token with 401 inline, setting no cookie", async () => {
    const runner = await createRunner("web-runner");
    for (const token of ["op_0000000000000000." + "0".repeat(64), runner.token]) {
      const res = await web("/console/login", { form: { token } });
      expect(res.status).toBe(401);
      expect(res.headers.get("set-cookie")).toBeNull();
      expect(res.text).toContain('data-code="unauthorized"');
      expect(res.text).toContain('aria-invalid="true"');
    }
    const empty = await web("/console/login", { form: { token: "" } });
    expect(empty.status).toBe(422);
    expect(empty.text).toContain('data-code="validation_failed"');
  });

  it("sends a page request without a session to the login form, and answers a post without one 401", async () => {
    const page = await web("/console/approvals");
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/console/login?next=%2Fconsole%2Fapprovals");
    const post = await web("/console/config/runner", { form: { json: "{}" } });
    expect(post.status).toBe(401);
    expect(post.headers.get("content-type")).toMatch(/^text\/html/);
    expect(post.text).toContain('data-code="unauthorized"');
  });

  it("ends the session at logout, and a revoked operator's sessions at once", async () => {
    const token = await createOperator("manager", "web-revoked");
    const a = await login(token);
    const b = await login(token);
    const out = await web("/console/logout", { cookie: a.cookie, form: { _csrf: a.csrf } });
    expect(out.status).toBe(303);
    expect(out.headers.get("set-cookie")).toMatch(/Max-Age=0/);
    expect((await web("/console", { cookie: a.cookie })).status).toBe(303);
    expect((await web("/console", { cookie: b.cookie })).status).toBe(200);

    const operatorId = token.split(".")[0]!;
    expect((await call(`/v1/admin/operators/${operatorId}`, { method: "DELETE" })).status).toBe(200);
    expect((await web("/console", { cookie: b.cookie })).status).toBe(303);
    const post = await web("/console/logout", { cookie: b.cookie, form: { _csrf: b.csrf } });
    expect(post.status).toBe(401);
  });

  it("does not follow a login's next to another site", async () => {
    const token = await createOperator("viewer", "web-next");
    const res = await web("/console/login", { form: { token, next: "//evil.example/console" } });
    expect(res.headers.get("location")).toBe("/console");
  });
});

describe("forms are CSRF-protected and roles are enforced by the server", () => {
  it("refuses a decide without the form token, with another session's token, or from another origin (403 csrf_failed), changing nothing", async () => {
    const mgr = await login(await createOperator("manager", "csrf-manager"));
    const other = await login(await createOperator("manager", "csrf-other"));
    const id = await pendingApproval("csrf:alice");
    const attempts: { cookie: string; form: Record<string, string>; origin?: string }[] = [
      { cookie: mgr.cookie, form: { decision: "approve" } },
      { cookie: mgr.cookie, form: { decision: "approve", _csrf: other.csrf } },
      { cookie: mgr.cookie, form: { decision: "approve", _csrf: mgr.csrf }, origin: "https://evil.example" },
    ];
    for (const a of attempts) {
      const res = await web(`/console/approvals/${id}/decide`, a);
      expect(res.status).toBe(403);
      expect(res.text).toContain('data-code="csrf_failed"');
    }
    expect(await approvalStatus(id)).toBe("pending");
  });

  it("lets a manager decide with a note through the form, and shows the outcome", async () => {
    const mgr = await login(await createOperator("manager", "form-manager"));
    const id = await pendingApproval("form:alice");
    const before = await web("/console/approvals", { cookie: mgr.cookie });
    expect(before.text).toContain(`action="/console/approvals/${id}/decide"`);
    const res = await web(`/console/approvals/${id}/decide`, {
      cookie: mgr.cookie,
      form: { decision: "approve", note: "evidence holds", _csrf: mgr.csrf },
    });
    expect(res.status).toBe(303);
    const view = (await call(`/v1/approvals/${id}`)).body;
    expect(view).toMatchObject({ status: "approved", note: "evidence holds" });
    const after = await web("/console/approvals", { cookie: mgr.cookie });
    expect(after.text).toMatch(new RegExp(`id="approval-${id}" data-status="approved"`));
    // Deciding again: 409 already_decided, shown on the card.
    const again = await web(`/console/approvals/${id}/decide`, { cookie: mgr.cookie, form: { decision: "deny", _csrf: mgr.csrf } });
    expect(again.status).toBe(409);
    expect(again.text).toContain('data-code="already_decided"');
  });

  it("shows a viewer no decide form, and refuses the viewer's decide (with its own valid form token) 403 forbidden", async () => {
    const viewer = await login(await createOperator("viewer", "form-viewer"));
    const id = await pendingApproval("viewer:alice");
    const page = await web("/console/approvals", { cookie: viewer.cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain(`id="approval-${id}"`);
    expect(page.text).not.toContain(`/console/approvals/${id}/decide`);
    expect(page.text).toContain("Deciding needs the manager role.");
    const forged = await web(`/console/approvals/${id}/decide`, {
      cookie: viewer.cookie,
      form: { decision: "approve", _csrf: viewer.csrf },
    });
    expect(forged.status).toBe(403);
    expect(forged.text).toContain('data-code="forbidden"');
    expect(await approvalStatus(id)).toBe("pending");
    // The manager-only topology page is refused too, and not offered in the viewer's navigation.
    expect(page.text).not.toContain('href="/console/topology"');
    expect((await web("/console/topology", { cookie: viewer.cookie })).status).toBe(403);
  });

  it("shows what a SOUL consolidation approval would change: both sizes and the diff it is bound to", async () => {
    const viewer = await login(await createOperator("viewer", "soul-viewer"));
    const diff = [
      "===================================================================",
      "--- SOUL.md@v2",
      "+++ SOUL.md@consolidated",
      "@@ -1,3 +1,2 @@",
      " # Rules",
      "-Never double-book a room. (note 1)",
      "-Never double-book a room. (note 2)",
      "+Never double-book a room.",
      "",
    ].join("\n");
    const made = await requestApproval(
      env,
      getDb(env.DB),
      {
        action: {
          kind: "soul_consolidation",
          subject: "kai",
          params: { employee_id: "kai", job_id: "job_x", base_version: 2, bytes_before: 52_480, bytes_after: 1_234, diff },
        },
        evidence: { bytes_before: 52_480, bytes_after: 1_234, summary: "merged repeated rules" },
        ttlSecs: 3600,
        requestedBy: "web-test",
      },
      await now(),
    );
    const page = await web("/console/approvals", { cookie: viewer.cookie });
    expect(page.status).toBe(200);
    const card = page.text.slice(page.text.indexOf(`id="approval-${made.approval_id}"`));
    expect(card).toContain("Replaces the whole SOUL.md with a shorter rewrite");
    expect(card).toContain("from version 2");
    expect(card).toContain('<span data-bytes-before="52480">52,480</span>');
    expect(card).toContain('<span data-bytes-after="1234">1,234</span> bytes');
    expect(card).toContain('<span class="d-del">-Never double-book a room. (note 1)\n</span>');
    expect(card).toContain('<span class="d-add">+Never double-book a room.\n</span>');
  });

  it("gives the bootstrap ADMIN_TOKEN a session but no decide form, as the API refuses its decide", async () => {
    const admin = await login("test-admin-token");
    const id = await pendingApproval("bootstrap:alice");
    const page = await web("/console/approvals", { cookie: admin.cookie });
    expect(page.text).not.toContain(`/console/approvals/${id}/decide`);
    const res = await web(`/console/approvals/${id}/decide`, { cookie: admin.cookie, form: { decision: "approve", _csrf: admin.csrf } });
    expect(res.status).toBe(403);
    expect(await approvalStatus(id)).toBe("pending");
  });

  it("shows a config section's validation errors inline (422, the code, each path) and saves a valid one", async () => {
    const admin = await login(await createOperator("admin", "config-admin"));
    const bad = await web("/console/config/runner", {
      cookie: admin.cookie,
      form: { json: '{"max_attempts":"three","bogus":1}', _csrf: admin.csrf },
    });
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('data-code="validation_failed"');
    expect(bad.text).toContain("max_attempts:");
    expect(bad.text).toContain("Unrecognized key: &quot;bogus&quot;");
    expect(bad.text).toContain("&quot;three&quot;"); // the draft is kept
    const notJson = await web("/console/config/runner", { cookie: admin.cookie, form: { json: "{", _csrf: admin.csrf } });
    expect(notJson.status).toBe(422);
    const good = await web("/console/config/runner", { cookie: admin.cookie, form: { json: '{"max_attempts":3}', _csrf: admin.csrf } });
    expect(good.status).toBe(303);
    const manager = await login(await createOperator("manager", "config-manager"));
    const refused = await web("/console/config/runner", { cookie: manager.cookie, form: { json: "{}", _csrf: manager.csrf } });
    expect(refused.status).toBe(403);
    expect((await web("/console/config/runner", { cookie: manager.cookie })).text).toContain("Editing needs the admin role.");
  });
});

describe("pages and headers", () => {
  it("serves every console page with the CSP and no inline script", async () => {
    const admin = await login(await createOperator("admin", "pages-admin"));
    for (const path of [
      "/console",
      "/console/approvals",
      "/console/topology",
      "/console/employees",
      "/console/tasks",
      "/console/matrix",
      "/console/runners",
      "/console/audit",
      "/console/config",
      "/console/config/team",
    ]) {
      const res = await web(path, { cookie: admin.cookie });
      expect(res.status, path).toBe(200);
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain("unsafe-inline");
      expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(res.text).not.toMatch(/\sstyle=/);
      expect(res.text).not.toMatch(/\son[a-z]+=/);
    }
  });

  it("answers an unknown console resource with an HTML 404 carrying the code", async () => {
    const viewer = await login(await createOperator("viewer", "pages-404"));
    const res = await web("/console/employees/nobody-here", { cookie: viewer.cookie });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.text).toContain('data-code="not_found"');
  });

  it("serves the client assets from the Worker, versioned and cached", async () => {
    const page = await web("/council");
    const src = /src="(\/assets\/htmx\.js\?v=[0-9a-f]{8})"/.exec(page.text)?.[1];
    expect(src).toBeDefined();
    const js = await web(src!);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(js.headers.get("cache-control")).toContain("immutable");
    expect(js.text).toContain("htmx");
    for (const name of ["app.js", "app.css", "uplot.js", "uplot.css"]) expect((await web(`/assets/${name}`)).status).toBe(200);
    expect((await web("/assets/nope.js")).status).toBe(404);
  });

  it("streams the operator feed to a session (cookie), not to a request without one", async () => {
    const viewer = await login(await createOperator("viewer", "stream-viewer-web"));
    const { exports } = await import("cloudflare:workers");
    const res = await exports.default.fetch("http://crewplane.test/console/events/stream", { headers: { cookie: viewer.cookie } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    await res.body!.cancel();
    const none = await exports.default.fetch("http://crewplane.test/console/events/stream", { redirect: "manual" });
    expect(none.status).toBe(303);
    await none.body?.cancel();
  });

  it("keeps a form token out of the public pages and a session cookie out of the public pages' reach", async () => {
    const viewer = await login(await createOperator("viewer", "public-cookie"));
    const res = await web("/council", { cookie: viewer.cookie });
    expect(res.status).toBe(200);
    expect(res.text).not.toContain(viewer.csrf);
    expect(res.text).not.toContain("_csrf");
  });
});
