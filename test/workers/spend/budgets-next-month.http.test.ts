import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { call, createRunner } from "../../factories";
import { inboxJob } from "../../factories/inbox-pools";
import { eventsOf, putEmployee, setConfig, tick } from "../../factories/org";
import { complete, leaseEverything, leaseThese, ran, recordCompletion, submitToInbox, turnJob } from "../../factories/spend";

/**
 * A new month needs nobody (docs/spend.md "Next month"): the company's hold of last month no longer
 * applies, and the `budgets` tick resumes employees paused for last month's budget, without lifting
 * this month's: a new excess pauses them again. A manual pause is left alone.
 */
let runner: string;

async function employee(id: string) {
  return (await call(`/v1/employees/${id}`)).body as { status: string; paused_reason: string | null };
}

const setClock = async (at: string) => expect((await call("/v1/admin/clock", { body: { set: at } })).status).toBe(200);

beforeAll(async () => {
  await setClock("2031-07-30T12:00:00.000Z");
  runner = (await createRunner("month-runner")).token;
  for (const id of ["kim", "lou", "mia"]) await putEmployee(id);
  await setConfig("budgets", { company: { monthly_tokens: 1_000 }, employees: { kim: { monthly_usd: 1 } } });
});

describe("the next month", () => {
  it("releases the company's hold and resumes last month's budget pauses, and the new month's budget still stops work", async () => {
    const first = await submitToInbox(turnJob("kim"));
    const [job] = await leaseThese(runner, [first]);
    await complete(runner, job!, ran({ input: 900, output: 200 }, 2));
    expect(await employee("kim")).toMatchObject({ status: "paused", paused_reason: "budget" });
    expect((await eventsOf("budget.exceeded")).map((e) => e.subject).sort()).toEqual(["company", "employee:kim"]);
    expect((await call("/v1/employees/mia/pause", { body: {} })).status).toBe(200);

    // The company is over its budget: everyone's work waits.
    const louJob = await submitToInbox(turnJob("lou"));
    expect(await inboxJob(env, louJob)).toMatchObject({ held: true });
    expect(await leaseEverything(runner, 300)).toEqual([]);
    // Later the same month the tick resumes nobody.
    expect(await tick("budgets")).toMatchObject({ resumed: 0, hold_keys: 3 });
    expect((await employee("kim")).status).toBe("paused");

    await setClock("2031-08-01T00:05:00.000Z");
    const summary = await tick("budgets");
    expect(summary).toMatchObject({ resumed: 1, hold_keys: 1 });
    expect(await employee("kim")).toMatchObject({ status: "active", paused_reason: null });
    expect(await employee("mia")).toMatchObject({ status: "paused", paused_reason: "manual" });
    const resumed = (await eventsOf("employee.resumed")).filter((e) => e.subject === "kim");
    expect(resumed.map((e) => e.payload)).toEqual([
      { employee_id: "kim", by: "budget", was: "budget", reason: "new_month", month: "2031-08" },
    ]);

    const leased = await leaseEverything(runner);
    expect(leased.map((j) => j.job_id)).toEqual([louJob]);
    await complete(runner, leased[0]!, { text: "done" });

    const budgets = (await call("/v1/budgets")).body;
    expect(budgets.month).toBe("2031-08");
    expect(budgets.budgets).toEqual([
      expect.objectContaining({ scope: "company", state: "ok", spent: { usd: "unknown", tokens: "unknown" }, ratio: null }),
      expect.objectContaining({ scope: "employee", id: "kim", state: "ok", lifted_at: null }),
    ]);

    // August has a budget of its own: kim's new excess pauses it again.
    await complete(runner, (await leaseThese(runner, [await submitToInbox(turnJob("kim"))]))[0]!, ran({ input: 1, output: 1 }, 1.5));
    expect(await employee("kim")).toMatchObject({ status: "paused", paused_reason: "budget" });
  });

  it("lets the tick record a crossing the job's check missed, and pause the employee", async () => {
    await putEmployee("ned");
    // On record before the budget existed: no job's check saw it cross.
    await recordCompletion({ at: "2031-08-01T00:06:00.000Z", employee_id: "ned", result: { cost_usd: 4 } });
    await setConfig("budgets", { employees: { ned: { monthly_usd: 1 } } });
    expect(await tick("budgets")).toMatchObject({ exceeded: 1 });
    expect(await employee("ned")).toMatchObject({ status: "paused", paused_reason: "budget" });
  });

  it("lets the tick pause an employee whose recorded excess was never acted on", async () => {
    await putEmployee("ona");
    await setConfig("budgets", { employees: { ona: { monthly_usd: 1 } } });
    // The checker recorded the excess, then stopped before the pause.
    await env.DB.prepare(
      `INSERT INTO budget_states (scope, scope_id, month, warned_at, exceeded_at) VALUES ('employee', 'ona', '2031-08', ?1, ?1)`,
    )
      .bind("2031-08-01T00:07:00.000Z")
      .run();
    expect(await tick("budgets")).toMatchObject({ paused: 1, exceeded: 0 });
    expect(await employee("ona")).toMatchObject({ status: "paused", paused_reason: "budget" });
    expect(await tick("budgets")).toMatchObject({ paused: 0, resumed: 0 });
  });
});
