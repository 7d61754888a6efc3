import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { transcriptOutcome } from "../../../src/eval/case-schema";
import { DEFAULT_DESIGN } from "../../../src/eval/design";
import { serializeMatrix } from "../../../src/eval/matrix";
import { buildMatrixReport } from "../../../src/eval/report";
import { loadSuites, type EvalCase } from "../../../src/eval/suites";
import { call, createRunner } from "../../factories";
import { completeStage, failStage } from "../../factories/scripted-runner";
import { eventsOf } from "../../factories/team";

/**
 * A capability-matrix measurement through the Worker, with a scripted runner playing the models: the
 * runs go out as runner jobs a few at a time, each is scored by its case's assertions (executor) or its
 * reply against the gold (verifier), and the last one writes the report and the matrix the composer
 * then reads as a prior.
 */
const loaded = loadSuites();
if (!loaded.ok) throw new Error("suites do not load");
const cases = loaded.suites.flatMap((s) => s.cases);
const passing = cases.filter((c) => c.transcript?.gold === "PASS");
const byKey = new Map(cases.map((c) => [`${c.domain}/${c.id}`, c]));

/** The outcome that passes a case whose recorded transcript passes, and one that fails it (nothing written). */
const passOutcome = (c: EvalCase) => {
  const o = transcriptOutcome(c.transcript!);
  return { text: o.text, exit_status: o.exit_status ?? 0, files: o.files, runtime: "codex" };
};
const failOutcome = (c: EvalCase) => ({
  text: "I could not do it.",
  exit_status: 1,
  files: Object.fromEntries(Object.keys(transcriptOutcome(c.transcript!).files).map((p) => [p, null])),
  runtime: "codex",
});

