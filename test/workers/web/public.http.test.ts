import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { requestApproval } from "../../../src/approvals/broker";
import { getDb } from "../../../src/db/client";
import { call } from "../../factories";
import { dialog, sessionOpener } from "../../factories/council-http";
import { eventFrames, readStream } from "../../factories/sse";
import { web } from "../../factories/web";

const open = sessionOpener("web-public");

describe("the public pages", () => {
  it("shows the council: the term's members with tier and reputation, and a session's trail", async () => {
    const { sid, seated } = await open();
    await dialog(seated[1]!, sid, { dialog_type: "assess", content: "A digest helps nodes outside the council follow it." });
    const page = await web("/council");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(page.text).toContain(`href="/council/sessions/${sid}"`);
    expect(page.text).toContain("A digest helps nodes outside the council follow it.");
    expect(page.text).toContain('data-phase="diverge"');
    const one = await web(`/council/sessions/${sid}`);
    expect(one.status).toBe(200);
    expect(one.text).toContain(seated[1]!.node_id);
    // Each seated member's reputation is on the council page when the term seats them.
    const overview = (await call("/v1/council", { token: null })).body;
    for (const m of overview.members as { node_id: string }[]) expect(page.text).toContain(m.node_id);
    expect((await web("/council/sessions/delib_0000000000000000")).status).toBe(404);
    expect((await web("/council/sessions/not-a-session")).status).toBe(422);
  });

  it("never shows an operator-only event or secret, on the pages or on their stream", async () => {
    const { sid, seated } = await open();
    const made = await requestApproval(
      env,
      getDb(env.DB),
      {
        action: { kind: "topology_reroute", subject: "public:alice", params: { task_class: "ops", from_agent: "alice", to_agent: "bob" } },
        evidence: { samples: 5 },
        ttlSecs: 3600,
        requestedBy: "web-public-test",
      },
      new Date((await call("/v1/admin/clock")).body.now),
    );
    for (const path of ["/council", `/council/sessions/${sid}`, "/principles", "/projects"]) {
      const page = await web(path);
      expect(page.status, path).toBe(200);
      expect(page.text).not.toContain(made.approval_id);
      expect(page.text).not.toContain(seated[0]!.token.split(".")[1]!);
      expect(page.text).not.toContain("approval.");
      expect(page.text).not.toContain('href="/console/');
    }
    const stream = await readStream("/v1/public/events/stream?cursor=0", (f) => eventFrames(f).length >= 5, {
      token: null,
      timeoutMs: 5_000,
    });
    const types = eventFrames(stream.frames).map((f) => f.event!);
    expect(types.length).toBeGreaterThan(0);
    expect(types.every((t) => /^(council\.|governance\.|project\.|swarm_task\.|node\.registered)/.test(t))).toBe(true);
  });

  it("checks a text against the principles through a form, with the server's error inline when the text is missing", async () => {
    const ok = await web("/principles/check", { form: { text: "Publish a weekly digest of council records" } });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain("data-max-overlap=");
    const bad = await web("/principles/check", { form: { text: "" } });
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('data-code="validation_failed"');
    expect(bad.text).toContain('aria-invalid="true"');
    const search = await web("/principles?q=digest");
    expect(search.status).toBe(200);
    expect((await web("/principles?q=%00")).status).toBe(422);
  });

  it("lists projects and answers an unknown project 404 as a page", async () => {
    expect((await web("/projects")).status).toBe(200);
    const missing = await web("/projects/proj_0000000000000000");
    expect(missing.status).toBe(404);
    expect(missing.text).toContain('data-code="not_found"');
  });

  it("leaves the JSON API's answers alone: a /v1 error is still problem+json", async () => {
    const res = await call("/v1/council/sessions/delib_0000000000000000", { token: null });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(res.headers.get("content-security-policy")).toBeNull();
  });
});
