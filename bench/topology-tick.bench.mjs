// Topology-tick benchmark: the D5 driver tick over N settled goal tasks in local D1, beside a bare
// GROUP BY over the same table in the same run. The Worker runs under wrangler's test harness; tasks
// are generated inside D1 (recursive CTE, through the harness's D1 binding), so seeding 1M rows takes
// seconds, not an HTTP call per task. All tasks are settled inside the 14-day lookback (the worst case
// for the tick: every task is evidence).
//
//   cold tick   POST /v1/admin/ticks/topology right after seeding, with the day counters reset: it folds
//               every whole past day into topology_evidence_days, then runs the evidence query
//   warm tick   the same, later: nothing new to fold; the evidence query sums the window's day counters
//               and counts today's tasks (settled since 00:00 UTC) from the tasks index
//   bare        SELECT assigned_to, task_class, COUNT(*) FROM tasks GROUP BY assigned_to, task_class
//
// Each tick is the whole tick over HTTP (auth, config, driver lease, pending proposals, overrides,
// broker check, fold, evidence, org and held edges, the tick.ran event); the bare query goes straight
// to the D1 binding. The data never qualifies for a proposal, so every tick runs the full evidence
// path instead of stopping at "one proposal per tick period".
// Usage: npm run bench:topology -- [--sizes 10000,100000,1000000] [--runs 7]   (BENCH_DEBUG=1 prints each
// warm tick's per-phase timings)
import { parseArgs } from "node:util";
import { createTestHarness } from "wrangler";

const { values } = parseArgs({
  options: { sizes: { type: "string", default: "10000,100000,1000000" }, runs: { type: "string", default: "7" } },
});
const SIZES = values.sizes.split(",").map(Number);
const RUNS = Number(values.runs);
const ADMIN = "bench-admin-token";
const AGENTS = 20; // a0..a19 under 4 leads; 10 task classes
const CHUNK = 50_000;

const server = createTestHarness({
  root: new URL("..", import.meta.url).pathname,
  workers: [{ configPath: "./wrangler.toml", vars: { ENVIRONMENT: "development" }, secrets: { ADMIN_TOKEN: ADMIN } }],
});
const { url } = await server.listen();
const worker = server.getWorker();
await worker.applyD1Migrations("DB");
const env = await worker.getEnv();
const base = url.toString().replace(/\/$/, "");

