/**
 * The capability matrix end to end (issue 22, "Tests"): the Worker under wrangler's test harness, the
 * real local-runner process, and the fake claude playing two claude models on the shipped suites
 * (`evals/`). The operator measures the executor role, weak vs strong, with `POST /v1/eval/matrix`;
 * the runs go out as `eval_case` jobs, the runner plays each case live in its isolated dir, the Worker
 * scores the assertions, writes the report and `role_model_matrix.toml`, and the next goal's team takes
 * the matrix winner for its executor instead of the employee's preferred model. Before any matrix
 * exists, the same goal gets exactly the team it got before the feature (the control).
 *
 * Which model passes what is set per model and per case, the way a real CLI gets its model: from
 * `--model <m>` in the argv the runner built (FAKE_EVAL_WRITE_FILES_<CASE>_MODEL_<MODEL> and
 * FAKE_EVAL_ANSWER_TEXT_<CASE>_MODEL_<MODEL>, lib/fake-common.mjs evalEnv). Nothing here is scripted
 * on the Worker side: every verdict comes from the case's own `[[expect]]` assertions.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../runner/helpers/processes";
import { startRunner, startWorker, type RunnerProcess } from "./stack";

type Stack = Awaited<ReturnType<typeof startWorker>>;

const STRONG = { runtime: "claude", model: "claude-opus-4-5" } as const;
const WEAK = { runtime: "claude", model: "claude-haiku-4-5" } as const;
/** The employee's own model: what an unset executor runs without a matrix. */
const PREFERRED = "claude-sonnet-4-6";

/**
 * The design, and why these numbers. Every cell here is one (domain, executor, claude, model); the
 * fakes are deterministic, so each case scores 0 or 1 and the cell is a single cluster (its domain):
 * its SE is the plain CLT one, s/√n, and its achieved MDE (z₀.₉₇₅ + z₀.₈)·SE = 2.80·SE.
 * - The strong model passes all but one case per domain (config-edits 6/7, log-triage 5/6), the weak
 *   one exactly one (1/7, 1/6). Neither can be perfect: identical observations have no spread, a
 *   zero-width interval, and the verdict is `degenerate_interval`, unresolved (seed 002).
 * - Then SE = 1/7 ≈ 0.143 (n = 7, p = 6/7 or 1/7) and 1/6 ≈ 0.167 (n = 6, p = 5/6 or 1/6), so the
 *   achieved MDE is 0.400 and 0.467. declared_mde = 0.5 is the round figure above both, so every cell
 *   resolves (a smaller one, e.g. the default 0.10, would leave them `mde_not_resolved`).
 * - α = 0.05 and power = 0.8 stay at their defaults, and the pass line at 0.5: the strong intervals'
 *   low ends are 6/7 − 1.96/7 ≈ 0.577 and 5/6 − 1.96/6 ≈ 0.507 (above it: `pass`), the weak ones' high
 *   ends 1/7 + 1.96/7 ≈ 0.423 and 1/6 + 1.96/6 ≈ 0.493 (below it: `fail`).
 * - The composer pools a model's cells n-weighted: 11/13 ≈ 0.846 against 2/13 ≈ 0.154, a lead of 0.69,
 *   more than the declared MDE, so it is a winner and not a tie.
 * - K = 1: the cell's unit is the case (its repeats are averaged first), and deterministic repeats
 *   agree, so K > 1 would multiply the jobs without changing n or the SE.
 */
const DESIGN = { declared_mde: 0.5 };

interface Play {
  files?: Record<string, string>;
  answer?: string;
}

const ACCESS_5XX_WINDOW = "window: 2026-11-30T14:02:01Z/2026-11-30T14:05:00Z";

/**
 * What the strong model does on each shipped case: the files and reply its `[[expect]]` assertions
 * ask for, except two misses, one per domain. remove-debug-log needs debug.log deleted, and a fake
 * only writes (it adds *.log to .gitignore but the log stays: `file_absent` fails); slowest-endpoint
 * gets the request count's answer instead of the latency's (the case's own gold-FAIL transcript).
 */
