import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { evaluateBudgets } from "../../../src/spend/budgets";
import { call, createOperator, createRunner } from "../../factories";
import { inboxJob } from "../../factories/inbox-pools";
import { eventsOf, putEmployee, setConfig } from "../../factories/org";
import { complete, leaseEverything, leaseThese, ran, recordCompletion, submitToInbox, turnJob, until } from "../../factories/spend";

/**
 * Monthly budgets (docs/spend.md): the warning at `warn_ratio` once, the excess at 100 % once with
 * the employee paused (its queued work held, others' leased), a project's work held, the races of
 * jobs ending together, unknown cost never counted as spend, and a manager's lift.
 */
const NOW = "2031-05-12T12:00:00.000Z";
const MONTH = "2031-05";
let runner: string;
let manager: string;

const BUDGETS = {
  employees: {
    cara: { monthly_tokens: 1_000 },
    dan: { monthly_usd: 1 },
    fay: { monthly_tokens: 1_000 },
    hal: { monthly_usd: 0.5 },
    ivy: { monthly_tokens: 100 },
  },
  projects: { proj_00000000000000aa: { monthly_usd: 0.5 } },
};

async function budgetEvents(subject: string) {
  return (await eventsOf("budget.")).filter((e) => e.subject === subject);
}

async function pausedEvents(employee: string) {
  return (await eventsOf("employee.paused")).filter((e) => e.subject === employee);
}

async function employee(id: string) {
  return (await call(`/v1/employees/${id}`)).body as { status: string; paused_reason: string | null };
}

async function budget(scope: string, id: string) {
  const res = await call("/v1/budgets");
  expect(res.status).toBe(200);
  return (res.body.budgets as Array<Record<string, any>>).find((b) => b.scope === scope && b.id === id)!;
}

/** Runs one job of `who` to completion with `result`. */
async function runJob(who: string, result: Record<string, unknown>, opts: Parameters<typeof turnJob>[1] = {}) {
  const id = await submitToInbox(turnJob(who, opts));
  const [job] = await leaseThese(runner, [id]);
  expect(job?.job_id).toBe(id);
  await complete(runner, job!, result);
  return id;
}

const employeeOf = (job: { payload: Record<string, unknown> }) => job.payload.employee_id;

beforeAll(async () => {
  expect((await call("/v1/admin/clock", { body: { set: NOW } })).status).toBe(200);
  runner = (await createRunner("budget-runner")).token;
  manager = await createOperator("manager", "budget-manager");
  for (const id of ["cara", "dan", "eve", "fay", "gus", "hal", "ivy", "joe"]) await putEmployee(id);
  await setConfig("budgets", BUDGETS);
});

describe("the warning", () => {
  it("is one budget.warning at 80 %, counting input and output tokens but not cache tokens", async () => {
    await runJob("cara", ran({ input: 700, output: 100, cache_read: 50_000 }));
    await runJob("cara", ran({ input: 10, output: 10 }));
    const events = await budgetEvents("employee:cara");
    expect(events.map((e) => e.type)).toEqual(["budget.warning"]);
    expect(events[0]!.payload).toMatchObject({
      scope: "employee",
      id: "cara",
      month: MONTH,
      spent: { tokens: 800, usd: "unknown" },
      ratio: 0.8,
    });
    expect((await employee("cara")).status).toBe("active");
    expect(await budget("employee", "cara")).toMatchObject({
      month: MONTH,
      limit: { monthly_tokens: 1_000 },
      spent: { usd: "unknown", tokens: 820 },
      ratio: 0.82,
      state: "warning",
      exceeded_at: null,
    });
  });
});

