// Runner protocol throughput (issue 6): submit against "Queue send + D1 insert", lease + complete
// against "DO RPC + D1 insert", at the same concurrency, then checks the jobs rows and events.
import { drive, percentile } from "./lib/load.mjs";
import {
  createRunnerToken,
  finishStragglers,
  createTracker,
  leaseCompleteRequests,
  queuedInInbox,
  submitRequests,
  topUp,
  verifyRun,
  waitForInbox,
} from "./lib/runner-loop.mjs";

export default {
  name: "runner-protocol",
  async run(ctx) {
    const { product, options, log } = ctx;
    const tracker = createTracker();
    const runnerToken = await createRunnerToken(product);
    await topUp(product, tracker, 20, 2); // warm the submit path, the queue consumer and the inbox

    log("submit");
    const submitBase = await ctx.baselineRoute("queueD1Insert");
    const submit = await drive({
      url: product.url,
      connections: options.connections,
      duration: options.duration,
      requests: submitRequests(tracker),
    });
    await waitForInbox(product, tracker);

    log("lease + complete");
    const drainBase = await ctx.baselineRoute("doRpcD1Insert");
    // Enough queued jobs that the loop never runs dry: at most one job per two baseline requests.
    const needed = Math.ceil((drainBase.rate / 2) * options.duration * 1.5) + 50;
    await topUp(product, tracker, needed - (await queuedInInbox(product)), options.connections);
    await waitForInbox(product, tracker);
    tracker.leaseLatency.length = 0;
    const drain = await drive({
      url: product.url,
      connections: options.connections,
      duration: options.duration,
      requests: leaseCompleteRequests(runnerToken, tracker),
    });

    await finishStragglers(product, runnerToken, tracker);
    const checks = await verifyRun(product, tracker);
    checks.push({
      name: "the queue never ran dry during lease + complete",
      ok: tracker.emptyLeases === 0,
      detail: `${tracker.emptyLeases} leases found nothing`,
    });
    return {
      rows: [
        { path: "submit: POST /v1/admin/jobs", product: submit, baseline: submitBase, goal: 0.6 },
        {
          path: "lease + complete (requests)",
          product: drain,
          baseline: drainBase,
          goal: 0.6,
          extra: {
            "jobs/s": Math.round((tracker.completed.size / drain.duration_s) * 10) / 10,
            "lease p50 / p99 ms": `${percentile(tracker.leaseLatency, 50)} / ${percentile(tracker.leaseLatency, 99)}`,
          },
        },
      ],
      checks,
    };
  },
};