async function runAll(runnerToken: string, runId: string, answer: (job: any, c: EvalCase) => Promise<void>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const view = (await call(`/v1/eval/matrix/${runId}`)).body;
    if (view.status !== "running" && view.progress.in_flight === 0) return view;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${view.status}: ${JSON.stringify(view.progress)}`);
    const res = await call("/v1/runner/lease", { token: runnerToken, body: { capacity: 4, wait_ms: 500, runtimes: ["codex", "claude"] } });
    for (const job of res.body.jobs as any[]) {
      const key =
        job.kind === "eval_case"
          ? `${job.payload.domain}/${job.payload.case_id}`
          : /^# Role: verifier/m.test(job.payload.prompt)
            ? "verifier"
            : "";
      if (job.kind === "eval_case" && job.payload.run_id === runId) await answer(job, byKey.get(key)!);
      else if (job.kind === "utility" && key === "verifier") await answer(job, undefined as unknown as EvalCase);
      else await failStage(runnerToken, job, "cli_error", "not this test's job");
    }
  }
}

describe("a capability-matrix measurement", () => {
  it("refuses what it cannot run, and says so before anything runs", async () => {
    expect((await call("/v1/eval/matrix", { body: { models: [{ runtime: "codex", model: "gpt-5.5" }], suites: ["nope"] } })).status).toBe(
      422,
    );
    const unpriced = await call("/v1/eval/matrix", { body: { models: [{ runtime: "codex", model: "gpt-5.5" }], budget_usd: 1 } });
    expect(unpriced.status).toBe(422);
    expect(unpriced.body).toMatchObject({ reason: "price_missing", models: ["gpt-5.5"] });
    expect((await call("/v1/eval/matrix", { body: { roles: ["executor"] } })).status).toBe(422);
    expect(
      (await call("/v1/eval/matrix", { body: { models: [{ runtime: "codex", model: "gpt-5.5" }], cases: ["config-edits/nope"] } })).status,
    ).toBe(422);
    expect(await eventsOf("eval.run_started")).toEqual([]);
  });

  it("scores executor runs by their assertions and writes the report and the matrix, unresolved where the sample is small", async () => {
    const runner = await createRunner("eval-1");
    // Before any measurement the composer has nothing to read.
    await call("/v1/config/team", {
      method: "PUT",
      body: { enabled: true, roles: { executor: { runtime: "codex" }, verifier: { runtime: "claude", model: "claude-haiku-4-5" } } },
    });
    await call("/v1/employees/mio", { method: "PUT", body: { name: "Mio", runtime: "claude", model: { preferred: "claude-sonnet-4-6" } } });
    const signals = { independent_items: 5, dependency_hubs: 0, fits_one_context: false, produces_artifacts: true };
    const goal = { title: "Tidy the config", acceptance_criteria: ["a", "b", "c"], signals };

    const started = await call("/v1/eval/matrix", {
      body: {
        roles: ["executor"],
        models: [
          { runtime: "codex", model: "gpt-5.5" },
          { runtime: "codex", model: "gpt-5.5-mini" },
        ],
        cases: passing.map((c) => `${c.domain}/${c.id}`),
        design: { declared_mde: 0.6, pass_line: 0.3 },
      },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect(started.body).toMatchObject({ total_jobs: passing.length * 2, declared_resolution: { declared_mde: 0.6 } });
    // Said up front, per cell (one domain's cases), at the worst case of half the cases passing: three
    // cases per domain cannot promise 0.6 (0.5/√2 · 2.80 = 0.99), whatever the runs then show.
    const perDomain = (d: string) => passing.filter((c) => c.domain === d).length;
    expect(started.body.declared_resolution.cells).toEqual(
      ["gpt-5.5", "gpt-5.5-mini"].flatMap((model) =>
        [...new Set(passing.map((c) => c.domain))].map((domain) =>
          expect.objectContaining({
            domain,
            role: "executor",
            model,
            n: perDomain(domain),
            achievable_mde: expect.closeTo(0.99, 2),
            resolvable: false,
          }),
        ),
      ),
    );
    // Only a few at once ([eval] parallel, 4).
    const early = (await call(`/v1/eval/matrix/${started.body.run_id}`)).body;
    expect(early.progress.in_flight).toBeLessThanOrEqual(4);

    // gpt-5.5 passes all but one case; gpt-5.5-mini passes one.
    const strongFails = passing[0]!;
    const weakPasses = passing[1]!;
    expect(strongFails.domain).toBe(passing[2]!.domain);
    const view = await runAll(runner.token, started.body.run_id, async (job, c) => {
      expect(job.payload.prompt.split("\n")[0]).toBe(`# Eval case ${c.domain}/${c.id}`);
      expect(job.payload.workspace_files).toEqual(c.workspace_files);
      const strong = job.payload.model === "gpt-5.5";
      const pass = strong ? c !== strongFails : c === weakPasses;
      await completeStage(runner.token, job, pass ? passOutcome(c) : failOutcome(c));
    });
    expect(view).toMatchObject({ status: "done", progress: { total: passing.length * 2, done: passing.length * 2 } });
    // One cell per (domain, role, runtime, model): three cases each, too few to resolve anything —
    // the report says so instead of ranking the models.
    const cells = view.report.cells as any[];
    expect(cells.map((c) => [c.domain, c.model, c.n]).sort()).toEqual(
      [
        ["config-edits", "gpt-5.5", 3],
        ["config-edits", "gpt-5.5-mini", 3],
        ["log-triage", "gpt-5.5", 3],
        ["log-triage", "gpt-5.5-mini", 3],
      ].sort(),
    );
    const strongEdits = cells.find((c) => c.model === "gpt-5.5" && c.domain === strongFails.domain);
    expect(strongEdits.mean).toBeCloseTo(2 / 3, 6);
    expect(cells.every((c) => c.verdict === "unresolved")).toBe(true);
    expect(view.matrix_toml).toContain("[[cell]]");
    expect((await call("/v1/eval/matrix")).body).toMatchObject({ run_id: started.body.run_id });

    // An unresolved matrix gives the composer no winner: the codex executor falls back to the
    // employee's own (claude) model, which codex cannot run, so the team is refused as before.
    const res = await call("/v1/employees/mio/goals", { body: goal });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).not.toHaveProperty("team_spec");
    expect(res.body.team_refused).toMatchObject({ role: "executor" });
    await call(`/v1/tasks/${res.body.task_id}/settle`, { body: { status: "failed" } });
  });

  it("takes a resolved matrix winner for a role whose model is set nowhere, and gives the gate its capability gap", async () => {
    await createRunner("eval-host"); // the scripted runner below offers codex: the prior needs it on the host
    const runs = Array.from({ length: 40 }, (_, i) => [
      { role: "executor", domain: "config-edits", case_id: `c${i}`, runtime: "codex", model: "gpt-5.5", verdict: i < 36 ? "PASS" : "FAIL" },
      {
        role: "executor",
        domain: "config-edits",
        case_id: `c${i}`,
        runtime: "codex",
        model: "gpt-5.5-mini",
        verdict: i < 8 ? "PASS" : "FAIL",
      },
    ]).flat() as any[];
    const report = buildMatrixReport({ design: { ...DEFAULT_DESIGN, declared_mde: 0.3 }, generated_at: new Date().toISOString(), runs });
    await env.DB.prepare(
      "INSERT INTO eval_matrix (id, run_id, toml, updated_at) VALUES (1, 'evr_0000000000000000', ?, ?) ON CONFLICT(id) DO UPDATE SET toml = excluded.toml",
    )
      .bind(serializeMatrix(report), new Date().toISOString())
      .run();
    const runner = await createRunner("eval-prior");
    await call("/v1/runner/lease", { token: runner.token, body: { capacity: 1, wait_ms: 0, runtimes: ["codex", "claude"] } });
    await call("/v1/employees/rui", { method: "PUT", body: { name: "Rui", runtime: "claude", model: { preferred: "claude-sonnet-4-6" } } });
    await call("/v1/config/team", {
      method: "PUT",
      body: { enabled: true, roles: { executor: { runtime: "codex" }, verifier: { runtime: "claude", model: "claude-haiku-4-5" } } },
    });
    const signals = { independent_items: 5, dependency_hubs: 0, fits_one_context: false, produces_artifacts: true };
    let res: any;
    for (let i = 0; i < 50; i++) {
      res = await call("/v1/employees/rui/goals", { body: { title: "Tidy", acceptance_criteria: ["a", "b", "c"], signals } });
      if (res.body.team_spec?.roles.executor.model === "gpt-5.5") break;
      await call(`/v1/tasks/${res.body.task_id}/settle`, { body: { status: "failed" } });
      await new Promise((r) => setTimeout(r, 100)); // the runner's runtimes are recorded just after its lease
    }
    expect(res.body.team_spec.roles.executor).toMatchObject({ runtime: "codex", model: "gpt-5.5" });
    await call(`/v1/tasks/${res.body.task_id}/settle`, { body: { status: "failed" } });

    // An explicit model wins over the matrix.
    await call("/v1/config/team", {
      method: "PUT",
      body: {
        enabled: true,
        roles: { executor: { runtime: "codex", model: "gpt-5.5-mini" }, verifier: { runtime: "claude", model: "claude-haiku-4-5" } },
      },
    });
    const pinned = await call("/v1/employees/rui/goals", { body: { title: "Tidy", acceptance_criteria: ["a", "b", "c"], signals } });
    expect(pinned.body.team_spec.roles.executor).toMatchObject({ model: "gpt-5.5-mini" });
    // …and the gate now measures the capability gap between it and the winner (signals still shown).
    expect(pinned.body.gate.signals.capability_gap).toEqual({ holds: true, unmeasured: false });
    await call(`/v1/tasks/${pinned.body.task_id}/settle`, { body: { status: "failed" } });
    await env.DB.prepare("DELETE FROM eval_matrix").run();
  });

  it("stops dispatching when the budget cannot hold the next run's reservation, and reports what ran", async () => {
    const runner = await createRunner("eval-budget");
    // 20k input + 4k output tokens at $10/$30 per Mtok reserve $0.32 a run: $1 holds three.
    expect(
      (
        await call("/v1/config/eval", {
          method: "PUT",
          body: { prices: { "gpt-5.5": { input_per_mtok: 10, output_per_mtok: 30 } }, parallel: 1 },
        })
      ).status,
    ).toBe(200);
    const started = await call("/v1/eval/matrix", {
      body: {
        roles: ["executor"],
        models: [{ runtime: "codex", model: "gpt-5.5" }],
        budget_usd: 1,
        cases: passing.slice(0, 5).map((c) => `${c.domain}/${c.id}`),
      },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    // Every run reports no usage: its reservation stands as its cost.
    const view = await runAll(runner.token, started.body.run_id, (job, c) => completeStage(runner.token, job, passOutcome(c)));
    expect(view).toMatchObject({
      status: "stopped",
      stop_reason: "budget",
      progress: { done: 3, skipped: 2 },
      spend: { runs_with_unknown_cost: 3, budget_usd: 1 },
    });
    expect(view.report.cells[0]).toMatchObject({ n: 3 });
    expect((await eventsOf("eval.run_stopped", started.body.run_id))[0]!.payload).toMatchObject({ reason: "budget" });
    await call("/v1/config/eval", { method: "PUT", body: {} });
  });

  it("counts a verifier reply without a verdict as unparseable and leaves it out of every rate", async () => {
    const runner = await createRunner("eval-verifier");
    const started = await call("/v1/eval/matrix", {
      body: { roles: ["verifier"], models: [{ runtime: "claude", model: "claude-haiku-4-5" }] },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    let i = 0;
    const view = await runAll(runner.token, started.body.run_id, async (job) => {
      i++;
      const text = i === 1 ? "I am not sure." : JSON.stringify({ verdict: "PASS", reasons: [] });
      await completeStage(runner.token, job, { text, runtime: "claude" });
    });
    const cell = (view.report.cells as any[])[0];
    expect(cell).toMatchObject({ role: "verifier", model: "claude-haiku-4-5" });
    expect(JSON.stringify(cell)).toContain("unparseable");
    const rows = await env.DB.prepare("SELECT verdict, COUNT(*) AS n FROM eval_jobs WHERE run_id = ? GROUP BY verdict")
      .bind(started.body.run_id)
      .all();
    expect(rows.results).toEqual(expect.arrayContaining([{ verdict: "unparseable", n: 1 }]));
  });
});
