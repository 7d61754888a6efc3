// Inbox growth (issue 6, item 4): lease + complete with 0, 10k and 100k finished jobs kept in the
// RunnerInbox, each against "DO RPC + D1 insert". Pruning (runner.retain_finished_hours) bounds the
// count in practice; this shows that what is kept does not slow leasing down.
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

const LEVELS = [0, 10_000, 100_000];
const SEED_CHUNK = 20_000;

/** Finished jobs written straight into the inbox's SQLite (as a long-running inbox would hold them). */
async function seedFinished(product, from, to) {
  const now = Date.now();
  for (let start = from; start < to; start += SEED_CHUNK) {
    const end = Math.min(to, start + SEED_CHUNK);
    await product.inboxSql(
      `WITH RECURSIVE seq(n) AS (SELECT ? UNION ALL SELECT n + 1 FROM seq WHERE n < ?)
       INSERT INTO jobs (job_id, kind, runtime, payload, owner, status, attempt, max_attempts, lease_id, leased_by, result,
                         enqueued_at, updated_at, acked, max_queue_ms, leased_at, finished_at)
       SELECT printf('job_seed%08x', n), 'utility', 'offline', '{"runtime":"offline","prompt":"seed","timeout_ms":60000}',
              '{"kind":"admin","id":"bench-seed"}', 'completed', 1, 3, 'lease_seed', 'rnr_seed', '{"text":"seed"}',
              ?, ?, 1, 86400000, ?, ?
       FROM seq`,
      start,
      end - 1,
      now,
      now,
      now,
      now,
    );
  }
}

export default {
  name: "inbox-growth",
  async run(ctx) {
    const { product, options, log } = ctx;
    const tracker = createTracker();
    const runnerToken = await createRunnerToken(product, "bench-growth");
    const estimate = await ctx.baselineRoute("doRpcD1Insert", { duration: 2 });
    const rows = [];
    let seeded = 0;
    for (const level of LEVELS) {
      log(`${level} finished jobs`);
      await seedFinished(product, seeded, level);
      seeded = level;
      await topUp(product, tracker, jobsFor(estimate.rate, options.duration) - (await queuedInInbox(product)), options.connections);
      await waitForInbox(product, tracker);
      const [{ n: finished }] = await product.inboxSql(`SELECT COUNT(*) AS n FROM jobs WHERE finished_at IS NOT NULL`);
      tracker.leaseLatency.length = 0;
      const measured = await ctx.compare("doRpcD1Insert", { url: product.url, requests: leaseCompleteRequests(runnerToken, tracker) });
      rows.push({
        path: `lease + complete, ${finished} finished jobs in the inbox`,
        ...measured,
        extra: { "lease p50 / p99 ms": `${percentile(tracker.leaseLatency, 50)} / ${percentile(tracker.leaseLatency, 99)}` },
      });
    }
    await finishStragglers(product, runnerToken, tracker);
    const checks = await verifyRun(product, tracker);
    checks.push(dryQueueCheck(tracker, options.smoke));
    return {
      rows,
      checks,
      notes: [
        `lease p50 from the smallest to the largest inbox: ${rows.map((r) => r.extra["lease p50 / p99 ms"].split(" / ")[0]).join(" → ")} ms; ratio to the baseline: ${rows.map((r) => r.ratio ?? (r.product.rate / r.baseline.rate).toFixed(2)).join(" → ")}`,
      ],
    };
  },
};