async function api(path, body, method = body === undefined ? "GET" : "POST") {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const round = (x) => Math.round(x * 10) / 10;
const ratio = (a, b) => Math.round((a / b) * 100) / 100;

/** Appends settled goal tasks n in [from, to): spread over the last 13 days, so all are in the window. */
async function seed(from, to, nowMs) {
  for (let start = from; start < to; start += CHUNK) {
    const end = Math.min(to, start + CHUNK) - 1;
    await env.DB.prepare(
      `INSERT INTO tasks (id, title, mode, tags, priority, task_class, acceptance_criteria, assignee, assigned_to, routed_by, route,
                          status, retry_count, pause_class, created_by, created_at, settled_at, settled_by)
       WITH RECURSIVE seq(n) AS (SELECT ?1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2)
       SELECT printf('task_%016x', n), 'bench', 'goal', '["c' || ((n / ${AGENTS}) % 10) || '"]', 'medium', 'c' || ((n / ${AGENTS}) % 10), '[]',
              'a' || (n % ${AGENTS}), 'a' || (n % ${AGENTS}), 'hierarchy', '{"policy":"fixed_hierarchy"}',
              CASE WHEN n % 9 = 0 THEN 'failed' WHEN n % 13 = 0 THEN 'needs_human' ELSE 'done' END,
              CASE WHEN n % 17 = 0 THEN 1 ELSE 0 END,
              CASE WHEN n % 9 <> 0 AND n % 13 = 0 THEN 'no_progress' ELSE NULL END,
              'bench', strftime('%Y-%m-%dT%H:%M:%fZ', (?3 - (n % 1123200) * 1000) / 1000.0, 'unixepoch'),
              strftime('%Y-%m-%dT%H:%M:%fZ', (?3 - (n % 1123200) * 1000) / 1000.0, 'unixepoch'), 'bench'
       FROM seq`,
    )
      .bind(start, end, nowMs)
      .run();
  }
}

const BARE_SQL = `SELECT assigned_to, task_class, COUNT(*) AS n FROM tasks GROUP BY assigned_to, task_class`;

async function tick() {
  const t = performance.now();
  const { summary } = await api("/v1/admin/ticks/topology", {});
  return { ms: performance.now() - t, summary };
}

/** The tick saw every task (folded day counters plus raw tasks since the fold add up to the table) and proposed nothing. */
async function check(size, summary) {
  if (!summary.ran || summary.proposal?.reason !== "no_candidate") throw new Error(`unexpected tick: ${JSON.stringify(summary)}`);
  const folded = await env.DB.prepare("SELECT COALESCE(SUM(samples), 0) AS n FROM topology_evidence_days").first();
  const raw = await env.DB.prepare(
    "SELECT COUNT(*) AS n FROM tasks WHERE settled_at >= (SELECT folded_through FROM topology_driver WHERE id = 1)",
  ).first();
  if (folded.n + raw.n !== size) throw new Error(`evidence covers ${folded.n} folded + ${raw.n} raw tasks, not ${size}`);
}

try {
  // A decider (so the broker is available and the tick really evaluates) and the org: 4 leads × 5.
  await api("/v1/admin/operators", { name: "bench-manager", role: "manager" });
  for (let l = 0; l < 4; l++)
    await api(`/v1/employees/lead${l}`, { name: `lead${l}`, runtime: "offline", model: { preferred: "offline" } }, "PUT");
  for (let a = 0; a < AGENTS; a++) {
    await api(
      `/v1/employees/a${a}`,
      { name: `a${a}`, runtime: "offline", model: { preferred: "offline" }, reports_to: `lead${a % 4}` },
      "PUT",
    );
  }
  await api("/v1/config/topology_evolution", { enabled: true }, "PUT");
  const nowMs = Date.parse((await api("/v1/admin/clock")).now);

  const rows = [];
  let seeded = 0;
  for (const size of SIZES) {
    const t0 = performance.now();
    await seed(seeded, size, nowMs);
    seeded = size;
    const seedMs = performance.now() - t0;
    await env.DB.prepare("ANALYZE").run();
    // Seeded rows are back-dated, so the fold starts over: the cold tick folds all of them.
    await env.DB.batch([
      env.DB.prepare("DELETE FROM topology_evidence_days"),
      env.DB.prepare("UPDATE topology_driver SET folded_from = NULL, folded_through = NULL"),
    ]);
    const cold = await tick();
    await check(size, cold.summary);

    const warm = [];
    const bare = [];
    // Interleaved, after one warm-up of each, so cache state and machine load hit both alike.
    for (let i = 0; i <= RUNS; i++) {
      const w = await tick();
      if (process.env.BENCH_DEBUG) console.log(JSON.stringify(w.summary.ms), JSON.stringify(w.summary.proposal.ms), Math.round(w.ms));
      await check(size, w.summary);
      const t = performance.now();
      const b = await env.DB.prepare(BARE_SQL).all();
      const bareMs = performance.now() - t;
      if (b.results.reduce((s, r) => s + r.n, 0) !== size) throw new Error("bare query miscounted");
      if (i === 0) continue;
      warm.push(w.ms);
      bare.push(bareMs);
    }
    const row = {
      tasks: size,
      seed_s: round(seedMs / 1000),
      cold_tick_ms: round(cold.ms),
      warm_tick_ms: round(median(warm)),
      bare_ms: round(median(bare)),
      cold_over_bare: ratio(cold.ms, median(bare)),
      warm_over_bare: ratio(median(warm), median(bare)),
    };
    rows.push(row);
    console.log(JSON.stringify(row), JSON.stringify({ cold: cold.summary.ms, cold_propose: cold.summary.proposal.ms }));
  }
  console.log("\n| tasks | cold tick ms (folds all) | warm tick p50 ms | bare GROUP BY p50 ms | cold / bare | warm / bare |");
  console.log("| ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const r of rows) {
    console.log(
      `| ${r.tasks.toLocaleString("en")} | ${r.cold_tick_ms} | ${r.warm_tick_ms} | ${r.bare_ms} | ${r.cold_over_bare} | ${r.warm_over_bare} |`,
    );
  }
} finally {
  await server.close();
}
