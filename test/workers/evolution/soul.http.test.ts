import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { mintEmployeeToken } from "../../../src/jobs/employee-token";
import { sha256Hex } from "../../../src/lib/crypto";
import { call, createOperator } from "../../factories";
import { eventsOf } from "../../factories/team";

/** The SOUL as Worker state through the API (issue 23 items 1 and 6): read, operator edits, history with diffs, who may write. */
async function putEmployee(id: string, fields: Record<string, unknown> = {}) {
  const res = await call(`/v1/employees/${id}`, {
    method: "PUT",
    body: { name: `Employee ${id}`, runtime: "claude", model: { preferred: "claude-sonnet-4-6" }, ...fields },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/** The token of one of the employee's own runs (what its MCP server calls the Worker with). */
async function employeeToken(employeeId: string): Promise<string> {
  const cred = await mintEmployeeToken(
    getDb(env.DB),
    { employee_id: employeeId, job_id: `job_${crypto.randomUUID().replaceAll("-", "")}` },
    new Date(Date.now() + 600_000),
    new Date(),
  );
  await cred.insert;
  return cred.token;
}

const put = (id: string, body: Record<string, unknown>, token?: string) =>
  call(`/v1/employees/${id}/soul`, { method: "PUT", body, ...(token ? { token } : {}) });

describe("GET /v1/employees/:id/soul", () => {
  it("bootstraps version 1 from the employee's identity, with its fingerprint, read-only to the employee on the AEE path", async () => {
    await putEmployee("soul-read");
    const res = await call("/v1/employees/soul-read/soul");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      employee_id: "soul-read",
      version: 1,
      content: "You are Employee soul-read.",
      sha256: await sha256Hex("You are Employee soul-read."),
      source: "bootstrap",
      read_only_to_employee: true,
      path: "aee",
    });
    // Reading again writes nothing new.
    expect((await call("/v1/employees/soul-read/soul/versions")).body.versions).toHaveLength(1);
  });

  it("is writable to the employee's runs only on the legacy path or with can_modify_own_soul", async () => {
    await putEmployee("soul-legacy", { evolution: { legacy_soul_evolution: true } });
    expect((await call("/v1/employees/soul-legacy/soul")).body).toMatchObject({ read_only_to_employee: false, path: "legacy" });
    await putEmployee("soul-own", { evolution: { can_modify_own_soul: true } });
    expect((await call("/v1/employees/soul-own/soul")).body).toMatchObject({ read_only_to_employee: false, path: "aee" });
  });

  it("answers 404 for an unknown employee", async () => {
    expect((await call("/v1/employees/nobody-here/soul")).status).toBe(404);
    expect((await call("/v1/employees/nobody-here/soul/versions")).status).toBe(404);
  });

  it("lets the employee's own run read its SOUL, and no other employee's", async () => {
    await putEmployee("soul-self");
    await putEmployee("soul-other");
    const token = await employeeToken("soul-self");
    expect((await call("/v1/employees/soul-self/soul", { token })).status).toBe(200);
    expect((await call("/v1/employees/soul-other/soul", { token })).status).toBe(403);
    // The history is an operator's view.
    expect((await call("/v1/employees/soul-self/soul/versions", { token })).status).toBe(403);
  });
});

describe("PUT /v1/employees/:id/soul", () => {
  it("writes a new version on the expected one, records it before the head moves, and announces it", async () => {
    await putEmployee("soul-edit");
    const res = await put("soul-edit", { content: "You are Ada.\n\nAnswer in British English.", expected_version: 1, reason: "persona" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      version: 2,
      changed: true,
      source: "operator",
      created_by: expect.any(String),
      sha256: await sha256Hex("You are Ada.\n\nAnswer in British English."),
    });
    const head = await env.DB.prepare("SELECT version, sha256 FROM soul_heads WHERE employee_id = ?").bind("soul-edit").first<any>();
    expect(head).toEqual({ version: 2, sha256: res.body.sha256 });
    const [event] = await eventsOf("evolution.soul_updated", "soul-edit");
    expect(event!.payload).toMatchObject({ version: 2, parent_version: 1, source: "operator", reason: "persona", sha256: res.body.sha256 });
  });

  it("refuses a stale expected_version with 409 and changes nothing", async () => {
    await putEmployee("soul-stale");
    expect((await put("soul-stale", { content: "First edit.", expected_version: 1 })).status).toBe(200);
    const res = await put("soul-stale", { content: "Edit made on an old read.", expected_version: 1 });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ reason: "stale_soul_version", expected_version: 1, current_version: 2 });
    expect((await call("/v1/employees/soul-stale/soul")).body).toMatchObject({ version: 2, content: "First edit." });
  });

  it("writes nothing for the same text again", async () => {
    await putEmployee("soul-same");
    const res = await put("soul-same", { content: "You are Employee soul-same.", expected_version: 1 });
    expect(res.body).toMatchObject({ version: 1, changed: false });
    expect(await eventsOf("evolution.soul_updated", "soul-same")).toHaveLength(0);
  });

  it("refuses blank text, control and bidi override characters, more than 50 KB and unknown keys with 422", async () => {
    await putEmployee("soul-bad");
    for (const content of ["   \n", "You are \u0007Ada.", "You are \u202EAda.", "x".repeat(50 * 1024 + 1)]) {
      expect((await put("soul-bad", { content, expected_version: 1 })).status, JSON.stringify(content.slice(0, 20))).toBe(422);
    }
    expect((await put("soul-bad", { content: "x".repeat(50 * 1024), expected_version: 1 })).status).toBe(200);
    expect((await put("soul-bad", { content: "ok", expected_version: 2, version: 3 })).status).toBe(422);
  });

  it("is an operator's (manager) write: a viewer, the employee's own run and another's are refused", async () => {
    await putEmployee("soul-who");
    const viewer = await createOperator("viewer", "soul-viewer");
    const manager = await createOperator("manager", "soul-manager");
    const self = await employeeToken("soul-who");
    const body = { content: "Rewritten by someone.", expected_version: 1 };
    expect((await put("soul-who", body, viewer)).status).toBe(403);
    // Seed 003 §12.2: the employee's own run never writes its SOUL, whatever its evolution path.
    expect((await put("soul-who", body, self)).status).toBe(403);
    expect((await call("/v1/employees/soul-who/soul")).body.version).toBe(1);
    expect((await put("soul-who", body, manager)).status).toBe(200);
  });
});

