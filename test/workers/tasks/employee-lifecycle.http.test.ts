import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createOperator, createRunner } from "../../factories";
import { eventsOf } from "../../factories/org";

async function lifecycleEvents(id: string, types: string[]) {
  return (await eventsOf("employee.")).filter((e) => e.subject === id && types.includes(e.type));
}
import { completeStage, type LeasedStage } from "../../factories/scripted-runner";

/**
 * Pause, resume and retire an employee (docs/spend.md "Pause, resume, retire"): a paused employee's
 * queued jobs are held in the inbox and none is leased, work already leased finishes, resume puts
 * them back in order; retiring keeps the history, ends untaken jobs and hands open tasks to a person.
 */
const GOAL = { title: "Write the notes", acceptance_criteria: ["notes.md exists"] };

async function hire(id: string) {
  const res = await call(`/v1/employees/${id}`, {
    method: "PUT",
    body: { name: `Employee ${id}`, runtime: "claude", model: { preferred: "claude-sonnet-4-6" } },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/** Opens a goal: its first round is the employee's own run, an `employee_turn` job naming it. */
async function goal(id: string): Promise<string> {
  const res = await call(`/v1/employees/${id}/goals`, { body: GOAL });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.task_id as string;
}

/** Everything leasable now, without waiting (the dispatch queue may need a moment to deliver). */
async function leaseAll(runner: string, settleMs = 1_500): Promise<LeasedStage[]> {
  const got: LeasedStage[] = [];
  const deadline = Date.now() + settleMs;
  do {
    const res = await call("/v1/runner/lease", { token: runner, body: { capacity: 20, wait_ms: 0, runtimes: ["claude", "offline"] } });
    expect(res.status).toBe(200);
    got.push(...(res.body.jobs as LeasedStage[]));
    await new Promise((r) => setTimeout(r, 100));
  } while (Date.now() < deadline);
  return got;
}

/** The employee's one job, as D1 records it. */
async function jobOf(employee: string): Promise<string> {
  const row = await env.DB.prepare(`SELECT id FROM jobs WHERE json_extract(payload, '$.employee_id') = ?`).bind(employee).first<{ id: string }>();
  return row!.id;
}

async function until(check: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 100));
  }
}

const employeeOf = (job: LeasedStage) => (job.payload as { employee_id?: string }).employee_id;

describe("pausing and resuming an employee", () => {
  it("holds a paused employee's queued work while others' is leased, then leases it on resume", async () => {
    await hire("pia");
    await hire("quinn");
    const runner = (await createRunner("lifecycle-1")).token;
    const paused = await call("/v1/employees/pia/pause", { body: {} });
    expect(paused.status, JSON.stringify(paused.body)).toBe(200);
    expect(paused.body).toMatchObject({ employee_id: "pia", status: "paused", paused_reason: "manual", changed: true, inboxes_synced: true });

    const piaTask = await goal("pia");
    const quinnTask = await goal("quinn");
    const leased = await leaseAll(runner);
    expect(leased.map(employeeOf)).toEqual(["quinn"]);
    expect((leased[0]!.payload as { task_id: string }).task_id).toBe(quinnTask);

    const resumed = await call("/v1/employees/pia/resume", { body: {} });
    expect(resumed.body).toMatchObject({ status: "active", paused_reason: null, changed: true });
    const after = await leaseAll(runner, 500);
    expect(after.map(employeeOf)).toEqual(["pia"]);
    expect((after[0]!.payload as { task_id: string }).task_id).toBe(piaTask);

    const events = await lifecycleEvents("pia", ["employee.paused", "employee.resumed"]);
    expect(events.map((e) => e.type)).toEqual(["employee.paused", "employee.resumed"]);
  });

  it("lets work leased before the pause finish", async () => {
    await hire("rio");
    const runner = (await createRunner("lifecycle-2")).token;
    await goal("rio");
    const [job] = await leaseAll(runner);
    expect(employeeOf(job!)).toBe("rio");
    expect((await call("/v1/employees/rio/pause", { body: {} })).status).toBe(200);
    await completeStage(runner, job!, { text: "Wrote it.", runtime: "claude", model: "claude-sonnet-4-6", artifact_receipts: [] });
    const view = (await call(`/v1/admin/jobs/${job!.job_id}`)).body;
    expect(view.status).toBe("completed");
  });

  it("answers a repeated pause or resume as a no-op, and concurrent pauses record one event", async () => {
    await hire("sol");
    const answers = await Promise.all(Array.from({ length: 6 }, () => call("/v1/employees/sol/pause", { body: {} })));
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    expect(answers.filter((a) => a.body.changed).length).toBe(1);
    expect(await lifecycleEvents("sol", ["employee.paused"])).toHaveLength(1);
    const again = await call("/v1/employees/sol/resume", { body: {} });
    expect(again.body.changed).toBe(true);
    expect((await call("/v1/employees/sol/resume", { body: {} })).body.changed).toBe(false);
  });

  it("is for managers: a viewer is refused and nothing changes", async () => {
    await hire("tao");
    const viewer = await createOperator("viewer", "lifecycle-viewer");
    const res = await call("/v1/employees/tao/pause", { body: {}, token: viewer });
    expect(res.status).toBe(403);
    expect((await call("/v1/employees/tao")).body.status).toBe("active");
    expect((await call("/v1/employees/nobody/pause", { body: {} })).status).toBe(404);
  });
});

describe("retiring an employee", () => {
  it("keeps the history, ends untaken jobs, hands open tasks to a person and refuses new work", async () => {
    await hire("uma");
    const runner = (await createRunner("lifecycle-3")).token;
    await call("/v1/employees/uma/pause", { body: {} });
    const taskId = await goal("uma");
    const jobId = await jobOf("uma");
    const manager = await createOperator("manager", "lifecycle-manager");
    expect((await call("/v1/employees/uma/retire", { body: {}, token: manager })).status).toBe(403);

    const res = await call("/v1/employees/uma/retire", { body: {} });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ status: "retired", changed: true, handed_back_tasks: [taskId] });
    // Ended now if the inbox had it, or as it arrives from the dispatch queue.
    expect(res.body.withdrawn_jobs.filter((j: string) => j !== jobId)).toEqual([]);
    await until(async () => (await call(`/v1/admin/jobs/${jobId}`)).body.status === "dead");
    expect((await call(`/v1/admin/jobs/${jobId}`)).body).toMatchObject({ status: "dead", error: { code: "employee_retired" } });
    // Nothing more of its task is leased (no next stage, no evaluator); earlier tests' jobs may be.
    const late = (await leaseAll(runner, 300)).filter((j) => employeeOf(j) === "uma" || JSON.stringify(j.payload).includes(taskId));
    expect(late).toEqual([]);

    const task = (await call(`/v1/tasks/${taskId}`)).body;
    expect(task).toMatchObject({ status: "needs_human", pause_class: "blocked_needs_decision" });
    expect((await call("/v1/employees/uma")).body).toMatchObject({ status: "retired", employee_id: "uma" });

    const refused = await call("/v1/employees/uma/goals", { body: GOAL });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe("employee_retired");
    expect((await call("/v1/employees/uma/resume", { body: {} })).body.code).toBe("employee_retired");
    expect((await call("/v1/employees/uma/retire", { body: {} })).body.changed).toBe(false);
  });
});