const STRONG_PLAYS: Record<string, Play> = {
  "config-edits/compat-date": {
    files: { "wrangler.toml": 'name = "billing-worker"\nmain = "src/index.ts"\ncompatibility_date = "2026-11-01"\n' },
    answer: "Set compatibility_date to 2026-11-01 (it was 2026-06-01).",
  },
  "config-edits/cron-trigger": {
    files: {
      "wrangler.toml":
        'name = "billing-worker"\nmain = "src/index.ts"\ncompatibility_date = "2026-06-01"\n\n[triggers]\ncrons = ["0 * * * *", "*/5 * * * *"]\n',
    },
    answer: "Added the five-minute trigger beside the hourly one.",
  },
  "config-edits/env-example": {
    files: { ".env.example": "API_URL=\nAPI_TOKEN=\n" },
    answer: "Created .env.example with API_URL and API_TOKEN left empty.",
  },
  "config-edits/gitignore-build-output": {
    files: { ".gitignore": "node_modules/\n.dev.vars\ndist/\n.wrangler/\n" },
    answer: "Added dist/ and .wrangler/ to .gitignore.",
  },
  "config-edits/node-engine": {
    files: {
      "package.json":
        '{\n  "name": "billing-worker",\n  "version": "1.4.0",\n  "private": true,\n  "engines": { "node": ">=22" },\n  "scripts": { "test": "vitest run" }\n}\n',
    },
    answer: 'Raised engines.node to ">=22".',
  },
  "config-edits/remove-debug-log": {
    files: { ".gitignore": "node_modules/\n*.log\n" },
    answer: "Added *.log to .gitignore.",
  },
  "config-edits/tsconfig-strict": {
    files: {
      "tsconfig.json":
        '{\n  "compilerOptions": {\n    "target": "es2022",\n    "module": "es2022",\n    "moduleResolution": "bundler",\n    "strict": true,\n    "noUncheckedIndexedAccess": true\n  }\n}\n',
    },
    answer: 'Turned on "strict" and "noUncheckedIndexedAccess".',
  },
  "log-triage/count-5xx": {
    files: { "answer.txt": "4\n" },
    answer: "Four responses in logs/access.log have a 5xx status.\n5xx: 4",
  },
  "log-triage/fix-failing-test": {
    files: { "src/sum.ts": "export function sum(a: number, b: number): number {\n  return a + b;\n}\n" },
    answer: "sum subtracted; it adds now. The test is unchanged.",
  },
  "log-triage/postmortem-sections": {
    files: {
      "postmortem.md":
        "# Search outage\n\n## Impact\nFour 5xx responses from 14:02:01Z to 14:05:00Z.\n\n## Root cause\nThe search backend stopped answering.\n\n## Action items\n- Alert on /v1/search latency.\n",
    },
    answer: "Wrote postmortem.md.",
  },
  "log-triage/redact-emails": {
    files: { "logs/app.redacted.log": "14:01:12 invite sent from [email] to [email]\n14:03:40 password reset for [email]\n" },
    answer: "Wrote logs/app.redacted.log.",
  },
  "log-triage/slowest-endpoint": {
    answer: "slowest: /v1/tasks\n/v1/tasks has the most requests in the window (5).",
  },
  "log-triage/utc-window": {
    answer: `${ACCESS_5XX_WINDOW}\nFirst 5xx: GET /v1/search 503; last: GET /v1/search 504.`,
  },
};
/** The weak model's only passes, one per domain (it plays these as the strong one does); elsewhere it writes nothing and says `Done.`. */
const WEAK_PASSES = ["config-edits/gitignore-build-output", "log-triage/utc-window"];

const envSuffix = (id: string) => id.toUpperCase().replace(/[^A-Z0-9]/g, "_");