describe("the excess", () => {
  it("pauses the employee for its budget: its next queued job is held, another employee's is leased", async () => {
    const first = await submitToInbox(turnJob("dan"));
    const [job] = await leaseThese(runner, [first]);
    const next = await submitToInbox(turnJob("dan"));
    await complete(runner, job!, ran({ input: 10, output: 10 }, 1.25));

    expect(await employee("dan")).toMatchObject({ status: "paused", paused_reason: "budget" });
    expect((await budgetEvents("employee:dan")).map((e) => e.type)).toEqual(["budget.warning", "budget.exceeded"]);
    expect(await pausedEvents("dan")).toHaveLength(1);
    expect((await pausedEvents("dan"))[0]!.payload).toMatchObject({ reason: "budget", by: "budget" });

    const other = await submitToInbox(turnJob("eve"));
    const leased = await leaseEverything(runner);
    expect(leased.map((j) => j.job_id)).toEqual([other]);
    expect(await inboxJob(env, next)).toMatchObject({ status: "queued", held: true });
    expect(await budget("employee", "dan")).toMatchObject({ state: "exceeded", spent: { usd: 1.25, tokens: 20 }, ratio: 1.25 });
    for (const j of leased) await complete(runner, j, { text: "done" });
  });

  it("records one warning and one excess and pauses once when jobs end together", async () => {
    const ids = await Promise.all([1, 2, 3].map(() => submitToInbox(turnJob("fay"))));
    const jobs = await leaseThese(runner, ids);
    expect(jobs.map((j) => j.job_id).sort()).toEqual([...ids].sort());
    await Promise.all(jobs.map((j) => complete(runner, j, ran({ input: 300, output: 100 }))));
    await until(async () => (await employee("fay")).status === "paused");

    expect((await budgetEvents("employee:fay")).map((e) => e.type)).toEqual(["budget.warning", "budget.exceeded"]);
    expect(await pausedEvents("fay")).toHaveLength(1);
    const held = await submitToInbox(turnJob("fay"));
    const other = await submitToInbox(turnJob("gus"));
    const leased = await leaseEverything(runner);
    expect(leased.map((j) => j.job_id)).toEqual([other]);
    expect(await inboxJob(env, held)).toMatchObject({ held: true });
    for (const j of leased) await complete(runner, j, { text: "done" });
  });

  it("records each crossing once when many checks race over the same spend", async () => {
    // On record, but its own check never ran (as if its isolate stopped): eight checks now race.
    await recordCompletion({ at: NOW, employee_id: "ivy", result: { usage: { input_tokens: 90, output_tokens: 20 } } });
    const now = new Date(NOW);
    const ref = { scope: "employee" as const, id: "ivy", limit: { monthly_tokens: 100 } };
    const outcomes = await Promise.all(Array.from({ length: 8 }, () => evaluateBudgets(env, getDb(env.DB), 0.8, [ref], MONTH, now)));
    const recorded = outcomes.flat().filter((c) => c.recorded);
    expect(recorded).toEqual([{ scope: "employee", id: "ivy", action: "exceed", recorded: true }]);
    expect((await budgetEvents("employee:ivy")).map((e) => e.type)).toEqual(["budget.warning", "budget.exceeded"]);
    await until(async () => (await employee("ivy")).status === "paused");
    expect(await pausedEvents("ivy")).toHaveLength(1);
  });

  it("never counts an unknown price as spend: tokens without a price leave a dollar budget unknown", async () => {
    await runJob("hal", ran({ input: 5_000_000, output: 1_000_000 }));
    expect(await budget("employee", "hal")).toMatchObject({ spent: { usd: "unknown", tokens: 6_000_000 }, ratio: null, state: "ok" });
    expect(await budgetEvents("employee:hal")).toEqual([]);
    expect((await employee("hal")).status).toBe("active");
  });
});

describe("a project's budget", () => {
  it("holds the project's queued jobs once exceeded, until a manager lifts it", async () => {
    const project = { kind: "project" as const, id: "proj_00000000000000aa" };
    const first = await submitToInbox(turnJob("joe", { owner: project }));
    const [job] = await leaseThese(runner, [first]);
    const next = await submitToInbox(turnJob("joe", { owner: project }));
    await complete(runner, job!, ran({ input: 1, output: 1 }, 0.75));
    expect((await budgetEvents("project:proj_00000000000000aa")).map((e) => e.type)).toEqual(["budget.warning", "budget.exceeded"]);
    expect(await inboxJob(env, next)).toMatchObject({ held: true });
    expect((await employee("joe")).status).toBe("active");
    expect(await leaseEverything(runner, 300)).toEqual([]);

    const lifted = await call("/v1/budgets/project/proj_00000000000000aa/lift", { method: "POST", token: manager });
    expect(lifted.status, JSON.stringify(lifted.body)).toBe(200);
    expect(lifted.body).toMatchObject({ changed: true, inboxes_synced: true, budget: { state: "lifted", lifted_by: expect.any(String) } });
    const [again] = await leaseThese(runner, [next]);
    expect(again?.job_id).toBe(next);
    await complete(runner, again!, ran({ input: 1, output: 1 }, 0.75));
    // Lifted for the rest of the month: more spend stops nothing.
    expect((await budgetEvents("project:proj_00000000000000aa")).map((e) => e.type)).toEqual([
      "budget.warning",
      "budget.exceeded",
      "budget.lifted",
    ]);
  });
});

describe("lifting an employee's budget", () => {
  it("resumes the employee for the rest of the month: its held job is leased, and more spend does not pause it again", async () => {
    // dan was paused above with a job held.
    const res = await call("/v1/budgets/employee/dan/lift", { method: "POST", token: manager });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ changed: true, budget: { scope: "employee", id: "dan", state: "lifted" } });
    expect(await employee("dan")).toMatchObject({ status: "active", paused_reason: null });
    const leased = await leaseEverything(runner);
    expect(leased.map(employeeOf)).toEqual(["dan"]);
    await complete(runner, leased[0]!, ran({ input: 1, output: 1 }, 3));
    expect((await employee("dan")).status).toBe("active");
    expect((await call("/v1/budgets/employee/dan/lift", { method: "POST", token: manager })).body.changed).toBe(false);
  });

  it("is a manager's: a viewer is refused, and a budget that is not exceeded cannot be lifted", async () => {
    const viewer = await createOperator("viewer", "budget-viewer");
    const refused = await call("/v1/budgets/employee/fay/lift", { method: "POST", token: viewer });
    expect(refused.status).toBe(403);
    expect((await employee("fay")).status).toBe("paused");
    expect((await call("/v1/budgets", { token: viewer })).status).toBe(200);
    const notExceeded = await call("/v1/budgets/employee/cara/lift", { method: "POST", token: manager });
    expect(notExceeded.status).toBe(409);
    expect(notExceeded.body.code).toBe("conflict");
    expect((await budgetEvents("employee:cara")).map((e) => e.type)).toEqual(["budget.warning"]);
    expect((await call("/v1/budgets/company/acme/lift", { method: "POST", token: manager })).status).toBe(404);
  });

  it("is what a manager's resume of a budget pause does too", async () => {
    const res = await call("/v1/employees/fay/resume", { method: "POST", token: manager, body: {} });
    expect(res.status).toBe(200);
    expect(await budget("employee", "fay")).toMatchObject({ state: "lifted" });
  });
});
