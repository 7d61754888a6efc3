import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { aeeRejections } from "../../../src/db/schema";
import type { PlaybookEntry } from "../../../src/evolution/playbook";
import { playbookWrite } from "../../../src/evolution/playbook-store";
import { soulVersionStatements } from "../../../src/evolution/soul-store";
import { sha256Hex } from "../../../src/lib/crypto";
import { call, createOperator } from "../../factories";
import { putEmployee } from "../../factories/org";
import { login, web } from "../../factories/web";

const AT = "2026-08-01T00:00:00.000Z";

function entry(agent: string, id: string, content: string): PlaybookEntry {
  return {
    entry_id: id,
    agent_id: agent,
    category: "repair",
    signals_match: ["correction"],
    content,
    eval_cases: ["support/tone"],
    assertions: [],
    failure_history: [],
    applications: [
      { at: AT, outcome: "success" },
      { at: AT, outcome: "failed" },
      { at: AT, outcome: "success" },
    ],
    success_streak: 1,
    derived_from: [{ kind: "operator", id: "op_seed" }],
    state: "active",
    state_reason: "settle_accept",
    state_since: AT,
    created_at: AT,
    updated_at: AT,
    version: 1,
  };
}

/** An employee with a second SOUL version, two playbook entries and two rejected candidates. */
async function learner(id: string) {
  await putEmployee(id, { name: `Learner ${id}` });
  const soul = await call(`/v1/employees/${id}/soul`);
  expect(soul.body.version).toBe(1);
  // A second version as an operator's edit writes it (the version row, then the head), straight to D1.
  const db = getDb(env.DB);
  const content = `${soul.body.content}\nAlways cite the ticket number.\n`;
  const v2 = soulVersionStatements(
    db,
    {
      employeeId: id,
      version: 2,
      content,
      sha256: await sha256Hex(content),
      source: "operator",
      reason: "cite tickets",
      actor: "op_seed",
      parentVersion: 1,
    },
    new Date(AT),
  );
  await db.batch([v2.insert, v2.head]);
  const [head, ...upserts] = playbookWrite(
    db,
    id,
    0,
    [
      entry(id, "pbe_cite", "Cite the ticket number in the first line of every status update."),
      entry(id, "pbe_refund", "Quote the refund policy section number whenever a customer asks about refunds."),
    ],
    new Date(AT),
  );
  await db.batch([head!, ...upserts]);
  await db.insert(aeeRejections).values([
    { agentId: id, roundId: `rnd_${id}`, attempt: 1, stage: "gate", gate: "g_contract", reason: "h1_eval_leak", detail: "", at: AT },
    { agentId: id, roundId: `rnd_${id}`, attempt: 2, stage: "gate", gate: "g_contract", reason: "h2_vacuous", detail: "", at: AT },
  ]);
}

