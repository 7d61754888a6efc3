// Runner-protocol benchmark: submit N diagnostic jobs through the dispatch queue, then drain them
// with C concurrent runner loops (lease → complete) against the Worker under wrangler's test harness.
// Reports throughput and latency percentiles, and checks that no job was handed out twice.
// Usage: npm run bench -- [--jobs 200] [--concurrency 8]
import { parseArgs } from "node:util";
import { createTestHarness } from "wrangler";

const { values } = parseArgs({ options: { jobs: { type: "string", default: "200" }, concurrency: { type: "string", default: "8" } } });
const JOBS = Number(values.jobs);
const CONCURRENCY = Number(values.concurrency);
const ADMIN = "bench-admin-token";

const server = createTestHarness({
  root: new URL("..", import.meta.url).pathname,
  workers: [{ configPath: "./wrangler.toml", vars: { ENVIRONMENT: "development" }, secrets: { ADMIN_TOKEN: ADMIN } }],
});
const { url } = await server.listen();
await server.getWorker().applyD1Migrations("DB");
const base = url.toString().replace(/\/$/, "");

async function post(path, body, token = ADMIN) {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 10) / 10 : null;
};

try {
  const runnerToken = (await post("/v1/admin/runners", { name: "bench" })).body.token;

  const submitLatency = [];
  const submitStart = performance.now();
  for (let i = 0; i < JOBS; i++) {
    const t = performance.now();
    const res = await post("/v1/admin/jobs", { kind: "utility", runtime: "offline", prompt: `bench ${i}` });
    if (res.status !== 202) throw new Error(`submit ${res.status} ${JSON.stringify(res.body)}`);
    submitLatency.push(performance.now() - t);
  }
  const submitMs = performance.now() - submitStart;

  const leaseLatency = [];
  const completeLatency = [];
  const seen = new Map();
  let done = 0;
  const drainStart = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      let idle = 0;
      while (done < JOBS && idle < 20) {
        const t = performance.now();
        const { body } = await post("/v1/runner/lease", { capacity: 1, wait_ms: 500, runtimes: ["offline"] }, runnerToken);
        leaseLatency.push(performance.now() - t);
        if (body.jobs.length === 0) {
          idle++;
          continue;
        }
        idle = 0;
        for (const job of body.jobs) {
          seen.set(job.job_id, (seen.get(job.job_id) ?? 0) + 1);
          const c = performance.now();
          const res = await post(
            `/v1/runner/jobs/${job.job_id}/complete`,
            { lease_id: job.lease_id, result: { text: "ok", runtime: "offline" } },
            runnerToken,
          );
          completeLatency.push(performance.now() - c);
          if (res.status === 200) done++;
        }
      }
    }),
  );
  const drainMs = performance.now() - drainStart;

  const doubles = [...seen.values()].filter((n) => n > 1).length;
  console.log(
    JSON.stringify(
      {
        jobs: JOBS,
        concurrency: CONCURRENCY,
        completed: done,
        handed_out_twice: doubles,
        submit: { per_s: Math.round((JOBS / submitMs) * 1000), p50_ms: pct(submitLatency, 50), p99_ms: pct(submitLatency, 99) },
        drain: {
          per_s: Math.round((done / drainMs) * 1000),
          lease_p50_ms: pct(leaseLatency, 50),
          lease_p99_ms: pct(leaseLatency, 99),
          complete_p50_ms: pct(completeLatency, 50),
          complete_p99_ms: pct(completeLatency, 99),
        },
      },
      null,
      2,
    ),
  );
  if (done !== JOBS || doubles > 0) process.exitCode = 1;
} finally {
  await server.close();
}