/** The fake CLIs' settings: per case and per model, nothing for any other call. */
function playsEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  const plays: [string, Record<string, Play>][] = [
    [STRONG.model, STRONG_PLAYS],
    [WEAK.model, Object.fromEntries(WEAK_PASSES.map((key) => [key, STRONG_PLAYS[key]!]))],
  ];
  for (const [model, byCase] of plays) {
    for (const [key, play] of Object.entries(byCase)) {
      const suffix = `${envSuffix(key.split("/")[1]!)}_MODEL_${envSuffix(model)}`;
      if (play.files) env[`FAKE_EVAL_WRITE_FILES_${suffix}`] = JSON.stringify(play.files);
      if (play.answer) env[`FAKE_EVAL_ANSWER_TEXT_${suffix}`] = play.answer;
    }
  }
  return env;
}

// The gate measures this goal itself (issue 39): its criteria name no files, so it would stay solo.
// This file tests the spec the matrix shapes, not the gate: `always_team` is the seed's test-only mode.
const TEAM_CONFIG = {
  enabled: true,
  gate: "always_team",
  executor_fanout: 1,
  // The executor binds its runtime and leaves its model unset: the matrix's role. The planner binds
  // nothing (the employee's own model; the matrix has no planner cells). The verifier is pinned to
  // another family, as executor ≠ verifier requires.
  roles: { executor: { runtime: "claude" }, verifier: { runtime: "codex", model: "gpt-5.5" } },
};
const GOAL = {
  title: "Tidy the worker config",
  acceptance_criteria: ["wrangler.toml is valid", ".gitignore ignores the build output", "package.json requires Node 22"],
};

interface Call {
  argv: string[];
  prompt: string;
}

