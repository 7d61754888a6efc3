import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createOperator } from "../../factories";
import { putEmployee } from "../../factories/org";
import { login, web } from "../../factories/web";

/** The UTC day `back` days before the Worker's clock. */
async function daysAgo(back: number): Promise<string> {
  const now = new Date((await call("/v1/admin/clock")).body.now);
  return new Date(now.getTime() - back * 86_400_000).toISOString().slice(0, 10);
}

/** A ledger row as the spend ledger records a finished job (cost null: the runtime reported no price). */
async function costEntry(employee: string, day: string, cost: number | null, tokens: { input: number; output: number } | null = null) {
  await env.DB.prepare(
    `INSERT INTO cost_entries (job_id, at, day, month, kind, runtime, model, owner_kind, owner_id, employee_id, input_tokens, output_tokens, cost_usd)
     VALUES (?, ?, ?, ?, 'employee_turn', 'claude', 'claude-sonnet-4-6', 'admin', 'plots', ?, ?, ?, ?)`,
  )
    .bind(
      `job_${crypto.randomUUID()}`,
      `${day}T12:00:00.000Z`,
      day,
      day.slice(0, 7),
      employee,
      tokens?.input ?? null,
      tokens?.output ?? null,
      cost,
    )
    .run();
}

/** A prediction-log row as closing a conversation writes it. */
async function scored(employee: string, day: string, error: number) {
  await env.DB.prepare(
    `INSERT INTO prediction_log (agent_id, user_id, conversation_id, composite_error, category, action, detail, timestamp)
     VALUES (?, 'ana', ?, ?, 'moderate', 'none', '{}', ?)`,
  )
    .bind(employee, `conv_${crypto.randomUUID()}`, error, `${day}T09:30:00.000Z`)
    .run();
}

/** The `<figure>` of one plot on the page, or undefined. */
const figure = (html: string, id: string) => new RegExp(`<figure class="plot" id="${id}"[\\s\\S]*?</figure>`).exec(html)?.[0];
const pointCount = (fig: string) => (fig.match(/class="plot-point/g) ?? []).length;

describe("the employee page's cost and prediction-error plots", () => {
  it("plots cost per day and mean prediction error per day over the last 30 days, unknown cost as unknown", async () => {
    await putEmployee("plotter");
    await putEmployee("plotter-other");
    const [d1, d3, d4, d6, old] = await Promise.all([daysAgo(1), daysAgo(3), daysAgo(4), daysAgo(6), daysAgo(40)]);
    await costEntry("plotter", d6, 0.25, { input: 1000, output: 200 });
    await costEntry("plotter", d6, 0.05, { input: 100, output: 20 });
    await costEntry("plotter", d4, 0.1, { input: 500, output: 50 });
    await costEntry("plotter", d3, null, { input: 700, output: 70 }); // a subscription runtime: tokens, no price
    await costEntry("plotter", d1, 0.02, { input: 80, output: 8 });
    await costEntry("plotter", old, 9, { input: 1, output: 1 }); // older than the window
    await costEntry("plotter-other", d1, 5, { input: 1, output: 1 }); // another employee
    await scored("plotter", d6, 0.2);
    await scored("plotter", d6, 0.4);
    await scored("plotter", d3, 0.5);
    await scored("plotter", old, 0.9);
    await scored("plotter-other", d1, 0.7);

    const viewer = await login(await createOperator("viewer", "plot-viewer"));
    const res = await web("/console/employees/plotter", { cookie: viewer.cookie });
    expect(res.status).toBe(200);

    const cost = figure(res.text, "employee-cost-plot");
    expect(cost).toBeDefined();
    // Three priced days; the unpriced day is a gap, not a bar at 0.
    expect(cost).toContain('data-points="3"');
    expect(pointCount(cost!)).toBe(3);
    expect(cost).toContain(`${d6}: $0.30`);
    expect(cost).toContain(`${d1}: $0.02`);
    expect(cost).not.toContain(`${d3}: $`);
    expect(cost).toMatch(new RegExp(`<tr data-day="${d3}"><th scope="row">${d3}</th><td><span class="unknown">unknown</span>`));
    expect(cost).not.toContain("$9.00");
    expect(cost).not.toContain("$5.00");
    expect(cost).toMatch(
      /role="img" aria-label="Cost \(USD\) per day, [^"]*4 of 30 days measured; lowest \$0\.02, highest \$0\.30; 1 day unknown"/,
    );
    expect(res.text).toContain("1 reported no price, so their cost is");

    // The unpriced day still shows what it did report: its tokens.
    const tokens = figure(res.text, "employee-tokens-plot");
    expect(tokens).toBeDefined();
    expect(pointCount(tokens!)).toBe(4);
    expect(tokens).toContain(`${d3}: 770`);

    const errors = figure(res.text, "employee-prediction-plot");
    expect(errors).toBeDefined();
    expect(pointCount(errors!)).toBe(2);
    expect(errors).toContain(`${d6}: 0.300`);
    expect(errors).toContain(`${d3}: 0.500`);
    expect(errors).not.toContain("0.900");
    expect(errors).not.toContain("0.700");
    // Two known days that are not neighbours: no line joins them across the gap.
    expect(errors).not.toContain('class="plot-line"');
    expect(errors).toContain('viewBox="0 0 480 180" width="100%"');
  });

  it("says the cost is unknown, never $0, for an employee whose runtime reports no price", async () => {
    await putEmployee("unpriced");
    await costEntry("unpriced", await daysAgo(2), null, { input: 300, output: 30 });
    await costEntry("unpriced", await daysAgo(1), null, null);
    const viewer = await login(await createOperator("viewer", "plot-viewer-2"));
    const res = await web("/console/employees/unpriced", { cookie: viewer.cookie });
    expect(res.status).toBe(200);
    expect(figure(res.text, "employee-cost-plot")).toBeUndefined();
    expect(res.text).toMatch(/<p id="employee-cost-unknown">Cost per day: <span class="unknown">unknown<\/span>/);
    expect(res.text).not.toContain("$0");
    const tokens = figure(res.text, "employee-tokens-plot");
    expect(pointCount(tokens!)).toBe(1);
    expect(tokens).toContain(": 330");
  });

  it("shows a fresh employee's page with the empty states and no plot", async () => {
    await putEmployee("fresh-plots");
    const viewer = await login(await createOperator("viewer", "plot-viewer-3"));
    const res = await web("/console/employees/fresh-plots", { cookie: viewer.cookie });
    expect(res.status).toBe(200);
    expect(res.text).toContain("No job of this employee reported usage or a price in the last 30 UTC days.");
    expect(res.text).toContain("No conversation of this employee was scored in the last 30 UTC days.");
    expect(res.text).not.toContain('class="plot"');
  });
});
