import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  appendRoleTurn,
  classifyFailure,
  configFingerprintHard,
  costByRole,
  evidenceGrade,
  listRoleTurns,
  roleTurnView,
  sumUsageLegs,
  verifyChain,
  type RoleTurnInput,
} from "../../../src/team/ledger";
import { randomHex } from "../../../src/lib/ids";
import { db, newTaskId } from "../../factories/team";

function turn(taskId: string, overrides: Partial<RoleTurnInput> = {}): RoleTurnInput {
  return {
    task_id: taskId,
    round: 1,
    role: "executor",
    stage: "execute",
    stage_id: `stg_${randomHex(8)}`,
    requested_runtime: "codex",
    request_model: "gpt-5.5",
    runtime_used: "codex",
    response_model: "gpt-5.5",
    packets: ["p1"],
    evidence_grade: "full",
    outcome: "completed",
    config_fingerprint_hard: "f".repeat(16),
    ...overrides,
  };
}

describe("usage summed over legs", () => {
  it("sums each dimension over the legs that measured it, keeps a one-leg dimension as is, and counts contributing legs", () => {
    expect(
      sumUsageLegs([{ input_tokens: 100, output_tokens: 10 }, undefined, { input_tokens: 50, cache_read_input_tokens: 7 }, {}]),
    ).toEqual({ usage: { input_tokens: 150, output_tokens: 10, cache_read_input_tokens: 7 }, usage_legs: 2 });
  });

  it("leaves usage and usage_legs absent when no leg reported anything", () => {
    expect(sumUsageLegs([undefined, {}])).toEqual({});
    expect(sumUsageLegs([])).toEqual({});
  });

  it("saturates instead of overflowing", () => {
    expect(sumUsageLegs([{ input_tokens: Number.MAX_SAFE_INTEGER }, { input_tokens: 5 }]).usage?.input_tokens).toBe(
      Number.MAX_SAFE_INTEGER,
    );
  });
});

describe("ledger classification", () => {
  it("grades evidence from what was observed: native events full, MCP calls only mcp_only, nothing none", () => {
    expect(evidenceGrade({ native_tool_events: 3, mcp_calls: 1 })).toBe("full");
    expect(evidenceGrade({ mcp_calls: 2 })).toBe("mcp_only");
    expect(evidenceGrade(undefined)).toBe("none");
  });

  it("places failures on an edge and a side, and calls an unrecognised one unknown", () => {
    expect(classifyFailure("not_logged_in")).toEqual({ failure_edge: "spawn", fault_side: "runtime" });
    expect(classifyFailure("dispatch_failed")).toEqual({ failure_edge: "dispatch", fault_side: "platform" });
    expect(classifyFailure("lease_expired")).toEqual({ failure_edge: "lease", fault_side: "unknown" });
    expect(classifyFailure("result_too_large")).toEqual({ failure_edge: "run", fault_side: "platform" });
    // The vendor's API unavailable (runner's api_unavailable): the runtime's side, not the member's.
    expect(classifyFailure("api_unavailable")).toEqual({ failure_edge: "run", fault_side: "runtime" });
    expect(classifyFailure("something_new")).toEqual({ failure_edge: null, fault_side: "unknown" });
  });

  it("changes the hard fingerprint exactly when the role's runtime or model changes", async () => {
    const a = await configFingerprintHard("executor", "codex", "gpt-5.5");
    expect(await configFingerprintHard("executor", "codex", "gpt-5.5")).toBe(a);
    expect(await configFingerprintHard("executor", "codex", "gpt-5.6")).not.toBe(a);
    expect(await configFingerprintHard("executor", "claude", "gpt-5.5")).not.toBe(a);
  });
});

