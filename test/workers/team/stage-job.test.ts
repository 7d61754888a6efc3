import { describe, expect, it } from "vitest";
import { dispatchMessage } from "../../../src/queues/dispatch-message";
import { newProtectedMarker } from "../../../src/team/render";
import { STAGE_PROMPT_MAX_BYTES, teamStagePayload, teamStageResult } from "../../../src/jobs/team-stage-job";

function payload(overrides: Record<string, unknown> = {}) {
  return {
    runtime: "codex",
    model: "gpt-5.5",
    effort: "medium",
    effort_argv: ["-c", 'model_reasoning_effort="medium"'],
    role: "executor",
    stage: "execute",
    task_id: "task_1",
    round_id: "trnd_1",
    round: 1,
    stage_id: "stg_1",
    employee_id: "emp_1",
    member_token: `mbr_${"a".repeat(16)}.${"b".repeat(64)}`,
    member_token_expires_at: new Date().toISOString(),
    input: { prompt: "do the thing", protected_marker: newProtectedMarker(), packet_ids: ["a"] },
    ...overrides,
  };
}

describe("the team_stage job kind", () => {
  it("is a dispatch message kind with the stage's runtime, model, effort, role, ids, member token and input", () => {
    const msg = {
      job_id: "job_0123456789abcdef",
      kind: "team_stage",
      payload: payload(),
      owner: { kind: "team_round", id: "trnd_1" },
      enqueued_at: new Date().toISOString(),
    };
    const parsed = dispatchMessage.safeParse(msg);
    expect(parsed.success).toBe(true);
    expect(parsed.data?.payload).toMatchObject({ timeout_ms: 1_800_000 });
  });

  it("allows only team runtimes: never offline or a fallback", () => {
    expect(teamStagePayload.safeParse(payload({ runtime: "offline" })).success).toBe(false);
    expect(teamStagePayload.safeParse(payload({ runtime: "openai_compat" })).success).toBe(false);
  });

  it("keeps the prompt and the whole payload within the queue's byte limits", () => {
    const bigPrompt = "検".repeat(Math.ceil(STAGE_PROMPT_MAX_BYTES / 3) + 1);
    const r = teamStagePayload.safeParse(payload({ input: { prompt: bigPrompt, protected_marker: newProtectedMarker(), packet_ids: [] } }));
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(["input", "prompt"]);
  });

  it("requires a real protected marker", () => {
    expect(
      teamStagePayload.safeParse(
        payload({ input: { prompt: "x", protected_marker: "<!-- crewplane-protected:guess -->", packet_ids: [] } }),
      ).success,
    ).toBe(false);
  });
});

describe("a team_stage result", () => {
  it("reads what the runner measured and leaves the rest absent", () => {
    const r = teamStageResult.parse({ text: "ok", runtime: "codex", verdict: "PASS", extra_field_from_a_newer_runner: 1 });
    expect(r).toMatchObject({ runtime: "codex", verdict: "PASS" });
    expect(r).not.toHaveProperty("usage");
  });

  it("refuses made-up shapes instead of guessing (negative counts, an unknown verdict, an unknown receipt state)", () => {
    expect(teamStageResult.safeParse({ usage: { input_tokens: -1 } }).success).toBe(false);
    expect(teamStageResult.safeParse({ verdict: "MAYBE" }).success).toBe(false);
    expect(teamStageResult.safeParse({ artifact_receipts: [{ path: "a", state: "probably" }] }).success).toBe(false);
  });
});
