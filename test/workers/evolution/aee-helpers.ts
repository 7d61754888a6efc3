import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { getDb } from "../../../src/db/client";
import { bundledSuites, findCase } from "../../../src/eval/case-job";
import { transcriptOutcome } from "../../../src/eval/case-schema";
import type { PlaybookEntry } from "../../../src/evolution/playbook";
import { loadPlaybook, playbookWrite } from "../../../src/evolution/playbook-store";
import { trigger } from "../../../src/evolution/triggers";
import { loadClock } from "../../../src/lib/clock";
import { call } from "../../factories";

/** Cases whose recorded transcript is a gold PASS: a scripted run can pass them by replaying it. */
export const PASSABLE = [
  "config-edits/node-engine",
  "config-edits/remove-debug-log",
  "config-edits/tsconfig-strict",
  "log-triage/count-5xx",
  "log-triage/postmortem-sections",
];

export const now = async () => (await loadClock(env)).now();

export async function putEmployee(id: string, fields: Record<string, unknown> = {}, evolution: Record<string, unknown> = {}) {
  const res = await call(`/v1/employees/${id}`, {
    method: "PUT",
    body: {
      name: `Employee ${id}`,
      runtime: "claude",
      model: { preferred: "claude-sonnet-4-6" },
      evolution: { gvu_enabled: true, gvu_cooldown_minutes: 0, ...evolution },
      ...fields,
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

export const REPORT =
  "## Prediction error report\n- composite error: 0.910 (critical)\n- unexpected correction: the user corrected the agent 2 time(s)";

/** An accepted emergency evolution request for the employee (what a Critical conversation leaves). */
export async function emergency(agentId: string) {
  const out = await trigger(env, { agentId, kind: "emergency_evolution", context: REPORT }, await now());
  expect(out.status, JSON.stringify(out)).toBe("accepted");
  return out.request_id;
}

/** A case run's outcome that passes (its gold PASS transcript replayed) or fails (nothing done). */
export function caseResult(ref: string, pass: boolean): Record<string, unknown> {
  if (pass) {
    const c = findCase(bundledSuites()!, ref);
    if (!c?.transcript || c.transcript.gold !== "PASS") throw new Error(`${ref} has no gold PASS transcript`);
    const o = transcriptOutcome(c.transcript);
    return { text: o.text, exit_status: o.exit_status ?? 0, files: o.files, runtime: "claude" };
  }
  return { text: "I looked at it and changed nothing.", exit_status: 1, files: {}, runtime: "claude" };
}

export interface LeasedJob {
  job_id: string;
  lease_id: string;
  kind: string;
  attempt: number;
  payload: any;
}

export type Answer = { result: Record<string, unknown> } | { fail: { code: string; retryable?: boolean } } | "hold";

/** How a scripted runner answers each job of one employee; jobs of anyone else are failed at once. */
export interface Script {
  employee: string;
  /** An eval case run: pass or fail it (default: fail). */
  caseRun?: (ref: string, job: LeasedJob) => boolean | Answer;
  /** The generator's answer text for an attempt. */
  generator?: (attempt: number, prompt: string) => string | Answer;
  /** The judge's answer text. */
  judge?: (subject: string, prompt: string) => string | Answer;
}

export function jobOf(job: LeasedJob, employee: string): boolean {
  if (job.kind === "eval_case") return job.payload.employee_id === employee;
  if (job.kind === "utility")
    return typeof job.payload.prompt === "string" && job.payload.prompt.split("\n")[0].includes(`for Employee ${employee} —`);
  return false;
}

function answerFor(script: Script, job: LeasedJob): Answer {
  if (job.kind === "eval_case") {
    const ref = `${job.payload.domain}/${job.payload.case_id}`;
    const a = script.caseRun?.(ref, job) ?? false;
    return typeof a === "boolean" ? { result: caseResult(ref, a) } : a;
  }
  const prompt = job.payload.prompt as string;
  const first = prompt.split("\n")[0]!;
  const gen = /^# AEE generator for .+ — round \S+, attempt (\d+)$/.exec(first);
  if (gen) {
    const a = script.generator?.(Number(gen[1]), prompt) ?? "not json";
    return a === "hold" || typeof a !== "string" ? a : { result: { text: a, runtime: job.payload.runtime } };
  }
  const judge = /^# AEE judge for .+ — round \S+, (champion|candidate \d+)$/.exec(first);
  if (judge) {
    const a = script.judge?.(judge[1]!, prompt) ?? JSON.stringify({ score: 0.7, reasons: ["scripted"] });
    return a === "hold" || typeof a !== "string" ? a : { result: { text: a, runtime: job.payload.runtime } };
  }
  return { fail: { code: "cli_error" } };
}

export async function finish(token: string, job: LeasedJob, a: Exclude<Answer, "hold">) {
  const res =
    "result" in a
      ? await call(`/v1/runner/jobs/${job.job_id}/complete`, { token, body: { lease_id: job.lease_id, result: a.result } })
      : await call(`/v1/runner/jobs/${job.job_id}/fail`, {
          token,
          body: { lease_id: job.lease_id, error: { code: a.fail.code, message: a.fail.code }, retryable: a.fail.retryable ?? false },
        });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/**
 * Leases and answers jobs as `script` says until `until` holds (checked between leases). Jobs of other
 * employees (earlier tests' leftovers in the shared inbox) are failed; `hold` leaves a job leased.
 */
export async function runUntil(token: string, script: Script, until: () => Promise<boolean>, timeoutMs = 40_000, seen: LeasedJob[] = []) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await until()) return seen;
    const res = await call("/v1/runner/lease", { token, body: { capacity: 10, wait_ms: 250, runtimes: ["claude", "offline", "codex"] } });
    expect(res.status).toBe(200);
    for (const job of res.body.jobs as LeasedJob[]) {
      if (!jobOf(job, script.employee)) {
        await finish(token, job, { fail: { code: "cli_error" } });
        continue;
      }
      seen.push(job);
      const a = answerFor(script, job);
      if (a !== "hold") await finish(token, job, a);
      // A held job is acked like a runner that started it: its lease then runs until it lapses.
      else expect((await call(`/v1/runner/jobs/${job.job_id}/ack`, { token, body: { lease_id: job.lease_id } })).status).toBe(200);
    }
  }
  throw new Error(
    `runUntil: timed out; last jobs: ${seen
      .slice(-5)
      .map((j) => `${j.kind}:${j.payload.case_id ?? j.payload.prompt?.split("\n")[0]}`)
      .join(" | ")}`,
  );
}

export async function roundOf(agentId: string) {
  const rows = await env.DB.prepare(`SELECT * FROM aee_rounds WHERE agent_id = ? ORDER BY round_seq DESC LIMIT 1`).bind(agentId).all<any>();
  return rows.results[0] ?? null;
}

export async function roundIs(agentId: string, status: string) {
  return (await roundOf(agentId))?.status === status;
}

export async function aeeJobsOf(roundId: string) {
  return (await env.DB.prepare(`SELECT * FROM aee_jobs WHERE owner_id = ? ORDER BY created_at, job_id`).bind(roundId).all<any>()).results;
}

/** Entries written straight into the store (a playbook the test starts from). */
export async function seedEntries(agentId: string, entries: PlaybookEntry[]) {
  const db = getDb(env.DB);
  const stored = await loadPlaybook(db, agentId);
  await db.batch(playbookWrite(db, agentId, stored.revision, entries, await now()) as [any, ...any[]]);
}

export function seedEntry(agentId: string, over: Partial<PlaybookEntry> & { entry_id: string }): PlaybookEntry {
  const at = "2026-01-01T00:00:00.000Z";
  return {
    agent_id: agentId,
    category: "repair",
    signals_match: ["release|changelog"],
    content: "When asked for release notes, list the version number and release date before any change.",
    eval_cases: ["config-edits/node-engine"],
    assertions: [],
    failure_history: [],
    applications: [],
    success_streak: 0,
    derived_from: [{ kind: "operator", id: "op_test" }],
    state: "active",
    state_reason: "settle_accept",
    state_since: at,
    created_at: at,
    updated_at: at,
    version: 1,
    ...over,
  };
}

/** An add op the Gate passes (content, case and assertion chosen by the test). */
export function addOp(roundId: string, content: string, ref: string) {
  return {
    op: "add",
    category: "repair",
    signals_match: ["critical_error", "correction"],
    content,
    eval_cases: [ref],
    assertions: [{ kind: "output_not_contains", value: "I cannot help with that" }],
    derived_from: [{ kind: "aee_round", id: roundId }],
  };
}

/** The round id a generator prompt names. */
export function roundIdIn(prompt: string): string {
  return /— round (\S+), attempt/.exec(prompt.split("\n")[0]!)![1]!;
}
