// Topology tick (issue 7): the D5 driver tick over 10k, 100k and 1M settled goal tasks in local D1,
// beside a bare `SELECT assigned_to, task_class, COUNT(*) FROM tasks GROUP BY assigned_to, task_class`
// over the same table in the same run. Goal: the tick within 1.2× the bare query at every size, i.e. a
// rate ratio (bare ms / tick ms) of at least 0.83.
//
// Tasks are generated inside D1 (a recursive CTE through the product's D1 binding), 20 employees under
// 4 leads, 10 classes, all settled within the last 13 days: every task is evidence (the worst case for
// the tick) and none qualifies for a proposal, so every tick runs the whole evidence path instead of
// stopping at "one proposal per tick period".
//
//   cold   the first tick after the day counters are reset (as when D5 is first enabled): a full fold of
//          the window into topology_evidence_days under the write lease (timed as ms.fold), then evaluates
//   warm     a later tick with nothing else changed since the tick before (the first measured row of a
//            size; the steady state): one D1 batch claims the tick, moves the fold watermark when a
//            10-minute step is due, and reads the evidence (the window's day counters plus the tasks
//            settled after the watermark), reusing the previous tick's read of everything else (the
//            inputs' token is unchanged: src/topology/inputs.ts); nothing to write, so no write lease
//   changed  a tick right after a change to what it reads besides the evidence (here the approvals
//            section written again, untimed): the same batch reads everything again (the second row)
//   bare   the GROUP BY above, straight to the D1 binding (one round trip from Node)
//
// Ticks and bare queries run one at a time, interleaved, so machine load weighs on both alike; each
// "rate" is 1000 / median ms of sequential calls. `BENCH_TOPOLOGY_SIZES=10000,50000` overrides the sizes.
import { round } from "./lib/load.mjs";

const AGENTS = 20; // a0..a19 under lead0..lead3; 10 task classes
const CHUNK = 50_000;
const BARE_SQL = `SELECT assigned_to, task_class, COUNT(*) AS n FROM tasks GROUP BY assigned_to, task_class`;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

