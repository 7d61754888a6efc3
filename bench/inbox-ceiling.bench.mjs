// One inbox's ceiling (issue 6, item 5): lease + complete against "DO RPC + D1 insert" as the number of
// concurrent runner loops grows; the highest jobs/s is what one RunnerInbox sustains on this machine.
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

export default {
  name: "inbox-ceiling",
  async run(ctx) {
    const { product, options, log } = ctx;
    const levels = options.smoke ? [2, 16] : [2, 8, 32, 64];
    const tracker = createTracker();
    const runnerToken = await createRunnerToken(product, "bench-ceiling");
    const rows = [];
    for (const connections of levels) {
      log(`${connections} runner loops`);
      const estimate = await ctx.baselineRoute("doRpcD1Insert", { connections, duration: 2 });
      await topUp(product, tracker, jobsFor(estimate.rate, options.duration) - (await queuedInInbox(product)), Math.min(connections, 16));
      await waitForInbox(product, tracker);
      tracker.leaseLatency.length = 0;
      const completedBefore = tracker.completed.size;
      const measured = await ctx.compare(
        "doRpcD1Insert",
        { url: product.url, requests: leaseCompleteRequests(runnerToken, tracker) },
        connections,
      );
      rows.push({
        path: `lease + complete, ${connections} loops`,
        ...measured,
        extra: {
          "jobs/s": Math.round(((tracker.completed.size - completedBefore) / measured.product.duration_s) * 10) / 10,
          "lease p50 / p99 ms": `${percentile(tracker.leaseLatency, 50)} / ${percentile(tracker.leaseLatency, 99)}`,
        },
      });
    }
    await finishStragglers(product, runnerToken, tracker);
    const checks = await verifyRun(product, tracker);
    checks.push(dryQueueCheck(tracker, options.smoke));
    const best = rows.reduce((a, b) => (b.extra["jobs/s"] > a.extra["jobs/s"] ? b : a));
    return {
      rows,
      checks,
      notes: [
        `ceiling on this machine: ${best.extra["jobs/s"]} jobs/s (${best.product.rate} requests/s) at ${best.product.connections} loops; the baseline's best at the same concurrencies: ${Math.max(...rows.map((r) => r.baseline.rate))} requests/s`,
      ],
    };
  },
};
