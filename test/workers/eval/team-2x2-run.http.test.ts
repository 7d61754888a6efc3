import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DEFAULT_DESIGN } from "../../../src/eval/design";
import { loadSuites } from "../../../src/eval/suites";
import { team2x2, type TeamArmRun } from "../../../src/eval/team-2x2";
import { call, createOperator, createRunner } from "../../factories";
import { login, web } from "../../factories/web";
import { completeStage, failStage, type LeasedStage } from "../../factories/scripted-runner";
import { eventsOf } from "../../factories/team";

/**
 * The team 2×2 through the Worker (issue 22, planner cells): per case four real team rounds of one
 * employee, planner weak/strong × executor weak/strong, each in its own isolated workspace, each judged
 * by the fixed verifier reading that workspace. A scripted runner plays the members (here every
 * planner fails at once, so each round ends after one stage: what a round does is the team suites'
 * subject) and the fixed verifier (PASS or FAIL by arm, one reply without a verdict).
 */
const loaded = loadSuites();
if (!loaded.ok) throw new Error("suites do not load");
const teamCases = loaded.suites.flatMap((s) => s.cases).filter((c) => c.team_acceptance !== undefined);
// Two domains, so the difference's interval is clustered over two suites.
const picked = [
  ...teamCases.filter((c) => c.domain === "config-edits").slice(0, 2),
  ...teamCases.filter((c) => c.domain === "log-triage").slice(0, 1),
];
const WEAK = { runtime: "codex", model: "gpt-5.5-mini" } as const;
const STRONG = { runtime: "codex", model: "gpt-5.5" } as const;
const JUDGE = { runtime: "claude", model: "claude-opus-4-5" } as const;

async function armOfSeq(runId: string, seq: number) {
  const row = await env.DB.prepare("SELECT domain, case_id, detail FROM eval_jobs WHERE run_id = ? AND seq = ?")
    .bind(runId, seq)
    .first<any>();
  return {
    domain: row.domain as string,
    case_id: row.case_id as string,
    ...(JSON.parse(row.detail) as { planner: string; executor: string }),
  };
}