/** Appends settled goal tasks n in [from, to), spread over the 13 days before `nowMs`. */
async function seed(db, from, to, nowMs) {
  for (let start = from; start < to; start += CHUNK) {
    const end = Math.min(to, start + CHUNK) - 1;
    await db
      .prepare(
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

/** A sequential-call "stats" object in the shape the harness tables read. */
function stats(samples, label) {
  const p50 = median(samples);
  return {
    ...(label ? { label } : {}),
    connections: 1,
    rate: round(1000 / p50, 1),
    requests: samples.length,
    ok: samples.length,
    non_2xx: 0,
    errors: 0,
    timeouts: 0,
    p50_ms: round(p50, 1),
    p99_ms: round(pct(samples, 99), 1),
  };
}

export default {
  name: "topology-tick",
  async run(ctx) {
    const { product, options, log } = ctx;
    const env = await product.env();
    const sizes = process.env.BENCH_TOPOLOGY_SIZES
      ? process.env.BENCH_TOPOLOGY_SIZES.split(",").map(Number)
      : options.smoke
        ? [2_000]
        : [10_000, 100_000, 1_000_000];
    const runs = options.smoke ? 2 : 31; // measured pairs per size (after one warm-up pair): a p50 of 9 moved the 10k ratio by ±0.1 run to run
    const ok = async (path, body, method) => {
      const res = await product.api(path, { method, body });
      if (res.status >= 300) throw new Error(`${method ?? "POST"} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };

    // A decider (so the broker is available and the tick really evaluates) and the org.
    await ok("/v1/admin/operators", { name: "bench-topology-manager", role: "manager" });
    const employee = (name, extra = {}) => ({ name, runtime: "offline", model: { preferred: "offline" }, ...extra });
    for (let l = 0; l < 4; l++) await ok(`/v1/employees/lead${l}`, employee(`lead${l}`), "PUT");
    for (let a = 0; a < AGENTS; a++) await ok(`/v1/employees/a${a}`, employee(`a${a}`, { reports_to: `lead${a % 4}` }), "PUT");
    await ok("/v1/config/topology_evolution", { enabled: true }, "PUT");
    const nowMs = Date.parse((await ok("/v1/admin/clock", undefined, "GET")).now);

    const tick = async () => {
      const started = performance.now();
      const { summary } = await ok("/v1/admin/ticks/topology", {});
      return { ms: performance.now() - started, summary };
    };
    // A write the tick must see (the approvals section: broker availability), made before an untimed tick.
    const changeInputs = () => ok("/v1/config/approvals", {}, "PUT");
    const checks = [];
    /** The tick saw every task (folded day counters plus the tasks after the fold add up to the table) and proposed nothing. */
    const covered = async (size, summary) => {
      const folded = await env.DB.prepare("SELECT COALESCE(SUM(samples), 0) AS n FROM topology_evidence_days").first();
      const raw = await env.DB.prepare(
        "SELECT COUNT(*) AS n FROM tasks WHERE settled_at >= (SELECT folded_through FROM topology_driver WHERE id = 1)",
      ).first();
      return summary.ran && summary.proposal?.reason === "no_candidate" && folded.n + raw.n === size
        ? null
        : `tick ${JSON.stringify(summary.proposal ?? summary)}; folded ${folded.n} + unfolded ${raw.n} ≠ ${size}`;
    };

    /** A measured tick on the path it stands for: so many batches, its inputs reused or read, no write lease. */
    const quietProblem = (summary, inputs, batches) =>
      summary.batches === batches && summary.ms?.read !== undefined && summary.ms?.lease === undefined && summary.inputs === inputs
        ? null
        : `tick ran ${summary.batches ?? "?"} batches (expected ${batches}), inputs ${summary.inputs} (expected ${inputs}), ms ${JSON.stringify(summary.ms)}`;

    const rows = [];
    let seeded = 0;
    for (const size of sizes) {
      log(`${size.toLocaleString("en")} settled tasks`);
      const seedStarted = performance.now();
      await seed(env.DB, seeded, size, nowMs);
      seeded = size;
      const seedMs = performance.now() - seedStarted;
      await env.DB.prepare("ANALYZE").run();
      // Seeded rows are back-dated, so the fold starts over: the cold tick folds all of them.
      await env.DB.batch([
        env.DB.prepare("DELETE FROM topology_evidence_days"),
        env.DB.prepare("UPDATE topology_driver SET folded_from = NULL, folded_through = NULL"),
      ]);
      const cold = await tick();
      const coldProblem = await covered(size, cold.summary);

      /** One measured series: its ticks, the bare queries run right after each, and where the time went. */
      const series = () => ({ ticks: [], bare: [], reads: [], outside: [], problem: null });
      const warm = series();
      const changed = series();
      const floor = [];
      let warmProblem = null;
      let bareProblem = null;
      const sample = async (into, expect, measured) => {
        const t = await tick();
        warmProblem ??= await covered(size, t.summary);
        if (measured) into.problem ??= quietProblem(t.summary, expect.inputs, expect.batches);
        const started = performance.now();
        const b = await env.DB.prepare(BARE_SQL).all();
        const bareMs = performance.now() - started;
        if (b.results.reduce((sum, r) => sum + r.n, 0) !== size) bareProblem ??= `bare GROUP BY counted a different total than ${size}`;
        if (!measured) return;
        into.ticks.push(t.ms);
        into.bare.push(bareMs);
        if (t.summary.ms?.read !== undefined) {
          into.reads.push(t.summary.ms.read);
          into.outside.push(t.ms - t.summary.ms.read);
        }
      };
      for (let i = 0; i <= runs; i++) {
        const measured = i > 0; // the first pass warms both up
        await sample(warm, { inputs: "reused", batches: 1 }, measured);
        // The HTTP floor: an authenticated admin request that does no D1 work of its own (same middleware).
        const floorStarted = performance.now();
        await ok("/v1/admin/clock", undefined, "GET");
        if (measured) floor.push(performance.now() - floorStarted);
        await changeInputs();
        // The token changed: the batch reads the inputs again (one more statement with rows in it).
        await sample(changed, { inputs: "read", batches: 1 }, measured);
      }
      checks.push({
        name: `${size} tasks: every tick covered every task and proposed nothing`,
        ok: !coldProblem && !warmProblem,
        detail: coldProblem ?? warmProblem ?? "",
      });
      checks.push({ name: `${size} tasks: the bare GROUP BY counted every task`, ok: !bareProblem, detail: bareProblem ?? "" });
      checks.push({
        name: `${size} tasks: every measured warm tick reused its inputs, computed its evidence in one batch and took no write lease`,
        ok: !warm.problem,
        detail: warm.problem ?? "",
      });
      checks.push({
        name: `${size} tasks: every measured tick after a change read its inputs again in its one batch and took no write lease`,
        ok: !changed.problem,
        detail: changed.problem ?? "",
      });
      const where = (s) => ({
        "batch p50 ms (claim + reads + evidence)": s.reads.length > 0 ? median(s.reads) : "?",
        "p50 ms outside the batch (HTTP, auth, clock, tick.ran)": s.outside.length > 0 ? round(median(s.outside), 1) : "?",
      });
      rows.push({
        path: `topology tick, ${size.toLocaleString("en")} settled tasks (warm)`,
        product: stats(warm.ticks),
        baseline: stats(warm.bare, "bare GROUP BY, same table"),
        goal: 0.83,
        extra: {
          "cold tick ms (full fold of the window)": round(cold.ms, 1),
          "cold fold ms": cold.summary.ms?.fold ?? "?",
          ...where(warm),
          "HTTP floor p50 ms (GET /v1/admin/clock)": round(median(floor), 1),
          "seed s": round(seedMs / 1000, 1),
        },
      });
      rows.push({
        path: `topology tick, ${size.toLocaleString("en")} settled tasks, right after its inputs changed`,
        product: stats(changed.ticks),
        baseline: stats(changed.bare, "bare GROUP BY, same table"),
        goal: 0.83,
        extra: where(changed),
      });
    }
    return {
      rows,
      checks,
      notes: [
        "rate = 1000 / median ms of sequential calls (ticks over HTTP, the bare query through the D1 binding); ratio = bare ms / tick ms, so the goal 'tick within 1.2× the bare query' is ratio ≥ 0.83",
        "a warm tick over HTTP is two sequential D1 round trips (the tick's one batch of three statements, the tick.ran event), plus the test clock and the credential when their per-isolate caches (1 s, 4 s) have lapsed, against the bare query's one; the batch reads the window's day counters and the tasks after the watermark (at most 20 minutes of settles): flat in N, while the bare query grows with N",
        "a tick right after its inputs changed is three round trips: its first batch finds the inputs' token changed, a second of thirteen statements reads everything, then tick.ran; in use the token changes only with what the tick reads (topology_reroute approvals, proposals, overrides, operator tokens, reports_to, the approvals and topology_evolution sections), and the first tick in a fresh isolate reads everything too",
        "the seeded tasks span 13 days, so the window's partial first day (counted from tasks, not counters) is empty here; in steady use it holds up to one day of settles",
      ],
    };
  },
};
