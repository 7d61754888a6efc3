// The RunnerInbox partitioned by runtime pool (issue 26, item 4): four runtime pools under mixed load
// against the same load with every job in one inbox. Six runners offer one or two of `claude`, `codex`,
// `grok` and `offline` (two loops each); each loop leases one job without waiting and completes it.
// Modes: the default layout (`[inbox] pools = true`: one inbox per runtime) and `pools = false` (the one
// `fleet` inbox, the layout before issue 26), switched through the config API, in alternating slices.
import { driveRaw, percentile, round, summarize } from "./lib/load.mjs";
import { createRunnerToken, jobsFor } from "./lib/runner-loop.mjs";
import { ADMIN_TOKEN } from "./lib/servers.mjs";

const RUNTIMES = ["claude", "codex", "grok", "offline"];
const OFFERS = [["claude"], ["codex"], ["grok"], ["offline"], ["claude", "codex"], ["grok", "offline"]];
const LOOPS_PER_RUNNER = 2;
const INBOXES = { pools: RUNTIMES.map((r) => `pool:${r}`), single: ["fleet"] };
const RESULT = JSON.stringify({ text: "bench", runtime: "offline", duration_ms: 1 });

export default {
  name: "inbox-pools",
  async run(ctx) {
    const { product, options, log } = ctx;
    const runners = [];
    for (const [i, offer] of OFFERS.entries()) runners.push({ token: await createRunnerToken(product, `bench-pools-${i}`), offer });
    const connections = runners.length * LOOPS_PER_RUNNER;
    const tracker = { submitted: new Set(), handedOut: new Map(), completed: new Set(), leases: new Map(), refused: 0, empty: 0 };
    const raws = { pools: [], single: [] };
    const leaseMs = { pools: [], single: [] };
    const jobsDone = { pools: 0, single: 0 };
    const estimate = await ctx.baselineRoute("doRpcD1Insert", { connections, duration: 2 });
    const rounds = options.smoke ? 1 : 2;
    const slice = options.duration / rounds;
    for (let round = 0; round < rounds; round++) {
      // Alternating which mode goes first, so neither always runs on the fuller inbox or the warmer machine.
      for (const mode of round % 2 === 0 ? ["single", "pools"] : ["pools", "single"]) {
        log(`${mode} round ${round + 1}`);
        await setLayout(product, mode);
        await submit(product, tracker, jobsFor(estimate.rate, slice) - (await queued(product, mode)), connections);
        await waitDelivered(product, tracker, mode);
        const before = tracker.completed.size;
        const sink = { latency: [] };
        raws[mode].push(await driveRaw({ url: product.url, connections, duration: slice, requests: loopRequests(runners, tracker, sink) }));
        leaseMs[mode].push(...sink.latency);
        jobsDone[mode] += tracker.completed.size - before;
      }
    }
    await finishStragglers(product, runners, tracker);
    await setLayout(product, "pools");
    const pools = summarize(raws.pools, { url: product.url, connections });
    const single = summarize(raws.single, { url: product.url, connections });
    const checks = await verify(product, tracker, options.smoke);
    return {
      rows: [
        {
          path: `lease + complete, 4 runtimes, ${runners.length} runners`,
          product: pools,
          baseline: { label: "one fleet inbox (pools = false)", ...single },
          extra: {
            "jobs/s (pools / one)": `${round(jobsDone.pools / pools.duration_s, 1)} / ${round(jobsDone.single / single.duration_s, 1)}`,
            "lease p50 / p99 ms, pools": `${percentile(leaseMs.pools, 50)} / ${percentile(leaseMs.pools, 99)}`,
            "lease p50 / p99 ms, one inbox": `${percentile(leaseMs.single, 50)} / ${percentile(leaseMs.single, 99)}`,
            "empty leases": String(tracker.empty),
          },
        },
      ],
      checks,
      notes: [
        `runners: ${OFFERS.map((o) => o.join("+")).join(", ")}, ${LOOPS_PER_RUNNER} loops each; ${rounds} round(s) of ${slice} s per mode, the first mode alternating; submit spread evenly over ${RUNTIMES.join(", ")}`,
        "the baseline column is the same product with `[inbox] pools = false`, not the baseline Worker",
      ],
    };
  },
};

async function setLayout(product, mode) {
  const res = await product.api("/v1/config/inbox", { method: "PUT", body: mode === "pools" ? {} : { pools: false } });
  if (res.status !== 200) throw new Error(`config: ${res.status} ${JSON.stringify(res.body)}`);
  // Other isolates read config through a 2 s cache.
  await new Promise((r) => setTimeout(r, 2_500));
}

async function submit(product, tracker, amount, connections) {
  if (amount <= 0) return;
  let n = 0;
  const requests = [
    {
      method: "POST",
      path: "/v1/admin/jobs",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      setupRequest: (req) => ({
        ...req,
        body: JSON.stringify({ kind: "utility", runtime: RUNTIMES[n++ % RUNTIMES.length], prompt: "bench" }),
      }),
      onResponse: (status, body) => {
        if (status === 202) tracker.submitted.add(JSON.parse(body).job_id);
      },
    },
  ];
  await driveRaw({ url: product.url, connections: Math.min(connections, amount), amount, requests });
}

