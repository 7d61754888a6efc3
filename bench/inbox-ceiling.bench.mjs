// One inbox's ceiling (issue 6, item 5): lease + complete against "DO RPC + D1 insert" as the number of
// concurrent runner loops grows; the highest jobs/s is what one RunnerInbox sustains on this machine.
import { drive, percentile } from "./lib/load.mjs";
import {
  createRunnerToken,
  finishStragglers,
  createTracker,
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
    let emptyLeases = 0;
    for (const connections of levels) {
      log(`${connections} runner loops`);
      const base = await ctx.baselineRoute("doRpcD1Insert", connections);
      const needed = Math.ceil((base.rate / 2) * options.duration * 1.5) + 50;
      await topUp(product, tracker, needed - (await queuedInInbox(product)), Math.min(connections, 16));
      await waitForInbox(product, tracker);
      tracker.leaseLatency.length = 0;
      const before = { completed: tracker.completed.size, empty: tracker.emptyLeases };
      const stats = await drive({
        url: product.url,
        connections,
        duration: options.duration,
        requests: leaseCompleteRequests(runnerToken, tracker),
      });
      emptyLeases += tracker.emptyLeases - before.empty;
      rows.push({
        path: `lease + complete, ${connections} loops`,
        product: stats,
        baseline: base,
        extra: {
          "jobs/s": Math.round(((tracker.completed.size - before.completed) / stats.duration_s) * 10) / 10,
          "lease p50 / p99 ms": `${percentile(tracker.leaseLatency, 50)} / ${percentile(tracker.leaseLatency, 99)}`,
        },
      });
    }
    await finishStragglers(product, runnerToken, tracker);
    const checks = await verifyRun(product, tracker);
    checks.push({ name: "the queue never ran dry", ok: emptyLeases === 0, detail: `${emptyLeases} leases found nothing` });
    const best = rows.reduce((a, b) => (b.extra["jobs/s"] > a.extra["jobs/s"] ? b : a));
    return {
      rows,
      checks,
      notes: [
        `ceiling on this machine: ${best.extra["jobs/s"]} jobs/s (${best.product.rate} requests/s) at ${best.product.connections} loops`,
      ],
    };
  },
};
