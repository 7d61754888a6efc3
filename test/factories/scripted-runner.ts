import { expect } from "vitest";
import type { TeamStagePayload } from "../../src/team/stage-job";
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
      if (opts.taskId && job.payload.task_id !== opts.taskId)
        await failStage(runnerToken, job, "cli_error", "stale job of another test's round");
      else got.push(job);
    }
  }
  return got;
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