describe("the team 2×2", () => {
  it("is refused whole when it cannot be run as asked, before anything is written", async () => {
    const base = { compare: { weak: WEAK, strong: STRONG }, employee_id: "mio" };
    const refusals = [
      { roles: ["planner"], ...base },
      { roles: ["executor"], ...base, team_2x2: { verifier: JUDGE } },
      { roles: ["planner"], compare: base.compare, team_2x2: { verifier: JUDGE } },
      { roles: ["planner"], ...base, team_2x2: { verifier: STRONG } },
      // A budget needs a price for every model the run would use, the fixed verifier's included.
      { roles: ["planner"], ...base, team_2x2: { verifier: JUDGE }, budget_usd: 5 },
    ];
    const price = { input_per_mtok: 1, output_per_mtok: 4 };
    await call("/v1/config/eval", { method: "PUT", body: { prices: { [WEAK.model]: price, [STRONG.model]: price } } });
    await call("/v1/employees/mio", { method: "PUT", body: { name: "Mio", runtime: "claude", model: { preferred: "claude-sonnet-4-6" } } });
    const answers = [];
    for (const body of refusals) answers.push(await call("/v1/eval/matrix", { body }));
    expect(answers.map((a) => a.status)).toEqual([422, 422, 422, 422, 422]);
    expect(answers[3]!.body).toMatchObject({ code: "validation_failed", reason: "verifier_not_independent" });
    expect(answers[4]!.body).toMatchObject({ reason: "price_missing", models: [JUDGE.model] });
    expect(await eventsOf("eval.run_started")).toEqual([]);
  });

  it("runs four isolated team rounds per case, judges each with the fixed verifier, and splits the outcome between the roles", async () => {
    expect(picked.length).toBe(3);
    const runner = await createRunner("eval-2x2");
    await call("/v1/config/team", {
      method: "PUT",
      body: {
        enabled: true,
        roles: { verifier: { runtime: "claude", model: "claude-haiku-4-5" }, utility: { runtime: "claude", model: "claude-haiku-4-5" } },
      },
    });
    const prices = { [WEAK.model]: { input_per_mtok: 1, output_per_mtok: 4 }, [STRONG.model]: { input_per_mtok: 1, output_per_mtok: 4 } };
    await call("/v1/config/eval", {
      method: "PUT",
      body: { parallel: 6, prices: { ...prices, [JUDGE.model]: { input_per_mtok: 10, output_per_mtok: 50 } } },
    });
    await call("/v1/employees/mio", { method: "PUT", body: { name: "Mio", runtime: "claude", model: { preferred: "claude-sonnet-4-6" } } });

    const started = await call("/v1/eval/matrix", {
      body: {
        roles: ["planner"],
        compare: { weak: WEAK, strong: STRONG },
        team_2x2: { verifier: JUDGE },
        employee_id: "mio",
        cases: picked.map((c) => `${c.domain}/${c.id}`),
      },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect(started.body.total_jobs).toBe(12);
    // The resolution is said up front: three rows, the difference bounded by ±1 (SD ≤ 1): 2.80/√2 ≈ 1.98.
    expect(started.body.declared_resolution.team_2x2).toEqual({ rows: 3, achievable_mde: expect.closeTo(1.98, 2) });
    const runId = started.body.run_id as string;

    /**
     * The verifier's verdicts: the strong executor passes; the weak one fails, except that the strong
     * planner rescues it on the first case. The log-triage case's strong/strong arm answers without a
     * verdict: unscored, so that row is incomplete and does not count.
     */
    const first = `${picked[0]!.domain}/${picked[0]!.id}`;
    const silent = `${picked[2]!.domain}/${picked[2]!.id}`;
    const verdictOf = (a: { domain: string; case_id: string; planner: string; executor: string }) => {
      const key = `${a.domain}/${a.case_id}`;
      if (key === silent && a.planner === "strong" && a.executor === "strong") return "I looked at it.";
      const pass = a.executor === "strong" || (key === first && a.planner === "strong");
      return JSON.stringify({ verdict: pass ? "PASS" : "FAIL", reasons: ["read the files"] });
    };

    const keys = new Map<string, { files: Record<string, string> | undefined; planner: string }>();
    const verifierKeys = new Set<string>();
    const deadline = Date.now() + 90_000;
    for (;;) {
      const view = (await call(`/v1/eval/matrix/${runId}`)).body;
      if (view.status !== "running") break;
      if (Date.now() > deadline) throw new Error(`run still running: ${JSON.stringify(view.progress)}`);
      // The round's end reaches the eval through the team's owner handler; the tick is the backstop.
      if ((await call("/v1/admin/ticks/eval", { method: "POST" })).status !== 200) throw new Error("eval tick refused");
      const res = await call("/v1/runner/lease", {
        token: runner.token,
        body: { capacity: 8, wait_ms: 300, runtimes: ["codex", "claude"] },
      });
      for (const job of res.body.jobs as (LeasedStage & { payload: any })[]) {
        if (job.payload.workspace && !String(job.payload.workspace.key).startsWith(`${runId}.`)) {
          await failStage(runner.token, job, "cli_error", "another run's arm");
        } else if (job.kind === "team_stage" && job.payload.workspace) {
          keys.set(job.payload.workspace.key, { files: job.payload.workspace.files, planner: job.payload.model });
          await failStage(runner.token, job, "cli_error", "the planner gave up");
        } else if (job.kind === "utility" && job.payload.workspace) {
          expect(job.payload.output_schema).toBe("verdict");
          expect(job.payload).toMatchObject({ runtime: JUDGE.runtime, model: JUDGE.model });
          verifierKeys.add(job.payload.workspace.key);
          const arm = await armOfSeq(runId, Number(job.payload.workspace.key.split(".").pop()));
          const c = picked.find((p) => p.domain === arm.domain && p.id === arm.case_id)!;
          expect(job.payload.prompt).toContain(c.team_acceptance);
          await completeStage(runner.token, job, {
            text: verdictOf(arm),
            runtime: "claude",
            model: JUDGE.model,
            usage: { input_tokens: 1_000, output_tokens: 100 },
          });
        } else if (job.kind === "utility" && job.payload.output_schema === "acceptance") {
          // The goal loop's own evaluator of a round (none here: every planner failed).
          await failStage(runner.token, job, "cli_error", "not judged here");
        } else {
          await failStage(runner.token, job, "cli_error", "not this test's job");
        }
      }
    }

    // Twelve arms, twelve isolated workspaces, each created from its case's fixture, each judged once.
    expect(keys.size).toBe(12);
    expect(verifierKeys).toEqual(new Set(keys.keys()));
    for (const [key, seen] of keys) {
      const arm = await armOfSeq(runId, Number(key.split(".").pop()));
      const c = picked.find((p) => p.domain === arm.domain && p.id === arm.case_id)!;
      expect(key.startsWith(`${runId}.`)).toBe(true);
      expect(seen.files).toEqual(c.workspace_files);
      expect(seen.planner).toBe(arm.planner === "weak" ? WEAK.model : STRONG.model);
    }

    const view = (await call(`/v1/eval/matrix/${runId}`)).body;
    expect(view.status).toBe("done");
    expect(view.progress).toMatchObject({ total: 12, done: 12, in_flight: 0 });
    // Each arm's reported spend is its verifier's, priced at the verifier's model: 12 × (1000·10 + 100·50)/1e6.
    expect(view.spend.reported_usd).toBeCloseTo(0.18, 6);
    const report = view.report.team_2x2;
    // Rows: case 1 (v_WW 0, v_SW 1, v_WS 1, v_SS 1), case 2 (0, 0, 1, 1); case 3 lacks its SS arm.
    expect(report).toMatchObject({
      complete_rows: 2,
      incomplete_rows: 1,
      arms: { weak_weak: 0, strong_weak: 0.5, weak_strong: 1, strong_strong: 1 },
      planner_shapley: 0.25,
      executor_shapley: 0.75,
    });
    // The statistic is the same pure function the unit tests check by hand; here, its wiring.
    const runs: TeamArmRun[] = picked.flatMap((c) =>
      (["weak", "strong"] as const).flatMap((planner) =>
        (["weak", "strong"] as const).map((executor) => {
          const reply = verdictOf({ domain: c.domain, case_id: c.id, planner, executor });
          const verdict = reply.startsWith("{") ? (JSON.parse(reply).verdict as "PASS" | "FAIL") : ("unscored" as const);
          return { domain: c.domain, case_id: c.id, planner, executor, verdict };
        }),
      ),
    );
    expect(report).toEqual(team2x2(runs, { ...DEFAULT_DESIGN, k: 1 }));
    // The console shows the split as what it is: which role to invest in first.
    const viewer = await login(await createOperator("viewer", "matrix-2x2"));
    const page = await web(`/console/matrix/${runId}`, { cookie: viewer.cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain("Team 2×2: which role to invest in first");
    expect(page.text).toContain(`Invest first in: <strong>${report.invest_first}</strong>`);
    // A lone planner reply is never a matrix cell: the header still says so, and nothing was written.
    expect(view.report.header.planner).toBe("deferred");
    expect(view.report.cells).toEqual([]);
    const unscored = await env.DB.prepare("SELECT detail FROM eval_jobs WHERE run_id = ? AND verdict = 'unscored'").bind(runId).all<any>();
    expect(unscored.results.map((r) => JSON.parse(r.detail).reason)).toEqual(["verifier_unparseable"]);
    // Each arm was a goal task of the employee, tagged as an eval arm, ended after its one round.
    const tasks = await env.DB.prepare("SELECT status, tags, rounds_budget FROM tasks WHERE title LIKE 'Eval %'").all<any>();
    expect(tasks.results).toHaveLength(12);
    for (const t of tasks.results) {
      expect(JSON.parse(t.tags)).toEqual(["eval_team_2x2"]);
      expect(t.rounds_budget).toBe(1);
      expect(t.status).not.toBe("assigned");
    }
  });

  it("ends an arm the Worker claimed but never recorded as opened unscored after ten minutes, so its run can finish", async () => {
    // What a Worker that stopped between claiming the arm and opening its round leaves behind.
    const request = {
      roles: ["planner"],
      compare: { weak: WEAK, strong: STRONG },
      team_2x2: { verifier: JUDGE },
      employee_id: "mio",
      k: 1,
    };
    const design = { ...DEFAULT_DESIGN, k: 1 };
    const at = new Date(Date.now() - 11 * 60_000).toISOString();
    await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO eval_runs (id, status, request, design, resolution, total_jobs, created_by, created_at) VALUES ('evr_00000000000010a5', 'running', ?, ?, '{}', 1, 'admin', ?)",
      ).bind(JSON.stringify(request), JSON.stringify(design), at),
      env.DB.prepare(
        "INSERT INTO eval_jobs (run_id, seq, role, runtime, model, domain, case_id, repeat, status, detail, updated_at) VALUES ('evr_00000000000010a5', 1, 'team_arm', 'codex', ?, ?, ?, 1, 'dispatched', ?, ?)",
      ).bind(WEAK.model, picked[0]!.domain, picked[0]!.id, JSON.stringify({ planner: "weak", executor: "weak", phase: "round" }), at),
    ]);
    expect((await call("/v1/admin/ticks/eval", { method: "POST" })).status).toBe(200);
    const row = await env.DB.prepare("SELECT status, verdict, detail FROM eval_jobs WHERE run_id = 'evr_00000000000010a5'").first<any>();
    expect(row).toMatchObject({ status: "done", verdict: "unscored" });
    expect(JSON.parse(row.detail).reason).toBe("arm_open_lost");
    // Nothing was opened for it, and the run ended with a report that counts the row as incomplete.
    const view = (await call("/v1/eval/matrix/evr_00000000000010a5")).body;
    expect(view.status).toBe("done");
    expect(view.report.team_2x2).toMatchObject({
      complete_rows: 0,
      incomplete_rows: 1,
      invest_first: "unresolved",
      reason: "no_complete_rows",
    });
  });
});
