import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { getDb } from "../../src/db/client";
import { recordInboxNotices, type InboxNotice } from "../../src/jobs/outcomes";
import { submitJob, type NewJob } from "../../src/jobs/submit";
import { randomHex } from "../../src/lib/ids";
import { call } from "./index";
import { inboxJob } from "./inbox-pools";

/**
 * Jobs of one employee (or project) for the spend tests: `employee_turn` jobs submitted the way a
 * feature submits them (D1 row, dispatch queue, inbox), owned by `admin` so nothing else happens
 * when they end, leased and completed over the runner protocol with the usage a test chooses.
 */
export function turnJob(employee: string, opts: { owner?: NewJob["owner"]; model?: string } = {}): NewJob {
  return {
    kind: "employee_turn",
    payload: {
      runtime: "claude",
      model: opts.model ?? "claude-sonnet-4-6",
      employee_id: employee,
      employee: { name: employee, capabilities: { allowed_tools: [], denied_tools: [] }, sandbox_enabled: false },
      purpose: "goal_round",
      prompt: `work for ${employee}`,
      timeout_ms: 60_000,
    },
    owner: opts.owner ?? { kind: "admin", id: `spend-${employee}` },
  } as NewJob;
}

/** Submits a job and waits until the dispatch queue has put it into its inbox (queued or held). */
export async function submitToInbox(job: NewJob): Promise<string> {
  const now = new Date((await call("/v1/admin/clock")).body.now);
  const { job_id } = await submitJob(env, getDb(env.DB), job, now);
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (await inboxJob(env, job_id)) return job_id;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`job ${job_id} never reached the inbox`);
}

export interface Leased {
  job_id: string;
  lease_id: string;
  kind: string;
  payload: Record<string, unknown>;
}

/** Leases what the runner is offered now (claude jobs), retrying briefly until `want` of `ids` came. */
export async function leaseThese(runner: string, ids: string[], timeoutMs = 5_000): Promise<Leased[]> {
  const got: Leased[] = [];
  const deadline = Date.now() + timeoutMs;
  while (got.length < ids.length && Date.now() < deadline) {
    const res = await call("/v1/runner/lease", { token: runner, body: { capacity: 20, wait_ms: 0, runtimes: ["claude"] } });
    expect(res.status).toBe(200);
    got.push(...(res.body.jobs as Leased[]));
    if (got.length < ids.length) await new Promise((r) => setTimeout(r, 50));
  }
  return got;
}

/** Everything a runner is offered over `forMs`, without waiting on a long-poll. */
export async function leaseEverything(runner: string, forMs = 800): Promise<Leased[]> {
  const got: Leased[] = [];
  const deadline = Date.now() + forMs;
  do {
    const res = await call("/v1/runner/lease", { token: runner, body: { capacity: 20, wait_ms: 0, runtimes: ["claude"] } });
    expect(res.status).toBe(200);
    got.push(...(res.body.jobs as Leased[]));
    await new Promise((r) => setTimeout(r, 100));
  } while (Date.now() < deadline);
  return got;
}

export async function complete(runner: string, job: Leased, result: Record<string, unknown>) {
  const res = await call(`/v1/runner/jobs/${job.job_id}/complete`, { token: runner, body: { lease_id: job.lease_id, result } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/** A completed run's result with the usage (and price) a test picks. */
export function ran(tokens: { input?: number; output?: number; cache_read?: number }, cost_usd?: number, model = "claude-sonnet-4-6") {
  return {
    text: "done",
    runtime: "claude",
    model,
    duration_ms: 5,
    usage: {
      ...(tokens.input !== undefined ? { input_tokens: tokens.input } : {}),
      ...(tokens.output !== undefined ? { output_tokens: tokens.output } : {}),
      ...(tokens.cache_read !== undefined ? { cache_read_input_tokens: tokens.cache_read } : {}),
    },
    ...(cost_usd !== undefined ? { cost_usd } : {}),
  };
}

export async function until(check: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A completion as an inbox delivers it to D1 (its ledger row and the month's totals), without a
 * runner: for tests that need spend on record at a given time.
 */
export async function recordCompletion(fields: {
  at: string;
  employee_id?: string;
  project_id?: string;
  result: Record<string, unknown>;
  job_id?: string;
}): Promise<string> {
  const jobId = fields.job_id ?? `job_${randomHex(8)}`;
  const notice: InboxNotice = {
    job_id: jobId,
    kind: "employee_turn",
    owner: { kind: "admin", id: "spend-test" },
    type: "job.completed",
    status: "completed",
    attempt: 1,
    leased_by: "rnr_test",
    at: fields.at,
    runtime: "claude",
    result: fields.result,
    ...(fields.employee_id ? { employee_id: fields.employee_id } : {}),
    ...(fields.project_id ? { project_id: fields.project_id } : {}),
  };
  await recordInboxNotices(getDb(env.DB), `spend-test-${jobId}`, [{ seq: 1, notice }]);
  return jobId;
}
