import { describe, expect, it } from "vitest";
import { call, createOperator } from "../../factories";
import { putTeamConfig } from "../../factories/team";

describe("PUT /v1/config/team", () => {
  it("shows the built-in defaults when [team] was never written, with roles cascading to each employee", async () => {
    const res = await call("/v1/config/team");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ enabled: true, executor_fanout: 1, gate: "auto", stored: {}, reports: [] });
    expect(res.body.roles.executor).toEqual({ cascades_to: "employee_model" });
  });

  it("stores what was written (unset stays unset) and answers with the effective values", async () => {
    const body = await putTeamConfig({ enabled: false, roles: { executor: { runtime: "codex", model: "gpt-5.5" } } });
    expect(body).toMatchObject({ enabled: false, executor_fanout: 1, gate: "auto" });
    expect(body.stored).toEqual({ enabled: false, roles: { executor: { runtime: "codex", model: "gpt-5.5" } } });
    expect(body.roles.executor).toEqual({ runtime: "codex", model: "gpt-5.5" });
    expect((await call("/v1/config/team")).body.stored).toEqual(body.stored);
  });

  it("clamps an out-of-range executor_fanout and falls back to auto for an unknown gate, reporting both instead of refusing", async () => {
    const body = await putTeamConfig({ executor_fanout: 7, gate: "yolo" });
    expect(body).toMatchObject({ executor_fanout: 3, gate: "auto", stored: { executor_fanout: 7, gate: "yolo" } });
    expect(body.reports).toEqual(
      expect.arrayContaining([
        { token: "executor_fanout_clamped", value: 7, clamped_to: 3, level: "global" },
        { token: "gate_unknown_fallback_auto", value: "yolo", level: "global" },
      ]),
    );
  });

  it("rejects unknown keys and wrong types with 422 and keeps the previous section", async () => {
    await putTeamConfig({ executor_fanout: 2 });
    for (const bad of [
      { enabled: "yes" },
      { roles: { executor: { runtime: "codex", sandbox: true } } },
      { roles: { judge: {} } },
      { executor_fanout: 1.5 },
      { roles: { planner: { model: "claude\u202e-x" } } },
    ]) {
      const res = await call("/v1/config/team", { method: "PUT", body: bad });
      expect(res.status, JSON.stringify(bad)).toBe(422);
      expect(res.body.code).toBe("validation_failed");
    }
    expect((await call("/v1/config/team")).body.stored).toEqual({ executor_fanout: 2 });
  });

  it("is readable by a viewer and writable only by an admin", async () => {
    const viewer = await createOperator("viewer");
    const manager = await createOperator("manager");
    expect((await call("/v1/config/team", { token: viewer })).status).toBe(200);
    expect((await call("/v1/config/team", { method: "PUT", token: manager, body: {} })).status).toBe(403);
  });
});
