/** team_stage payloads as the Worker sends them (src/jobs/team-stage-job.ts), for runner tests. */
export const MODELS = { claude: "claude-sonnet-5-5", codex: "gpt-5.5", antigravity: "gemini-3.7-flash", grok: "grok-4" } as const;
export const STAGE_ROLE = { plan: "planner", execute: "executor", repair: "executor", verify: "verifier", synthesize: "utility" } as const;
export const STAGE_PROMPT = {
  plan: "# Role: planner\nDecompose the goal.\n\n## Goal\nWrite the onboarding notes",
  execute: "# Role: executor\nDo the subtask(s) below in the employee's workspace.",
};

export interface StagePayloadOptions {
  token: string;
  runtime?: keyof typeof MODELS;
  stage?: keyof typeof STAGE_ROLE;
  prompt?: string;
  timeoutMs?: number;
  employee?: Record<string, unknown>;
  outputSchema?: boolean;
  stageId?: string;
  expiresAt?: string;
}

export function stagePayload(o: StagePayloadOptions) {
  const runtime = o.runtime ?? "claude";
  const stage = o.stage ?? "plan";
  return {
    runtime,
    model: MODELS[runtime],
    effort: "high",
    effort_argv: ["--effort", "high"],
    role: STAGE_ROLE[stage],
    stage,
    task_id: "task_1",
    round_id: "trnd_1",
    round: 1,
    stage_id: o.stageId ?? `stg_${stage}`,
    employee_id: "emp_1",
    member_token: o.token,
    member_token_expires_at: o.expiresAt ?? new Date(Date.now() + 3_600_000).toISOString(),
    input: {
      prompt: o.prompt ?? (stage === "plan" ? STAGE_PROMPT.plan : STAGE_PROMPT.execute),
      protected_marker: `<!-- crewplane-protected:${"0".repeat(64)} -->`,
      packet_ids: [],
      ...(o.outputSchema ? { output_schema: "verdict" } : {}),
    },
    timeout_ms: o.timeoutMs ?? 30_000,
    ...(o.employee ? { employee: o.employee } : {}),
  };
}
