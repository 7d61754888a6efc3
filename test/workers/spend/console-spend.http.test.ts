import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { evaluateBudgets } from "../../../src/spend/budgets";
import { call, createOperator } from "../../factories";
import { setConfig } from "../../factories/org";
import { recordCompletion } from "../../factories/spend";
import { login, web } from "../../factories/web";

/**
 * `/console/spend` (docs/spend.md): the month's cost by employee, model, runtime, project and day
 * (a line whose unknown days are gaps), the budgets with their state, and the manager's Lift form.
 */
// The real month: a session cookie may not expire more than 400 days from the real now, so the
// console's tests leave the test clock alone.
const MONTH = new Date().toISOString().slice(0, 7);
const day = (n: number) => `${MONTH}-${String(n).padStart(2, "0")}`;
const DAYS = Number(new Date(Date.UTC(Number(MONTH.slice(0, 4)), Number(MONTH.slice(5)), 0)).getUTCDate());
const OTHER_MONTH = `${Number(MONTH.slice(0, 4)) - 1}${MONTH.slice(4)}`;
const PROJECT = "proj_00000000000000cc";

async function costRow(fields: { day: string; employee?: string; project?: string; model: string; input?: number; cost?: number }) {
  await recordCompletion({
    at: `${fields.day}T09:00:00.000Z`,
    employee_id: fields.employee,
    project_id: fields.project,
    result: {
      model: fields.model,
      ...(fields.input !== undefined ? { usage: { input_tokens: fields.input, output_tokens: 1 } } : {}),
      ...(fields.cost !== undefined ? { cost_usd: fields.cost } : {}),
    },
  });
}

beforeAll(async () => {
  await costRow({ day: day(2), employee: "ada", model: "claude-sonnet-4-6", input: 100, cost: 0.5 });
  await costRow({ day: day(3), employee: "ada", model: "gpt-5.1-codex", input: 40 });
  await costRow({ day: day(5), project: PROJECT, model: "claude-sonnet-4-6", cost: 2 });
  await setConfig("budgets", { employees: { ada: { monthly_tokens: 1_000 } }, projects: { [PROJECT]: { monthly_usd: 1 } } });
  const ref = { scope: "project" as const, id: PROJECT, limit: { monthly_usd: 1 } };
  await evaluateBudgets(env, getDb(env.DB), 0.8, [ref], MONTH, new Date());
});

describe("the spend page", () => {
  it("shows a viewer the month's cost by group and per day, unknown as unknown, and the budgets without a Lift form", async () => {
    const viewer = await login(await createOperator("viewer", "spend-viewer"));
    const res = await web("/console/spend", { cookie: viewer.cookie });
    expect(res.status).toBe(200);
    expect(res.text).toContain("<h1>Spend</h1>");
    expect(res.text).toContain('href="/console/spend" aria-current="page"');
    for (const id of ["by-employee", "by-model", "by-runtime", "by-project", "spend-per-day", "budgets"])
      expect(res.text).toContain(`id="${id}"`);
    expect(res.text).toMatch(/<tr data-key="ada">[\s\S]*?\$0\.5000[\s\S]*?<\/tr>/);
    // gpt-5.1-codex priced nothing: its cost is unknown, not $0.
    expect(res.text).toMatch(/<tr data-key="gpt-5.1-codex">[\s\S]*?<span class="unknown">unknown<\/span>[\s\S]*?<\/tr>/);
    const chart = /data-chart="line" data-chart-data="([^"]*)"/.exec(res.text);
    const data = JSON.parse(chart![1]!.replaceAll("&quot;", '"'));
    expect(data.labels).toHaveLength(DAYS);
    // Priced days carry their cost; the day that priced nothing and the days without jobs are gaps.
    expect(data.series[0].values.slice(0, 6)).toEqual([null, 0.5, null, null, 2, null]);
    expect(res.text).toContain(`data-budget="project:${PROJECT}"`);
    expect(res.text).toContain('data-status="exceeded"');
    expect(res.text).not.toContain("/lift");
  });

  it("shows another month on request and refuses one that is not", async () => {
    const mgr = await login(await createOperator("manager", "spend-month"));
    const aug = await web(`/console/spend?month=${OTHER_MONTH}`, { cookie: mgr.cookie });
    expect(aug.status).toBe(200);
    expect(aug.text).not.toContain('data-key="ada"');
    expect((await web("/console/spend?month=2031-13", { cookie: mgr.cookie })).status).toBe(422);
  });

  it("lets a manager lift an exceeded budget with the form, shows a second lift's refusal inline, and refuses a post without the form token", async () => {
    const mgr = await login(await createOperator("manager", "spend-manager"));
    const before = await web("/console/spend", { cookie: mgr.cookie });
    expect(before.text).toContain(`action="/console/spend/budgets/project/${PROJECT}/lift"`);

    const forged = await web(`/console/spend/budgets/project/${PROJECT}/lift`, { method: "POST", cookie: mgr.cookie, form: {} });
    expect(forged.status).toBe(403);
    expect(forged.text).toContain('data-code="csrf_failed"');
    const viewer = await login(await createOperator("viewer", "spend-viewer-2"));
    expect(
      (await web(`/console/spend/budgets/project/${PROJECT}/lift`, { cookie: viewer.cookie, form: { _csrf: viewer.csrf } })).status,
    ).toBe(403);

    const lifted = await web(`/console/spend/budgets/project/${PROJECT}/lift`, { cookie: mgr.cookie, form: { _csrf: mgr.csrf } });
    expect(lifted.status).toBe(303);
    expect(lifted.headers.get("location")).toBe(`/console/spend#budget-project-${PROJECT}`);
    const budgets = (await call("/v1/budgets")).body.budgets as Array<{ id: string; state: string }>;
    expect(budgets.find((b) => b.id === PROJECT)?.state).toBe("lifted");

    const notExceeded = await web("/console/spend/budgets/employee/ada/lift", { cookie: mgr.cookie, form: { _csrf: mgr.csrf } });
    expect(notExceeded.status).toBe(409);
    expect(notExceeded.text).toContain('data-code="conflict"');
  });
});