describe("GET /v1/employees/:id/soul/versions", () => {
  it("lists the kept versions newest first, each with the unified diff from the one before", async () => {
    await putEmployee("soul-hist");
    await put("soul-hist", { content: "You are Employee soul-hist.\nBe brief.", expected_version: 1 });
    await put("soul-hist", { content: "You are Employee soul-hist.\nBe brief and kind.", expected_version: 2 });
    const res = await call("/v1/employees/soul-hist/soul/versions");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ current_version: 3, max_backups: 10 });
    expect(res.body.versions.map((v: any) => [v.version, v.current, v.diff_from])).toEqual([
      [3, true, 2],
      [2, false, 1],
      [1, false, 0],
    ]);
    const [v3, , v1] = res.body.versions;
    expect(v3.diff).toContain("--- SOUL.md@v2");
    expect(v3.diff).toContain("+++ SOUL.md@v3");
    expect(v3.diff).toContain("-Be brief.");
    expect(v3.diff).toContain("+Be brief and kind.");
    expect(v1.diff).toContain("+You are Employee soul-hist.");
    const one = await call("/v1/employees/soul-hist/soul/versions/2");
    expect(one.body).toMatchObject({ version: 2, content: "You are Employee soul-hist.\nBe brief.", source: "operator" });
  });

  it("keeps at most 10 backups besides the current version; a pruned one is 404 and numbers are never reused", async () => {
    await putEmployee("soul-prune");
    for (let v = 1; v <= 13; v++) expect((await put("soul-prune", { content: `Edit number ${v}.`, expected_version: v })).status).toBe(200);
    const res = await call("/v1/employees/soul-prune/soul/versions");
    expect(res.body.current_version).toBe(14);
    expect(res.body.versions.map((v: any) => v.version)).toEqual([14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4]);
    // The oldest kept version has no kept predecessor to diff against.
    expect(res.body.versions.at(-1)).toMatchObject({ version: 4, diff_from: null, diff: null });
    expect((await call("/v1/employees/soul-prune/soul/versions/3")).status).toBe(404);
    expect((await put("soul-prune", { content: "One more.", expected_version: 14 })).body.version).toBe(15);
  });
});

describe("the employee's evolution switches", () => {
  it("lets only an operator move the employee onto the legacy SOUL path", async () => {
    await putEmployee("soul-switch");
    const self = await employeeToken("soul-switch");
    const refused = await call("/v1/employees/soul-switch/evolution/toggle", {
      token: self,
      body: { key: "legacy_soul_evolution", value: true },
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ reason: "soul_path_operator_only" });
    // Its other flags stay its own (seed 003 §7).
    expect(
      (await call("/v1/employees/soul-switch/evolution/toggle", { token: self, body: { key: "gvu_enabled", value: true } })).status,
    ).toBe(200);
    expect((await call("/v1/employees/soul-switch/evolution/toggle", { body: { key: "legacy_soul_evolution", value: true } })).status).toBe(
      200,
    );
    const evo = (await call("/v1/employees/soul-switch/evolution")).body;
    expect(evo).toMatchObject({ path: "legacy", soul: { version: 1, source: "bootstrap", read_only_to_employee: false }, gvu_rounds: [] });
  });
});