describe("the learning tab", () => {
  it("shows the playbook entries, the SOUL versions with their diff and the rejections per gate; a viewer gets no retire form", async () => {
    await learner("learn-view");
    const viewer = await login(await createOperator("viewer", "learn-viewer"));
    const page = await web("/console/employees/learn-view/learning", { cookie: viewer.cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain("Cite the ticket number in the first line of every status update.");
    expect(page.text).toMatch(/id="entry-pbe_cite" class="card" data-state="active"/);
    // Net score over the kept applications: two successes and one failure.
    expect(page.text).toMatch(/net score <span class="num">1<\/span> over 3 applications/);
    expect(page.text).toContain("Retiring an entry needs the manager role.");
    expect(page.text).not.toContain("/playbook/pbe_cite/retire");
    // SOUL version 2 is current, with the diff from version 1; version 1 with its diff from nothing.
    expect(page.text).toMatch(/id="soul-v2" class="card" data-version="2"/);
    expect(page.text).toContain('<span class="d-add">+Always cite the ticket number.\n</span>');
    expect(page.text).toContain("Diff from version 1");
    expect(page.text).toContain("Diff from nothing");
    // Rejection telemetry: a chart (drawn by the script) and the table that carries the same numbers.
    expect(page.text).toContain('id="rejection-chart" data-chart="bars"');
    expect(page.text).toMatch(/<th scope="row">g_contract<\/th><td>2<\/td><td>h1_eval_leak 1, h2_vacuous 1<\/td>/);
    expect(page.text).toContain("Rejected candidates per gate (2 in all)");

    // The viewer's retire, with its own valid form token, is refused by the server.
    const refused = await web("/console/employees/learn-view/playbook/pbe_cite/retire", {
      cookie: viewer.cookie,
      form: { reason: "outdated", _csrf: viewer.csrf },
    });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('data-code="forbidden"');
    expect((await call("/v1/employees/learn-view/playbook")).body.entries.map((e: { state: string }) => e.state)).toEqual([
      "active",
      "active",
    ]);
  });

  it("lets a manager retire an entry with a reason, the refusals shown inline and changing nothing", async () => {
    await learner("learn-retire");
    const mgr = await login(await createOperator("manager", "learn-manager"));
    const path = "/console/employees/learn-retire/playbook/pbe_refund/retire";
    const before = await web("/console/employees/learn-retire/learning", { cookie: mgr.cookie });
    expect(before.text).toContain(`action="${path}"`);

    const noToken = await web(path, { cookie: mgr.cookie, form: { reason: "outdated" } });
    expect(noToken.status).toBe(403);
    expect(noToken.text).toContain('data-code="csrf_failed"');
    const blank = await web(path, { cookie: mgr.cookie, form: { reason: " ", _csrf: mgr.csrf } });
    expect(blank.status).toBe(422);
    expect(blank.text).toContain('data-code="validation_failed"');
    expect(blank.text).toContain('id="retire-pbe_refund" name="reason" required="" maxlength="200" value=" " aria-invalid="true"');
    const unknown = await web("/console/employees/learn-retire/playbook/pbe_nope/retire", {
      cookie: mgr.cookie,
      form: { reason: "outdated", _csrf: mgr.csrf },
    });
    expect(unknown.status).toBe(404);
    expect((await call("/v1/employees/learn-retire/playbook")).body.entries.map((e: { state: string }) => e.state)).toEqual([
      "active",
      "active",
    ]);

    const done = await web(path, { cookie: mgr.cookie, form: { reason: "the policy moved", _csrf: mgr.csrf } });
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe("/console/employees/learn-retire/learning#entry-pbe_refund");
    const listing = (await call("/v1/employees/learn-retire/playbook")).body;
    expect(listing.entries.find((e: { entry_id: string }) => e.entry_id === "pbe_refund")).toMatchObject({
      state: "retired",
      state_reason: "the policy moved",
    });
    const after = await web("/console/employees/learn-retire/learning", { cookie: mgr.cookie });
    expect(after.text).toMatch(/id="entry-pbe_refund" class="card" data-state="retired"/);
    expect(after.text).not.toContain(`action="${path}"`);
    // Retiring a retired entry: 409, shown on the entry.
    const again = await web(path, { cookie: mgr.cookie, form: { reason: "again", _csrf: mgr.csrf } });
    expect(again.status).toBe(409);
    expect(again.text).toContain('data-code="conflict"');
  });

  it("exports the playbook as GEP genes, the same document the API exports", async () => {
    await learner("learn-export");
    const viewer = await login(await createOperator("viewer", "learn-exporter"));
    const res = await web("/console/employees/learn-export/playbook/export", { cookie: viewer.cookie });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="learn-export-playbook-genes.json"');
    const exported = JSON.parse(res.text);
    const api = (await call("/v1/employees/learn-export/playbook?format=gene")).body;
    expect(exported).toMatchObject({ format: "gep-gene", agent_id: "learn-export" });
    expect(exported.genes).toEqual(api.genes);
    expect(exported.genes).toHaveLength(2);
    // Without a session: to the login form, like every console page.
    expect((await web("/console/employees/learn-export/playbook/export")).status).toBe(303);
  });

  it("shows an employee with no evolution yet as such, not as zeros", async () => {
    await putEmployee("learn-fresh");
    const viewer = await login(await createOperator("viewer", "learn-fresh-viewer"));
    const page = await web("/console/employees/learn-fresh/learning", { cookie: viewer.cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain("No playbook entry yet");
    expect(page.text).toContain("No candidate has been rejected yet.");
    expect(page.text).toContain("No round yet.");
    expect(page.text).not.toContain('id="rejection-chart"');
  });
});
