import { describe, expect, it } from "vitest";
import { call, createOperator } from "../../factories";
import { eventsOf, putEmployee } from "../../factories/org";

const body = (fields: Record<string, unknown> = {}) => ({
  name: "Ada",
  runtime: "claude",
  model: { preferred: "claude-sonnet-5-5" },
  ...fields,
});

describe("employees", () => {
  it("creates an employee and shows the effective config with the defaults that apply", async () => {
    const res = await call("/v1/employees/ada", { method: "PUT", body: body({ model: { preferred: "claude-opus-5-5", effort: "high" } }) });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ employee_id: "ada", created: true, reports_to: null, revision: 1 });
    const got = (await call("/v1/employees/ada")).body;
    expect(got.effective).toEqual({
      runtime: "claude",
      model: { preferred: "claude-opus-5-5", effort: "high" },
      capabilities: {
        allowed_tools: ["Read", "Write", "Edit", "Bash", "Glob", "Grep", "TodoWrite", "WebFetch", "WebSearch", "mcp__crewplane__*"],
        allowed_tools_source: "default",
        denied_tools: [],
      },
      sandbox_enabled: false,
      config: {},
      // Team-as-Agent: with no [team] anywhere every role cascades to the employee's own model, so
      // the verifier would share the executor's family and no team would form.
      team: expect.objectContaining({ enabled: true, valid: false, refusal: expect.objectContaining({ reason: "verifier_same_family" }) }),
    });
    expect(got.capabilities).toBeUndefined();
    expect(got.sandbox_enabled).toBeUndefined();
  });

  it("stores capabilities and sandbox_enabled as given and replaces the whole employee on PUT", async () => {
    await putEmployee("bo", { capabilities: { allowed_tools: ["Read", "Grep"], denied_tools: ["Bash"] }, sandbox_enabled: true });
    let got = (await call("/v1/employees/bo")).body;
    expect(got).toMatchObject({ capabilities: { allowed_tools: ["Read", "Grep"], denied_tools: ["Bash"] }, sandbox_enabled: true });
    expect(got.effective.capabilities).toEqual({
      allowed_tools: ["Read", "Grep"],
      allowed_tools_source: "employee",
      denied_tools: ["Bash"],
    });
    const again = await call("/v1/employees/bo", { method: "PUT", body: body({ name: "Bo" }) });
    expect(again.body).toMatchObject({ created: false, revision: 2, name: "Bo" });
    got = (await call("/v1/employees/bo")).body;
    expect(got.capabilities).toBeUndefined();
    expect(got.effective.sandbox_enabled).toBe(false);
    expect((await eventsOf("employee.")).filter((e) => e.subject === "bo").map((e) => e.type)).toEqual([
      "employee.created",
      "employee.updated",
    ]);
  });

  it("builds a forest: reports_to lists direct reports, an unknown parent is 422", async () => {
    await putEmployee("boss");
    await putEmployee("w1", { reports_to: "boss" });
    await putEmployee("w2", { reports_to: "boss" });
    expect((await call("/v1/employees/boss")).body.direct_reports).toEqual(["w1", "w2"]);
    const res = await call("/v1/employees/w3", { method: "PUT", body: body({ reports_to: "ghost" }) });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ path: "reports_to", message: "unknown employee 'ghost'" }]);
    expect((await call("/v1/employees/w3")).status).toBe(404);
  });

  it("refuses a cycle (422) and leaves the hierarchy as it was", async () => {
    await putEmployee("c1");
    await putEmployee("c2", { reports_to: "c1" });
    await putEmployee("c3", { reports_to: "c2" });
    const cycle = await call("/v1/employees/c1", { method: "PUT", body: body({ reports_to: "c3" }) });
    expect(cycle.status).toBe(422);
    expect(cycle.body.errors[0].message).toContain("cycle");
    const self = await call("/v1/employees/c1", { method: "PUT", body: body({ reports_to: "c1" }) });
    expect(self.status).toBe(422);
    expect((await call("/v1/employees/c1")).body.reports_to).toBeNull();
  });

  it("never stores a cycle when two PUTs that would close one race", async () => {
    for (let round = 0; round < 5; round++) {
      const [a, b] = [`ra${round}`, `rb${round}`];
      await putEmployee(a);
      await putEmployee(b);
      const results = await Promise.all([
        call(`/v1/employees/${a}`, { method: "PUT", body: body({ reports_to: b }) }),
        call(`/v1/employees/${b}`, { method: "PUT", body: body({ reports_to: a }) }),
      ]);
      expect(results.filter((r) => r.status === 200).length).toBeLessThanOrEqual(1);
      const [ea, eb] = [(await call(`/v1/employees/${a}`)).body, (await call(`/v1/employees/${b}`)).body];
      expect(ea.reports_to === b && eb.reports_to === a).toBe(false);
    }
  });

  it("validates the body strictly (the team field's shape, labels, runtimes) and changes nothing on 422", async () => {
    for (const bad of [
      body({ team: { enabled: "yes" } }),
      body({ team: { roles: { planner: { vendor: "x" } } } }),
      body({ runtime: "gpt" }),
      body({ name: "bad\u202Ename" }),
      body({ model: { preferred: "x", effort: "extreme" } }),
      body({ capabilities: { allowed_tools: ["Read"], surprise: 1 } }),
    ]) {
      const res = await call("/v1/employees/val", { method: "PUT", body: bad });
      expect(res.status, JSON.stringify(bad)).toBe(422);
    }
    expect((await call("/v1/employees/Not_Valid!", { method: "PUT", body: body() })).status).toBe(422);
    expect((await call("/v1/employees/val")).status).toBe(404);
  });

  it("lets managers write and viewers read", async () => {
    const viewer = await createOperator("viewer", "v");
    const mgr = await createOperator("manager", "m");
    expect((await call("/v1/employees/perm", { method: "PUT", token: viewer, body: body() })).status).toBe(403);
    expect((await call("/v1/employees/perm", { method: "PUT", token: mgr, body: body() })).status).toBe(200);
    expect((await call("/v1/employees/perm", { token: viewer })).status).toBe(200);
  });

  it("lists employees by id, paged", async () => {
    for (const id of ["pg-a", "pg-b", "pg-c"]) await putEmployee(id);
    const first = await call("/v1/employees?limit=2&cursor=pg-");
    expect(first.body.employees.map((e: { employee_id: string }) => e.employee_id)).toEqual(["pg-a", "pg-b"]);
    const next = await call(`/v1/employees?limit=2&cursor=${first.body.next_cursor}`);
    expect(next.body.employees[0].employee_id).toBe("pg-c");
  });
});