describe("the capability matrix on the real runner", () => {
  let stack: Stack;
  let runner: RunnerProcess;
  let argvLog: string;
  let controlSpec: any;
  let runId: string;

  beforeAll(async () => {
    stack = await startWorker();
    const token = (await stack.api("/v1/admin/runners", { body: { name: "eval-matrix-e2e" } })).body.token;
    argvLog = join(mkdtempSync(join(tmpdir(), "crewplane-e2e-argv-")), "calls.jsonl");
    // The runner advertises the runtimes it finds on PATH (the fakes) with every lease, which is how
    // the Worker knows claude is on the host (src/jobs/runner-runtimes.ts, read by the composer).
    runner = startRunner(stack.base, token, { ...playsEnv(), FAKE_ARGV_LOG: argvLog });
    const put = await stack.api("/v1/employees/mio", {
      method: "PUT",
      body: { name: "Mio", runtime: "claude", model: { preferred: PREFERRED } },
    });
    expect(put.status, JSON.stringify(put.body)).toBeLessThan(300);
    expect((await stack.api("/v1/config/team", { method: "PUT", body: TEAM_CONFIG })).status).toBe(200);
  });

  afterAll(async () => {
    await runner?.stop();
    await stack?.close();
    if (argvLog) rmSync(dirname(argvLog), { recursive: true, force: true });
  });

  async function openGoal() {
    const res = await stack.api("/v1/employees/mio/goals", { body: GOAL });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.gate).toMatchObject({ decision: "team" });
    // The spec is what this test is about; the round itself is not run here.
    expect((await stack.api(`/v1/tasks/${res.body.task_id}/settle`, { body: { status: "failed" } })).status).toBeLessThan(300);
    return res.body;
  }

  it("without a matrix, gives the unset executor the employee's preferred model (the control)", async () => {
    expect((await stack.api("/v1/eval/matrix")).status).toBe(404);
    // The runner is up with the fake claude found on PATH, the runtime it offers with every lease: the
    // prior would be read if there were one.
    const starting = await waitFor(
      () =>
        runner
          .output()
          .split("\n")
          .slice(0, -1) // whole lines only
          .filter((l) => l.startsWith('{"') && l.includes('"event":"runner.starting"'))
          .map((l) => JSON.parse(l))[0],
      "the runner to start",
      60_000,
      250,
    );
    expect(starting.runtimes).toContain("claude");
    const goal = await openGoal();
    expect(goal.team_spec.roles.executor).toMatchObject({ runtime: "claude", model: PREFERRED });
    expect(goal.team_spec.roles.planner).toMatchObject({ runtime: "claude", model: PREFERRED });
    expect(goal.team_spec.roles.verifier).toMatchObject({ runtime: "codex", model: "gpt-5.5" });
    controlSpec = goal.team_spec;
  });

  it(
    "measures weak vs strong executors on the shipped suites through the runner, showing progress, and writes a resolved matrix",
    { timeout: 600_000 },
    async () => {
      // The table above covers exactly the shipped cases, so every run below is one the fakes play.
      const suites = (await stack.api("/v1/eval/suites")).body.suites as any[];
      const shipped = suites.flatMap((s) => s.cases.map((c: any) => `${s.domain}/${c.case_id}`)).sort();
      expect(shipped).toEqual(Object.keys(STRONG_PLAYS).sort());
      const total = shipped.length * 2;

      const started = await stack.api("/v1/eval/matrix", {
        body: { roles: ["executor"], compare: { weak: WEAK, strong: STRONG }, k: 1, design: DESIGN },
      });
      expect(started.status, JSON.stringify(started.body)).toBe(202);
      runId = started.body.run_id;
      expect(started.body).toMatchObject({
        status: "running",
        total_jobs: total,
        declared_resolution: { declared_mde: 0.5, alpha: 0.05, power: 0.8 },
      });
      // Up front the run promises only the worst case (half the cases passing, SE 0.5/√(n−1)): 7 and 6
      // cases per domain reach 0.572 and 0.626, not 0.5, so no cell is promised. They resolve below
      // because the measured pass rates sit far from one half — which the declaration cannot know.
      expect(started.body.declared_resolution.cells).toEqual(
        [WEAK.model, STRONG.model].flatMap((model) => [
          expect.objectContaining({
            domain: "config-edits",
            role: "executor",
            runtime: "claude",
            model,
            n: 7,
            achievable_mde: expect.closeTo(0.572, 3),
            resolvable: false,
          }),
          expect.objectContaining({
            domain: "log-triage",
            role: "executor",
            runtime: "claude",
            model,
            n: 6,
            achievable_mde: expect.closeTo(0.626, 3),
            resolvable: false,
          }),
        ]),
      );

      // Progress as an operator sees it, polled until the run ends.
      const seen: any[] = [];
      let last: any;
      const view = await waitFor(
        async () => {
          last = (await stack.api(`/v1/eval/matrix/${runId}`)).body;
          seen.push(last.progress);
          return last.status !== "running" ? last : undefined;
        },
        `eval run ${runId} to end (last: ${JSON.stringify(last?.progress)}; runner: ${runner.output().slice(-2000)})`,
        540_000,
        250,
      );
      expect(view).toMatchObject({ status: "done", progress: { total, done: total, in_flight: 0, pending: 0, skipped: 0 } });
      for (const p of seen) {
        expect(p.done + p.in_flight + p.pending + p.skipped).toBe(total);
        expect(p.in_flight).toBeLessThanOrEqual(4); // [eval] parallel
      }
      // The counters moved: done never went back, and the run was seen part-way.
      const done = seen.map((p) => p.done);
      expect(done).toEqual([...done].sort((a, b) => a - b));
      expect(done.some((d) => d > 0 && d < total)).toBe(true);
      expect(view.spend.reported_usd).toBeGreaterThan(0); // the fake claude reports a cost per call

      // Every run went through the fake claude with its model on the command line, once per case and model.
      const calls = (existsSync(argvLog) ? readFileSync(argvLog, "utf8").trim().split("\n") : [])
        .map((l) => JSON.parse(l) as Call)
        .filter((c) => c.prompt.startsWith("# Eval case "));
      const ran = calls
        .map((c) => `${c.prompt.split("\n", 1)[0]!.slice("# Eval case ".length)} ${c.argv[c.argv.indexOf("--model") + 1]}`)
        .sort();
      expect(ran).toEqual(shipped.flatMap((k) => [`${k} ${STRONG.model}`, `${k} ${WEAK.model}`]).sort());

      // The report: one row per (domain, role, runtime, model), each resolved by the declared design.
      const rows = view.report.cells as any[];
      const row = (domain: string, model: string) => rows.find((c) => c.domain === domain && c.model === model);
      expect(rows).toHaveLength(4);
      const expected = [
        ["config-edits", STRONG.model, 7, 6 / 7, "pass", "above_pass_line"],
        ["log-triage", STRONG.model, 6, 5 / 6, "pass", "above_pass_line"],
        ["config-edits", WEAK.model, 7, 1 / 7, "fail", "below_pass_line"],
        ["log-triage", WEAK.model, 6, 1 / 6, "fail", "below_pass_line"],
      ] as const;
      for (const [domain, model, n, mean, verdict, reason] of expected) {
        const c = row(domain, model);
        expect(c, `${domain} ${model}`).toMatchObject({
          role: "executor",
          runtime: "claude",
          n,
          usable_runs: n,
          unscored_runs: 0,
          verdict,
          verdict_reason: reason,
        });
        expect(c.mean).toBeCloseTo(mean, 9);
        expect(c).toMatchObject({ se_source: "clt_single_cluster", degenerate_interval: false });
        expect(c.ci_low).toBeLessThan(c.mean);
        expect(c.ci_high).toBeGreaterThan(c.mean);
        expect(c.achieved_mde).toBeLessThanOrEqual(DESIGN.declared_mde);
      }
      // The hand-computed intervals (mean ± 1.96·s/√n): the strong lows and the weak highs.
      expect(row("config-edits", STRONG.model).ci_low).toBeCloseTo((6 - 1.959964) / 7, 4);
      expect(row("log-triage", STRONG.model).ci_low).toBeCloseTo((5 - 1.959964) / 6, 4);
      expect(row("config-edits", WEAK.model).ci_high).toBeCloseTo((1 + 1.959964) / 7, 4);
      expect(row("log-triage", WEAK.model).ci_high).toBeCloseTo((1 + 1.959964) / 6, 4);
      // Δ(executor) over the 13 paired cases, and McNemar on the discordant pairs (9 strong-only, 0 weak-only).
      const executorDelta = (view.report.bottleneck.deltas as any[]).find((d) => d.role === "executor");
      expect(executorDelta.delta).toBeCloseTo(9 / 13, 9);
      expect(executorDelta.mcnemar).toMatchObject({ strong_only: 9, weak_only: 0, discordant: 9 });
      expect(executorDelta.mcnemar.p_value).toBeCloseTo(2 / 2 ** 9, 12);
      // Only the executor was measured: no role can be named the bottleneck.
      expect(view.report.bottleneck).toMatchObject({ verdict: "unresolved", reason: "fewer_than_two_roles" });

      // The matrix file the composer reads: this run's, the header's design, the four cells as reported.
      const matrix = (await stack.api("/v1/eval/matrix")).body;
      expect(matrix.run_id).toBe(runId);
      expect(matrix.toml).toBe(view.matrix_toml);
      expect(matrix.toml).toContain('planner = "deferred"');
      expect(matrix.matrix.header).toMatchObject({
        declared_mde: 0.5,
        alpha: 0.05,
        power: 0.8,
        k: 1,
        cluster_key: "domain",
        pass_line: 0.5,
      });
      expect(matrix.matrix.cells).toHaveLength(4);
      for (const [domain, model, n, , verdict] of expected) {
        const cell = (matrix.matrix.cells as any[]).find((c) => c.domain === domain && c.model === model);
        const reported = row(domain, model);
        expect(cell).toMatchObject({ role: "executor", runtime: "claude", n, verdict, ci_low: reported.ci_low, ci_high: reported.ci_high });
        expect(cell.mean).toBeCloseTo(reported.mean, 9);
      }
    },
  );

  it("gives the next goal's unset executor the matrix winner, and changes nothing else in its team", async () => {
    expect(runId, "the measurement above must have run").toBeDefined();
    const goal = await openGoal();
    expect(goal.team_spec.roles.executor).toMatchObject({ runtime: "claude", model: STRONG.model });
    // Against the control: the same spec but for the executor's model. The planner, which the matrix
    // does not measure, keeps the employee's model.
    expect({
      ...goal.team_spec,
      roles: { ...goal.team_spec.roles, executor: { ...goal.team_spec.roles.executor, model: PREFERRED } },
    }).toEqual(controlSpec);
  });
});
