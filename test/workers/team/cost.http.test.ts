import { describe, expect, it } from "vitest";
import { appendRoleTurn } from "../../../src/team/ledger";
import { call, createOperator } from "../../factories";
import { db, newTaskId } from "../../factories/team";

const turn = (taskId: string, stageId: string, extra: Record<string, unknown> = {}) => ({
  task_id: taskId,
  round: 1,
  role: "executor",
  stage: "execute",
  stage_id: stageId,
  requested_runtime: "codex",
  request_model: "gpt-5.5",
  packets: [],
  evidence_grade: "none" as const,
  outcome: "completed",
  config_fingerprint_hard: "0".repeat(16),
  ...extra,
});

describe("GET /v1/cost/by-role and GET /v1/tasks/:id/roles", () => {
  it("sums across tasks without episode_id, and only that task's spend with it", async () => {
    const [t1, t2] = [newTaskId(), newTaskId()];
    await appendRoleTurn(db(), turn(t1, `stg_${t1}`, { usage: { input_tokens: 10 }, usage_legs: 1 }), new Date());
    await appendRoleTurn(db(), turn(t2, `stg_${t2}`, { usage: { input_tokens: 5 }, usage_legs: 1 }), new Date());
    const viewer = await createOperator("viewer");
    const all = await call("/v1/cost/by-role", { token: viewer });
    expect(all.status).toBe(200);
    expect(all.body.by_role).toEqual([expect.objectContaining({ role: "executor", stages: 2, usage: { input_tokens: 15 } })]);
    const one = await call(`/v1/cost/by-role?episode_id=${t1}`, { token: viewer });
    expect(one.body).toMatchObject({ episode_id: t1, by_role: [{ stages: 1, usage: { input_tokens: 10 } }] });
    expect((await call(`/v1/cost/by-role?episode_id=${"x".repeat(65)}`)).status).toBe(422);
    expect((await call("/v1/cost/by-role", { token: null })).status).toBe(401);
  });

  it("shows a task's role turns with a verified chain", async () => {
    const t = newTaskId();
    await appendRoleTurn(db(), turn(t, `stg_a_${t}`), new Date());
    await appendRoleTurn(db(), turn(t, `stg_b_${t}`, { role: "verifier", stage: "verify" }), new Date());
    const res = await call(`/v1/tasks/${t}/roles`);
    expect(res.body).toMatchObject({
      task_id: t,
      chain: { ok: true },
      role_turns: [{ role: "executor", prev_hash: "genesis" }, { role: "verifier" }],
    });
    expect(res.body.role_turns[0]).not.toHaveProperty("usage");
  });
});
