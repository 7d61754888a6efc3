import { expect } from "vitest";
import type { TeamStagePayload } from "../../src/jobs/team-stage-job";
import { call } from "./index";

/** A leased team_stage job as the runner sees it. */
export interface LeasedStage {
  job_id: string;
  lease_id: string;
  attempt: number;
  kind: string;
  payload: TeamStagePayload;
}

const TEAM_RUNTIMES = ["claude", "codex", "antigravity", "grok"];

/**
 * A scripted runner: it leases over the real runner protocol (the jobs got there through the
 * dispatch queue and the RunnerInbox) and completes or fails them like a local-runner would, so a
 * round runs end to end through the Worker with test-chosen member behaviour.
 */
export async function leaseStages(
  runnerToken: string,
  want: number,
  opts: { taskId?: string; timeoutMs?: number } = {},
): Promise<LeasedStage[]> {
  const got: LeasedStage[] = [];
  const deadline = Date.now() + (opts.timeoutMs ?? 25_000);
  while (got.length < want && Date.now() < deadline) {
    const res = await call("/v1/runner/lease", {
      token: runnerToken,
      body: { capacity: want - got.length, wait_ms: 2_000, runtimes: TEAM_RUNTIMES },
    });
    expect(res.status).toBe(200);
    for (const job of res.body.jobs as LeasedStage[]) {
      // Stage jobs of rounds an earlier test left running still sit in the shared inbox (a round
      // withdraws them only when it ends): a runner would run them once, uselessly; this one fails them at once.
      if (opts.taskId && !jobOfTask(job, opts.taskId)) await failStage(runnerToken, job, "cli_error", "stale job of another test's round");
      else got.push(job);
    }
  }
  return got;
}

/** A stage job of the task: team stages and employee turns name it; the evaluator's prompt does. */
export function jobOfTask(job: { kind: string; payload: any }, taskId: string): boolean {
  if (job.kind === "utility") return typeof job.payload.prompt === "string" && job.payload.prompt.includes(`of task ${taskId} `);
  return job.payload.task_id === taskId;
}

/** The evaluator's answer for `of` criteria, with the 1-based ids in `unmet` judged unmet. */
export function acceptanceAnswer(of: number, unmet: number[] = []) {
  return JSON.stringify({
    criteria: Array.from({ length: of }, (_, i) => ({
      id: i + 1,
      met: !unmet.includes(i + 1),
      reason: unmet.includes(i + 1) ? "no evidence" : "seen",
    })),
  });
}

/** Leases the task's evaluator job (a `utility` job with the acceptance schema) and answers it. */
export async function runEvaluator(runnerToken: string, taskId: string, of: number, unmet: number[] = [], runtime = "claude") {
  const [job] = await leaseStages(runnerToken, 1, { taskId });
  expect(job, "no evaluator job").toBeDefined();
  expect(job!.kind).toBe("utility");
  expect((job!.payload as any).output_schema).toBe("acceptance");
  await completeStage(runnerToken, job!, { text: acceptanceAnswer(of, unmet), runtime });
  return job!;
}

export async function handoff(memberToken: string, packet: Record<string, unknown>) {
  return call("/v1/team/handoff", { token: memberToken, body: { packet } });
}

export async function completeStage(runnerToken: string, job: LeasedStage, result: Record<string, unknown>) {
  const res = await call(`/v1/runner/jobs/${job.job_id}/complete`, { token: runnerToken, body: { lease_id: job.lease_id, result } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

export async function failStage(
  runnerToken: string,
  job: LeasedStage,
  code: string,
  message = code,
  retryable = false,
  ran?: { runtime: string; model?: string; provider?: string },
) {
  const res = await call(`/v1/runner/jobs/${job.job_id}/fail`, {
    token: runnerToken,
    body: { lease_id: job.lease_id, error: { code, message, ...(ran ? { ran } : {}) }, retryable },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/** The team side of a task, polled until `done` says so (owner handlers run right after a job ends). */
export async function waitForTeamTask(taskId: string, done: (view: any) => boolean, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  let view: any;
  while (Date.now() < deadline) {
    view = (await call(`/v1/team/tasks/${taskId}`)).body;
    if (done(view)) return view;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `team task ${taskId} did not reach the expected state: ${JSON.stringify(view?.rounds?.map((r: any) => [r.phase, r.stages.map((s: any) => `${s.kind}:${s.status}`)]))}`,
  );
}

export const lastRound = (view: any) => view.rounds[view.rounds.length - 1];
