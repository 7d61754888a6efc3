// Runner protocol throughput (issue 6): submit against "Queue send + D1 insert", lease + complete
// against "DO RPC + D1 insert", at the same concurrency, then checks the jobs rows and events.
import { percentile } from "./lib/load.mjs";
import {
  createRunnerToken,
  finishStragglers,
  createTracker,
  dryQueueCheck,
  jobsFor,
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
    const submit = await ctx.compare("queueD1Insert", { url: product.url, requests: submitRequests(tracker) });
    await waitForInbox(product, tracker);

    log("lease + complete");
    // Enough queued jobs that the loop never runs dry: at most one job per two baseline requests.
    const estimate = await ctx.baselineRoute("doRpcD1Insert", { duration: 2 });
    await topUp(product, tracker, jobsFor(estimate.rate, options.duration) - (await queuedInInbox(product)), options.connections);
    await waitForInbox(product, tracker);
    tracker.leaseLatency.length = 0;
    const completedBefore = tracker.completed.size;
    const drain = await ctx.compare("doRpcD1Insert", { url: product.url, requests: leaseCompleteRequests(runnerToken, tracker) });

    const completedInRun = tracker.completed.size - completedBefore;
    await finishStragglers(product, runnerToken, tracker);
    const checks = await verifyRun(product, tracker);
    checks.push(dryQueueCheck(tracker, options.smoke));
    return {
      rows: [
        { path: "submit: POST /v1/admin/jobs", ...submit, goal: 0.8 },
        {
          path: "lease + complete (requests)",
          ...drain,
          goal: 0.8,
          extra: {
            "jobs/s": Math.round((completedInRun / drain.product.duration_s) * 10) / 10,
            "lease p50 / p99 ms": `${percentile(tracker.leaseLatency, 50)} / ${percentile(tracker.leaseLatency, 99)}`,
          },
        },
      ],
      checks,
    };
  },
};