async function countIn(product, mode, where) {
  let total = 0;
  for (const name of INBOXES[mode]) total += (await product.inboxSqlIn(name, `SELECT COUNT(*) AS n FROM jobs ${where}`))[0].n;
  return total;
}

const queued = (product, mode) => countIn(product, mode, "WHERE status = 'queued'");

async function waitDelivered(product, tracker, mode, timeoutMs = 180_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let held = 0;
    for (const m of ["pools", "single"]) held += await countIn(product, m, "");
    if (held >= tracker.submitted.size) return;
    if (Date.now() > deadline) throw new Error(`only ${held} of ${tracker.submitted.size} submitted jobs reached an inbox (${mode})`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** One loop per connection, each bound to a runner (two loops per runner): lease one job (wait 0), complete it. */
function loopRequests(runners, tracker, sink) {
  let next = 0;
  return [
    {
      method: "POST",
      path: "/v1/runner/lease",
      setupRequest: (req, context) => {
        context.runner ??= runners[next++ % runners.length];
        context.sentAt = performance.now();
        return {
          ...req,
          headers: { authorization: `Bearer ${context.runner.token}`, "content-type": "application/json" },
          body: JSON.stringify({ capacity: 1, wait_ms: 0, runtimes: context.runner.offer }),
        };
      },
      onResponse: (status, body, context) => {
        sink.latency.push(performance.now() - context.sentAt);
        context.job = null;
        if (status !== 200) return;
        const job = JSON.parse(body).jobs[0];
        if (!job) {
          tracker.empty++;
          return;
        }
        context.job = job;
        tracker.leases.set(job.job_id, { lease_id: job.lease_id, token: context.runner.token });
        tracker.handedOut.set(job.job_id, (tracker.handedOut.get(job.job_id) ?? 0) + 1);
      },
    },
    {
      method: "POST",
      setupRequest: (req, context) => {
        if (!context.job) return null;
        return {
          ...req,
          path: `/v1/runner/jobs/${context.job.job_id}/complete`,
          headers: { authorization: `Bearer ${context.runner.token}`, "content-type": "application/json" },
          body: `{"lease_id":${JSON.stringify(context.job.lease_id)},"result":${RESULT}}`,
        };
      },
      onResponse: (status, _body, context) => {
        if (status === 200) tracker.completed.add(context.job.job_id);
        else tracker.refused++;
      },
    },
  ];
}

async function finishStragglers(product, runners, tracker) {
  for (const [jobId, { lease_id, token }] of tracker.leases) {
    if (tracker.completed.has(jobId)) continue;
    const res = await product.api(`/v1/runner/jobs/${jobId}/complete`, { token, body: { lease_id, result: JSON.parse(RESULT) } });
    if (res.status === 200) tracker.completed.add(jobId);
    else tracker.refused++;
  }
}

/** No job handed out twice, every lease completed, every outbox delivered, and D1 agrees with every inbox. */
async function verify(product, tracker, smoke) {
  const all = [...INBOXES.single, ...INBOXES.pools];
  const deadline = Date.now() + 60_000;
  let pending = 0;
  for (;;) {
    pending = 0;
    for (const name of all) pending += (await product.inboxSqlIn(name, `SELECT COUNT(*) AS n FROM outbox`))[0].n;
    if (pending === 0 || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const { DB } = await product.env();
  const d1 = new Map((await DB.prepare(`SELECT id, status, attempt FROM jobs`).all()).results.map((r) => [r.id, r]));
  let compared = 0;
  const diverged = [];
  for (const name of all) {
    for (const row of await product.inboxSqlIn(name, `SELECT job_id, status, attempt FROM jobs`)) {
      // Only this benchmark's jobs: in a shared run (the smoke of every benchmark) an inbox also holds
      // rows another benchmark seeded straight into its SQLite (inbox-growth's), which D1 never had.
      if (!tracker.submitted.has(row.job_id)) continue;
      compared++;
      const mirror = d1.get(row.job_id);
      if (mirror?.status !== row.status || mirror?.attempt !== row.attempt) diverged.push(row.job_id);
    }
  }
  const twice = [...tracker.handedOut.values()].filter((n) => n > 1).length;
  return [
    { name: "no job handed out twice", ok: twice === 0, detail: `${tracker.handedOut.size} jobs handed out, ${twice} more than once` },
    {
      name: "every lease was completed",
      ok: tracker.refused === 0 && tracker.completed.size === tracker.handedOut.size,
      detail: `${tracker.completed.size} completed of ${tracker.handedOut.size} leased, ${tracker.refused} completions refused`,
    },
    { name: "every inbox's outbox delivered", ok: pending === 0, detail: `${pending} notices pending over ${all.length} inboxes` },
    {
      name: "D1 agrees with every inbox",
      ok: diverged.length === 0,
      detail: `${compared} inbox jobs of the ${tracker.submitted.size} this benchmark submitted compared, ${diverged.length} differ`,
    },
    { name: "the queues never ran dry", ok: smoke || tracker.empty === 0, detail: `${tracker.empty} leases found nothing` },
  ];
}