describe("role_turns", () => {
  it("chains a task's rows by hash, starting from genesis", async () => {
    const taskId = newTaskId();
    await appendRoleTurn(db(), turn(taskId, { role: "planner", stage: "plan" }), new Date());
    await appendRoleTurn(db(), turn(taskId), new Date());
    const rows = await listRoleTurns(db(), taskId);
    expect(rows.map((r) => r.prevHash)).toEqual(["genesis", rows[0]!.hash]);
    expect(await verifyChain(rows)).toEqual({ ok: true });
  });

  it("keeps one unforked chain when 20 stages of a task append at once", async () => {
    const taskId = newTaskId();
    await Promise.all(Array.from({ length: 20 }, (_, i) => appendRoleTurn(db(), turn(taskId, { round: 1 + (i % 3) }), new Date())));
    const rows = await listRoleTurns(db(), taskId);
    expect(rows).toHaveLength(20);
    expect(new Set(rows.map((r) => r.prevHash)).size).toBe(20);
    expect(await verifyChain(rows)).toEqual({ ok: true });
  });

  it("appends a stage once however often its end is reported", async () => {
    const taskId = newTaskId();
    const input = turn(taskId);
    const [a, b] = await Promise.all([appendRoleTurn(db(), input, new Date()), appendRoleTurn(db(), input, new Date())]);
    expect(a.seq).toBe(b.seq);
    expect(await listRoleTurns(db(), taskId)).toHaveLength(1);
  });

  it("refuses to update or delete a row (append-only)", async () => {
    const taskId = newTaskId();
    await appendRoleTurn(db(), turn(taskId), new Date());
    await expect(env.DB.prepare("UPDATE role_turns SET outcome = 'completed' WHERE task_id = ?").bind(taskId).run()).rejects.toThrow(
      /append-only/,
    );
    await expect(env.DB.prepare("DELETE FROM role_turns WHERE task_id = ?").bind(taskId).run()).rejects.toThrow(/append-only/);
  });

  it("detects a row whose recorded content no longer matches its hash", async () => {
    const taskId = newTaskId();
    await appendRoleTurn(db(), turn(taskId), new Date());
    await appendRoleTurn(db(), turn(taskId), new Date());
    const rows = await listRoleTurns(db(), taskId);
    const tampered = rows.map((r, i) => (i === 0 ? { ...r, responseModel: "claude-sonnet-4-6" } : r));
    expect(await verifyChain(tampered)).toEqual({ ok: false, broken_at_seq: rows[0]!.seq });
  });

  it("stores requested and used runtime apart, flags a failover, and leaves the used fields empty for a stage that never spawned", async () => {
    const taskId = newTaskId();
    const failedOver = await appendRoleTurn(
      db(),
      turn(taskId, { runtime_used: "claude", response_model: "claude-sonnet-4-6" }),
      new Date(),
    );
    expect(roleTurnView(failedOver)).toMatchObject({ requested_runtime: "codex", runtime_used: "claude", failover: true });
    const never = await appendRoleTurn(
      db(),
      turn(taskId, {
        runtime_used: null,
        response_model: null,
        outcome: "failed",
        failure_edge: "dispatch",
        fault_side: "platform",
        evidence_grade: "none",
      }),
      new Date(),
    );
    expect(roleTurnView(never)).toMatchObject({
      runtime_used: null,
      response_model: null,
      provider: null,
      failover: null,
      outcome: "failed",
      fault_side: "platform",
    });
  });

  it("shows no usage for a stage that reported none, and the summed usage with usage_legs for one that did", async () => {
    const taskId = newTaskId();
    const unknown = roleTurnView(await appendRoleTurn(db(), turn(taskId), new Date()));
    expect(unknown).not.toHaveProperty("usage");
    expect(unknown).not.toHaveProperty("usage_legs");
    const known = roleTurnView(
      await appendRoleTurn(
        db(),
        turn(taskId, { ...sumUsageLegs([{ input_tokens: 10 }, { input_tokens: 5, output_tokens: 2 }]) }),
        new Date(),
      ),
    );
    expect(known).toMatchObject({ usage: { input_tokens: 15, output_tokens: 2 }, usage_legs: 2 });
    expect(known.usage).not.toHaveProperty("cache_read_input_tokens");
  });
});

describe("cost by role", () => {
  it("reports spend per role and model, unknown where nobody reported usage, and counts the stages that did not", async () => {
    const taskId = newTaskId();
    await appendRoleTurn(
      db(),
      turn(taskId, {
        role: "planner",
        stage: "plan",
        runtime_used: "claude",
        requested_runtime: "claude",
        request_model: "claude-fable-5-1",
        response_model: "claude-fable-5-1",
        usage: { input_tokens: 1000, output_tokens: 200 },
        usage_legs: 1,
        cost_usd: 0.5,
      }),
      new Date(),
    );
    await appendRoleTurn(db(), turn(taskId, { usage: { input_tokens: 300 }, usage_legs: 1 }), new Date());
    await appendRoleTurn(db(), turn(taskId), new Date());
    await appendRoleTurn(
      db(),
      turn(taskId, {
        role: "verifier",
        stage: "verify",
        requested_runtime: "antigravity",
        request_model: "gemini-3.7-flash",
        runtime_used: null,
        response_model: null,
      }),
      new Date(),
    );
    const rows = await costByRole(db(), taskId);
    expect(rows).toEqual([
      {
        role: "executor",
        runtime: "codex",
        model: "gpt-5.5",
        stages: 2,
        stages_with_usage: 1,
        stages_without_usage: 1,
        usage: { input_tokens: 300 },
        cost_usd: "unknown",
        stages_without_cost: 2,
      },
      {
        role: "planner",
        runtime: "claude",
        model: "claude-fable-5-1",
        stages: 1,
        stages_with_usage: 1,
        stages_without_usage: 0,
        usage: { input_tokens: 1000, output_tokens: 200 },
        cost_usd: 0.5,
        stages_without_cost: 0,
      },
      {
        role: "verifier",
        runtime: "antigravity",
        model: "gemini-3.7-flash",
        stages: 1,
        stages_with_usage: 0,
        stages_without_usage: 1,
        usage: "unknown",
        cost_usd: "unknown",
        stages_without_cost: 1,
      },
    ]);
  });
});
