import { env } from "cloudflare:workers";
import { getDb } from "../../src/db/client";
import { randomHex } from "../../src/lib/ids";
import type { GoalEmployee } from "../../src/team/goals";
import type { TeamSettings } from "../../src/team/settings";
import { call } from "./index";

export const db = () => getDb(env.DB);

/** The seed's example team: Claude plans, Codex executes, Gemini (antigravity) verifies. */
export const SEED_TEAM: TeamSettings = {
  enabled: true,
  executor_fanout: 2,
  roles: {
    planner: { runtime: "claude", model: "claude-fable-5-1", effort: "high" },
    executor: { runtime: "codex", model: "gpt-5.5", effort: "medium" },
    verifier: { runtime: "antigravity", model: "gemini-3.7-flash", effort: "low" },
    utility: { runtime: "claude", model: "claude-haiku-4-5" },
  },
};

export function employee(overrides: Partial<GoalEmployee> = {}): GoalEmployee {
  return { id: `emp_${randomHex(4)}`, model: { runtime: "claude", preferred: "claude-sonnet-4-6" }, ...overrides };
}

export const newTaskId = () => `task_${randomHex(8)}`;

/** Replaces the global [team] section through the API (admin token). */
export async function putTeamConfig(value: TeamSettings | Record<string, unknown>) {
  const res = await call("/v1/config/team", { method: "PUT", body: value });
  if (res.status !== 200) throw new Error(`PUT /v1/config/team: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function eventsOf(type: string, subject?: string) {
  const q = new URLSearchParams({ type, limit: "500", ...(subject ? { subject } : {}) });
  return (await call(`/v1/events?${q}`)).body.events as { type: string; subject: string; payload: Record<string, any> }[];
}

/**
 * Stores the team's fields of the `dispatch` section (owned by the dispatch feature, not in this
 * branch), through the same writeSection a PUT /v1/config/dispatch will use.
 */
export async function putTeamDispatchLimits(value: Record<string, unknown>) {
  const { z } = await import("zod");
  const { defineConfigSection, writeSection } = await import("../../src/lib/config");
  const { TEAM_DISPATCH_FIELDS } = await import("../../src/tasks/dispatch/team-fields");
  await writeSection(db(), defineConfigSection("dispatch", z.object(TEAM_DISPATCH_FIELDS)), value, "test", new Date());
}

/**
 * Rounds started from code run for employees the registry lacks, so their evaluator cannot default
 * to the employee's runtime: name one (`[goals] evaluator`), as an operator could.
 */
export async function nameEvaluator(evaluator: { runtime: string; model?: string } = { runtime: "claude", model: "claude-judge-1" }) {
  const res = await call("/v1/config/goals", { method: "PUT", body: { evaluator } });
  if (res.status !== 200) throw new Error(`PUT /v1/config/goals: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}
