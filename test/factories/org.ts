import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { call } from "./index";

/** Employees, tasks, config, clock and ticks for the approvals/tasks/topology tests, all through HTTP. */

export async function putEmployee(id: string, fields: Record<string, unknown> = {}, token?: string) {
  const res = await call(`/v1/employees/${id}`, {
    method: "PUT",
    token,
    body: { name: `Employee ${id}`, runtime: "offline", model: { preferred: "offline" }, ...fields },
  });
  if (res.status !== 200) throw new Error(`PUT employee ${id}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A manager (`lead`) with reports under it; returns the ids. */
export async function team(lead: string, reports: string[], leadFields: Record<string, unknown> = {}) {
  await putEmployee(lead, leadFields);
  for (const r of reports) await putEmployee(r, { reports_to: lead });
}

/**
 * A task for the routing, settle and topology tests: manual unless the body says otherwise, because
 * these tests settle their tasks by hand (a worked task would start the goal loop's rounds).
 */
export async function newTask(body: Record<string, unknown>, token?: string) {
  return call("/v1/tasks", { token, body: { title: "do the thing", mode: "goal", manual: true, ...body } });
}

export async function createTask(
  body: Record<string, unknown>,
  token?: string,
): Promise<{ task_id: string; assigned_to: string; routed_by: string }> {
  const res = await newTask(body, token);
  if (res.status !== 201) throw new Error(`POST task: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function settle(taskId: string, body: Record<string, unknown>, token?: string) {
  return call(`/v1/tasks/${taskId}/settle`, { token, body });
}

/** Creates `n` goal tasks addressed to `assignee` in class `tag` and settles them as given. */
export async function settledTasks(assignee: string, tag: string, outcomes: Array<Record<string, unknown>>) {
  const ids: string[] = [];
  for (const outcome of outcomes) {
    const t = await createTask({ assignee, tags: [tag] });
    const res = await settle(t.task_id, outcome);
    if (res.status !== 200) throw new Error(`settle: ${res.status} ${JSON.stringify(res.body)}`);
    ids.push(t.task_id);
  }
  return ids;
}

export const DONE = { status: "done" };
export const FAILED = { status: "failed" };
export const NEEDS_HUMAN = { status: "needs_human" };

export async function setConfig(section: string, value: Record<string, unknown>) {
  const res = await call(`/v1/config/${section}`, { method: "PUT", body: value });
  if (res.status !== 200) throw new Error(`PUT config ${section}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function advanceClock(ms: number) {
  const res = await call("/v1/admin/clock", { body: { advance_ms: ms } });
  expect(res.status).toBe(200);
  return res.body as { now: string; offset_ms: number };
}

export async function tick(name: string, token?: string) {
  const res = await call(`/v1/admin/ticks/${name}`, { method: "POST", token });
  if (res.status !== 200) throw new Error(`tick ${name}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.summary;
}

/** Every event (oldest first) whose type starts with `prefix`, optionally after an event id. */
export async function eventsOf(
  prefix: string,
  after?: string,
): Promise<Array<{ id: string; type: string; subject: string; payload: any }>> {
  const out = [];
  let cursor = after;
  for (;;) {
    const res = await call(
      `/v1/events?limit=500${prefix ? `&type=${encodeURIComponent(prefix)}` : ""}${cursor ? `&cursor=${cursor}` : ""}`,
    );
    if (res.status !== 200) throw new Error(`events: ${res.status} ${JSON.stringify(res.body)}`);
    out.push(...res.body.events);
    if (!res.body.next_cursor) return out;
    cursor = res.body.next_cursor;
  }
}

/** A manager operator token (a named person who may decide approvals). */
export async function manager(name = "mia") {
  const res = await call("/v1/admin/operators", { body: { name, role: "manager" } });
  if (res.status !== 201) throw new Error(`operator: ${res.status}`);
  return { id: res.body.operator_id as string, token: res.body.token as string };
}

export async function decide(approvalId: string, decision: "approve" | "deny", token: string, note?: string) {
  return call(`/v1/approvals/${approvalId}/decide`, { token, body: { decision, ...(note ? { note } : {}) } });
}
