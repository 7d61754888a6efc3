// Spend control on the runner's hot path (docs/spend.md): lease + complete as in runner-protocol,
// but every completion reports usage and a price, so each one writes its cost ledger row (in the
// delivery's D1 batch) and, with a `[budgets]` section, runs the budget check after it. The jobs are
// admin diagnostic jobs, which name no employee or project, so the budget is the company's: it counts
// every job. The limit is never reached, so what is measured is the steady state: no crossing.
import { percentile } from "./lib/load.mjs";
import {
  createRunnerToken,
  createTracker,
  dryQueueCheck,
  finishStragglers,
  jobsFor,
  leaseCompleteRequests,
  queuedInInbox,
  topUp,
  verifyRun,
  waitForInbox,
} from "./lib/runner-loop.mjs";

const PRICED = {
  text: "[offline runtime] bench",
  runtime: "offline",
  duration_ms: 1,
  usage: { input_tokens: 12, output_tokens: 5 },
  cost_usd: 0.0001,
};
const COMPANY_BUDGET = { company: { monthly_usd: 1_000_000_000 } };

export default {
  name: "runner-protocol-budgets",
  async run(ctx) {
    const { product, options, log } = ctx;
    const tracker = createTracker();
    const runnerToken = await createRunnerToken(product, "bench-budgets");
    const setBudgets = async (value) => {
      const res = await product.api("/v1/config/budgets", { method: "PUT", body: value });
      if (res.status !== 200) throw new Error(`[budgets]: ${res.status} ${JSON.stringify(res.body)}`);
    };
    await setBudgets({});
    await topUp(product, tracker, 20, 2);
    await waitForInbox(product, tracker);

    const drain = async (label) => {
      log(label);
      const estimate = await ctx.baselineRoute("doRpcD1Insert", { duration: 2 });
      await topUp(product, tracker, jobsFor(estimate.rate, options.duration) - (await queuedInInbox(product)), options.connections);
      await waitForInbox(product, tracker);
      tracker.leaseLatency.length = 0;
      const completedBefore = tracker.completed.size;
      const result = await ctx.compare("doRpcD1Insert", {
        url: product.url,
        requests: leaseCompleteRequests(runnerToken, tracker, PRICED),
      });
      const completed = tracker.completed.size - completedBefore;
      await finishStragglers(product, runnerToken, tracker, PRICED);
      return {
        path: label,
        ...result,
        goal: 0.8,
        extra: {
          "jobs/s": Math.round((completed / result.product.duration_s) * 10) / 10,
          "lease p50 / p99 ms": `${percentile(tracker.leaseLatency, 50)} / ${percentile(tracker.leaseLatency, 99)}`,
        },
      };
    };

    const rows = [];
    try {
      rows.push(await drain("lease + complete, usage reported, no [budgets]"));
      await setBudgets(COMPANY_BUDGET);
      rows.push(await drain("lease + complete, usage reported, a company budget"));
    } finally {
      // Later benchmarks on the same server run without a budget.
      await setBudgets({});
    }

    const checks = await verifyRun(product, tracker);
    checks.push(dryQueueCheck(tracker, options.smoke));
    const { DB } = await product.env();
    const completed = [...tracker.completed];
    const [{ n: withRow }] = (
      await DB.prepare(`SELECT COUNT(*) AS n FROM cost_entries WHERE job_id IN (SELECT value FROM json_each(?))`)
        .bind(JSON.stringify(completed))
        .all()
    ).results;
    checks.push({
      name: "every priced completion has its ledger row",
      ok: withRow === completed.length,
      detail: `${withRow} cost rows for ${completed.length} completed jobs`,
    });
    const [{ n: crossings }] = (await DB.prepare(`SELECT COUNT(*) AS n FROM events WHERE type LIKE 'budget.%'`).all()).results;
    checks.push({ name: "the budget was never crossed", ok: crossings === 0, detail: `${crossings} budget events` });
    return {
      rows,
      checks,
      notes: [
        "Compare the ratios with runner-protocol's lease + complete row (no usage: no ledger row, no check). The first row adds the ledger row and the month's totals to each delivery; the second the budget check after each job (a cached [budgets] read and the totals the delivery returned: no D1 read while no budget is near its warning ratio).",
      ],
    };
  },
};
