import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { getAgentLock } from "../../../src/durable-objects/agent-lock-rpc";
import { playbookTick } from "../../../src/evolution/aee-settle";
import { startRounds } from "../../../src/evolution/aee-run";
import { canonicalPlaybook } from "../../../src/evolution/playbook";
import { loadPlaybook } from "../../../src/evolution/playbook-store";
import { selectPlaybookEntries } from "../../../src/conversations/playbook";
import { call, createOperator, createRunner } from "../../factories";
import { eventsOf } from "../../factories/team";
import {
  addOp,
  aeeJobsOf,
  emergency,
  finish,
  now,
  PASSABLE,
  putEmployee,
  roundIdIn,
  roundIs,
  roundOf,
  runUntil,
  seedEntries,
  seedEntry,
  type LeasedJob,
} from "./aee-helpers";

/** The AEE round orchestrator (issue 23 items 2, 3, 5): rounds through the real runner protocol, jobs answered by a script. */
const RULE = "When a user corrects a booking date, repeat the corrected date in the first line and ask for confirmation before booking.";

describe("an AEE round, orchestrated", { timeout: 120_000 }, () => {
  it("commits a candidate the Gate passes and the commit gate accepts: nothing lands before the commit, then the entry, its settle window and the next turn's prompt", async () => {
    await putEmployee("ae-commit");
    const runner = await createRunner("aee-commit");
    const request = await emergency("ae-commit");
    const started = await startRounds(env, await now());
    expect(started).toEqual(expect.arrayContaining([expect.objectContaining({ request_id: request, outcome: "started" })]));
    const round = await roundOf("ae-commit");
    expect(round).toMatchObject({ status: "running", step: "champion_cases", request_id: request });
    expect(await getAgentLock(env, "ae-commit").status({ now: Date.now() })).toMatchObject({ holder: request });
    const script = {
      employee: "ae-commit",
      caseRun: () => false,
      generator: (_n: number, prompt: string) => JSON.stringify({ ops: [addOp(roundIdIn(prompt), RULE, "config-edits/node-engine")] }),
      // The candidate's judge call is held: the round waits on it with the candidate measured but not applied.
      judge: (subject: string) => (subject.startsWith("candidate") ? ("hold" as const) : JSON.stringify({ score: 0.7, reasons: ["ok"] })),
    };
    const seen: LeasedJob[] = [];
    await runUntil(
      runner.token,
      script,
      async () => (await roundOf("ae-commit"))?.step === "judge" && seen.some((j) => j.payload.prompt?.includes(", candidate 1")),
      40_000,
      seen,
    );
    expect((await call("/v1/employees/ae-commit/playbook")).body.entries).toEqual([]);
    const held = seen.find((j) => j.payload.prompt?.includes(", candidate 1"))!;
    await finish(runner.token, held, { result: { text: JSON.stringify({ score: 0.75, reasons: ["ok"] }), runtime: "claude" } });
    await runUntil(runner.token, script, () => roundIs("ae-commit", "committed"));
    const view = (await call("/v1/employees/ae-commit/playbook")).body;
    expect(view.entries).toEqual([
      expect.objectContaining({
        content: RULE,
        state: "probation",
        state_reason: "committed",
        eval_cases: ["config-edits/node-engine"],
        version: 1,
      }),
    ]);
    const done = await roundOf("ae-commit");
    expect(done).toMatchObject({ status: "committed", step: "done", end_reason: "matches" });
    const jobs = await aeeJobsOf(done.id);
    expect(jobs.filter((j: any) => j.purpose === "champion_judge")).toHaveLength(1);
    expect(jobs.filter((j: any) => j.purpose === "judge")).toHaveLength(1);
    // The shadow's case runs carried the candidate entry; the champion's did not.
    const settle = await env.DB.prepare(`SELECT * FROM playbook_settle_items WHERE agent_id = 'ae-commit'`).all<any>();
    expect(settle.results).toHaveLength(1);
    expect(JSON.parse(settle.results[0].item)).toMatchObject({
      op: "add",
      cases: ["config-edits/node-engine"],
      baseline: { "config-edits/node-engine": "FAIL" },
    });
    expect((await eventsOf("playbook.committed", "ae-commit"))[0]!.payload).toMatchObject({ round_id: done.id });
    expect((await eventsOf("evolution.emergency_evolution_done", "ae-commit"))[0]!.payload).toMatchObject({
      request_id: request,
      reason: "committed",
    });
    expect(await getAgentLock(env, "ae-commit").status({ now: Date.now() })).toBeNull();
    // Only `content` is injected into the next chat turn.
    const chosen = await selectPlaybookEntries(getDb(env.DB), "ae-commit", "Please book the room for Tuesday");
    expect(chosen).toEqual([{ entry_id: view.entries[0].entry_id, category: "repair", content: RULE }]);
    const evo = (await call("/v1/employees/ae-commit/evolution")).body;
    expect(evo.rounds[0]).toMatchObject({ round_id: done.id, status: "committed", verdict: { verdict: "matches" } });
    expect(evo.stagnation).toMatchObject({ stagnant: false, reason: "insufficient_rounds" });
    expect(evo.playbook.entries).toMatchObject({ probation: 1 });
    const gene = (await call("/v1/employees/ae-commit/playbook?format=gene")).body;
    expect(gene).toMatchObject({
      format: "gep-gene",
      genes: [expect.objectContaining({ type: "Gene", summary: RULE, validation: ["eval:config-edits/node-engine"] })],
    });
  });

  it("never submits a judge job or a case run for a candidate the Gate refuses; the abandoned round leaves the playbook byte-identical but for failure notes", async () => {
    await putEmployee("ae-refuse");
    const seeded = seedEntry("ae-refuse", { entry_id: "pbe_seed" });
    await seedEntries("ae-refuse", [seeded]);
    const before = (await loadPlaybook(getDb(env.DB), "ae-refuse")).playbook;
    const runner = await createRunner("aee-refuse");
    await emergency("ae-refuse");
    await startRounds(env, await now());
    await runUntil(
      runner.token,
      {
        employee: "ae-refuse",
        generator: (n, prompt) =>
          n === 1
            ? // H2: a platitude (G-Contract), aimed at the seeded entry: its failure note is the lesson kept.
              JSON.stringify({ ops: [{ op: "update", entry_id: "pbe_seed", content: "Always answer correctly and be helpful." }] })
            : n === 2
              ? // A near duplicate of the seeded entry (G-Schema dedup): refused and audited.
                JSON.stringify({
                  ops: [
                    addOp(
                      roundIdIn(prompt),
                      "When asked for release notes, list the version number and the release date before any change.",
                      "config-edits/node-engine",
                    ),
                  ],
                })
              : "I would add a rule about dates.",
      },
      () => roundIs("ae-refuse", "abandoned"),
    );
    const round = await roundOf("ae-refuse");
    expect(round).toMatchObject({ end_reason: "attempts_exhausted" });
    const jobs = await aeeJobsOf(round.id);
    expect(jobs.map((j: any) => j.purpose).filter((p: string) => p === "judge" || p === "candidate_case")).toEqual([]);
    expect(jobs.filter((j: any) => j.purpose === "generator")).toHaveLength(3);
    const after = (await loadPlaybook(getDb(env.DB), "ae-refuse")).playbook;

    expect(canonicalPlaybook(after, { except_failure_history: true })).toBe(canonicalPlaybook(before, { except_failure_history: true }));
    expect(after.entries[0]!.failure_history).toEqual([
      expect.objectContaining({ round_id: round.id, reason: "gate:g_contract:h2_vacuous" }),
    ]);
    const telemetry = (await call("/v1/employees/ae-refuse/evolution")).body.telemetry.rejections;
    expect(telemetry.total).toBe(3);
    expect(telemetry.by_gate).toMatchObject({
      g_contract: { count: 1, reasons: { h2_vacuous: 1 } },
      g_schema: { count: 1, reasons: { near_duplicate: 1 } },
      generator: { count: 1, reasons: { not_json: 1 } },
    });
    expect((await eventsOf("playbook.dedup_refused", "ae-refuse"))[0]!.payload).toMatchObject({
      round_id: round.id,
      duplicate_of: "pbe_seed",
    });
    expect((await eventsOf("evolution.round_attempt_refused", "ae-refuse")).map((e) => e.payload.check)).toEqual([
      "g_contract",
      "g_schema",
      "generator",
    ]);
    expect((await eventsOf("evolution.emergency_evolution_failed", "ae-refuse"))[0]!.payload).toMatchObject({
      reason: "attempts_exhausted",
    });
  });

  it("settles each entry of a committed batch by its own cases: one rolls back, the other is confirmed", async () => {
    await putEmployee("ae-settle", {}, { aee_settle_hours: 1 });
    const runner = await createRunner("aee-settle");
    await emergency("ae-settle");
    await startRounds(env, await now());
    const [regresses, holds] = [PASSABLE[0]!, PASSABLE[3]!];
    let settling = false;
    const script = {
      employee: "ae-settle",
      // At commit both linked cases pass; at settle the first one fails.
      caseRun: (ref: string) => (settling ? ref === holds : ref === regresses || ref === holds),
      generator: (_n: number, prompt: string) =>
        JSON.stringify({
          ops: [
            addOp(roundIdIn(prompt), RULE, regresses),
            addOp(
              roundIdIn(prompt),
              "Before editing a config file, read it whole and quote the line you will change in your reply.",
              holds,
            ),
          ],
        }),
    };
    await runUntil(runner.token, script, () => roundIs("ae-settle", "committed"));
    const committed = (await call("/v1/employees/ae-settle/playbook")).body.entries as any[];
    expect(committed.map((e) => e.state)).toEqual(["probation", "probation"]);
    expect((await call("/v1/admin/clock", { body: { advance_ms: 2 * 3_600_000 } })).status).toBe(200);
    settling = true;
    await playbookTick(env, await now());
    await runUntil(runner.token, script, async () => {
      const rows = (await env.DB.prepare(`SELECT status FROM playbook_settle_items WHERE agent_id = 'ae-settle'`).all<any>()).results;
      return rows.every((r: any) => r.status !== "pending" && r.status !== "measuring");
    });
    const settled = (await call("/v1/employees/ae-settle/playbook")).body.entries as any[];
    const byCase = Object.fromEntries(settled.map((e) => [e.eval_cases[0], e]));
    expect(byCase[regresses]).toMatchObject({
      state: "retired",
      state_reason: "settle_rollback",
      failure_history: [expect.objectContaining({ reason: "settle_rollback:cases_regressed" })],
    });
    expect(byCase[holds]).toMatchObject({ state: "active", state_reason: "settle_accept", success_streak: 1 });
    expect((await eventsOf("playbook.entry_settled", "ae-settle")).map((e) => e.payload.result).sort()).toEqual([
      "accepted",
      "rolled_back",
    ]);
  });
});

describe("governed evolution: require_approval", { timeout: 120_000 }, () => {
  async function toApproval(agent: string, runnerToken: string) {
    await emergency(agent);
    await startRounds(env, await now());
    await runUntil(
      runnerToken,
      { employee: agent, generator: (_n, prompt) => JSON.stringify({ ops: [addOp(roundIdIn(prompt), RULE, "config-edits/compat-date")] }) },
      () => roundIs(agent, "awaiting_approval"),
    );
    return roundOf(agent);
  }

  it("turns the commit into a playbook_commit approval with the exact diff and its evidence, and applies it only after a manager approves", async () => {
    const manager = await createOperator("manager", "aee-approver");
    await putEmployee("ae-gov", {}, { require_approval: true });
    const runner = await createRunner("aee-gov");
    const round = await toApproval("ae-gov", runner.token);
    const approval = (await call(`/v1/approvals/${round.approval_id}`)).body;
    expect(approval).toMatchObject({
      action_kind: "playbook_commit",
      subject: "ae-gov",
      status: "pending",
      params: {
        employee_id: "ae-gov",
        round_id: round.id,
        diff: [expect.objectContaining({ op: "add", before: null, after: expect.objectContaining({ content: RULE }) })],
      },
      evidence: {
        heldout_cases: expect.any(Array),
        scores: expect.objectContaining({ verdict: expect.objectContaining({ commit: true }) }),
        judge_output: expect.any(Object),
      },
    });
    expect((await call("/v1/employees/ae-gov/playbook")).body.entries).toEqual([]);
    await playbookTick(env, await now());
    expect((await call("/v1/employees/ae-gov/playbook")).body.entries).toEqual([]);
    expect((await call(`/v1/approvals/${round.approval_id}/decide`, { token: manager, body: { decision: "approve" } })).status).toBe(200);
    // Two ticks racing over the approved commit apply it once.
    const at = await now();
    const ticks = await Promise.all([playbookTick(env, at), playbookTick(env, at)]);
    expect(ticks.map((t) => t.commits_applied as number).reduce((a, b) => a + b)).toBe(1);
    expect(await roundOf("ae-gov")).toMatchObject({ status: "committed" });
    expect((await call("/v1/employees/ae-gov/playbook")).body.entries).toEqual([
      expect.objectContaining({ content: RULE, state: "probation" }),
    ]);
    expect(await eventsOf("playbook.committed", "ae-gov")).toHaveLength(1);
    expect(await env.DB.prepare(`SELECT COUNT(*) AS n FROM playbook_settle_items WHERE agent_id = 'ae-gov'`).first()).toEqual({ n: 1 });
    expect((await call(`/v1/approvals/${round.approval_id}`)).body).toMatchObject({ status: "approved", consumed_by: "aee" });
  });

  it("refuses an approved commit whose diff changed since it was asked for, and discards a denied one, each with an event", async () => {
    const manager = await createOperator("manager", "aee-approver-2");
    await putEmployee("ae-gov2", {}, { require_approval: true });
    await seedEntries("ae-gov2", [seedEntry("ae-gov2", { entry_id: "pbe_old" })]);
    const runner = await createRunner("aee-gov2");
    const round = await toApproval("ae-gov2", runner.token);
    // The playbook moves while the person decides: the approved diff is no longer what would apply.
    expect((await call("/v1/employees/ae-gov2/playbook/pbe_old/retire", { body: { reason: "superseded by hand" } })).status).toBe(200);
    expect((await call(`/v1/approvals/${round.approval_id}/decide`, { token: manager, body: { decision: "approve" } })).status).toBe(200);
    await playbookTick(env, await now());
    expect(await roundOf("ae-gov2")).toMatchObject({ status: "abandoned", end_reason: "action_changed" });
    expect((await eventsOf("playbook.commit_discarded", "ae-gov2"))[0]!.payload).toMatchObject({
      round_id: round.id,
      reason: "action_changed",
    });
    expect((await eventsOf("approval.action_changed", round.approval_id)).length).toBe(1);
    expect((await call("/v1/employees/ae-gov2/playbook")).body.entries.map((e: any) => [e.entry_id, e.state])).toEqual([
      ["pbe_old", "retired"],
    ]);

    const second = await toApproval("ae-gov2", runner.token);
    expect((await call(`/v1/approvals/${second.approval_id}/decide`, { token: manager, body: { decision: "deny" } })).status).toBe(200);
    await playbookTick(env, await now());
    expect(await roundOf("ae-gov2")).toMatchObject({ status: "abandoned", end_reason: "approval_denied" });
    expect((await eventsOf("playbook.commit_discarded", "ae-gov2")).map((e) => e.payload.reason)).toEqual([
      "action_changed",
      "approval_denied",
    ]);
    expect((await call("/v1/employees/ae-gov2/playbook")).body.entries).toHaveLength(1);
  });
});

describe("a round survives", { timeout: 120_000 }, () => {
  it("a runner crash: a job whose lease lapses runs again, a job that fails for good is scored unscored, and the round goes on", async () => {
    await putEmployee("ae-crash");
    const runner = await createRunner("aee-crash");
    await emergency("ae-crash");
    await startRounds(env, await now());
    const held: LeasedJob[] = [];
    let failedOne = false;
    const script = {
      employee: "ae-crash",
      caseRun: (_ref: string, job: LeasedJob) => {
        if (job.attempt === 1 && held.length === 0) {
          held.push(job);
          return "hold" as const;
        }
        if (!failedOne) {
          failedOne = true;
          return { fail: { code: "cli_error" } };
        }
        return false;
      },
      generator: (_n: number, prompt: string) => JSON.stringify({ ops: [addOp(roundIdIn(prompt), RULE, "config-edits/node-engine")] }),
    };
    await runUntil(
      runner.token,
      script,
      async () =>
        held.length === 1 && (await aeeJobsOf((await roundOf("ae-crash")).id)).filter((j: any) => j.status === "dispatched").length === 1,
    );
    // The runner holding that job died: its lease lapses and the job is leased again.
    expect((await call("/v1/admin/clock", { body: { advance_ms: 5 * 60_000 } })).status).toBe(200);
    await runUntil(runner.token, script, () => roundIs("ae-crash", "committed"));
    const round = await roundOf("ae-crash");
    const champion = (await aeeJobsOf(round.id)).filter((j: any) => j.purpose === "champion_case");
    expect(champion.map((j: any) => JSON.parse(j.outcome).verdict).sort()).toEqual(expect.arrayContaining(["unscored", "FAIL"]));
    expect(champion.find((j: any) => j.job_id === held[0]!.job_id)).toMatchObject({ status: "done" });
  });

  it("a lost owner call (the Worker stopped after a job ended): the tick reads the job's end and moves the round on", async () => {
    await putEmployee("ae-restart");
    const runner = await createRunner("aee-restart");
    await emergency("ae-restart");
    await startRounds(env, await now());
    const round = await roundOf("ae-restart");
    // The champion's case jobs end in D1 while nobody tells the round (as if the Worker died first).
    const jobs = await aeeJobsOf(round.id);
    for (const j of jobs)
      await env.DB.prepare(`UPDATE jobs SET status = 'completed', result = ?, finished_at = ? WHERE id = ?`)
        .bind(JSON.stringify({ text: "nothing", exit_status: 1, files: {}, runtime: "claude" }), new Date().toISOString(), j.job_id)
        .run();
    expect(await roundOf("ae-restart")).toMatchObject({ step: "champion_cases" });
    const summary = await playbookTick(env, await now());
    expect(summary).toMatchObject({ job_ends_recovered: jobs.length });
    expect(await roundOf("ae-restart")).toMatchObject({ step: "champion_judge" });
    await runUntil(
      runner.token,
      {
        employee: "ae-restart",
        generator: (_n, prompt) => JSON.stringify({ ops: [addOp(roundIdIn(prompt), RULE, "config-edits/node-engine")] }),
      },
      () => roundIs("ae-restart", "committed"),
    );
  });

  it("two ticks racing over the same ended jobs move the round one step, submitting the next job once", async () => {
    await putEmployee("ae-race");
    await emergency("ae-race");
    await startRounds(env, await now());
    const round = await roundOf("ae-race");
    for (const j of await aeeJobsOf(round.id))
      await env.DB.prepare(`UPDATE jobs SET status = 'completed', result = ?, finished_at = ? WHERE id = ?`)
        .bind(JSON.stringify({ text: "nothing", exit_status: 1, files: {}, runtime: "claude" }), new Date().toISOString(), j.job_id)
        .run();
    const at = await now();
    await Promise.all([playbookTick(env, at), playbookTick(env, at), playbookTick(env, at)]);
    const after = await roundOf("ae-race");
    expect(after).toMatchObject({ status: "running", step: "champion_judge", version: round.version + 1 });
    const judges = (await aeeJobsOf(round.id)).filter((j: any) => j.purpose === "champion_judge");
    expect(judges).toHaveLength(1);
    const queued = await env.DB.prepare(
      `SELECT COUNT(*) AS n FROM jobs WHERE owner_kind = 'aee_round' AND owner_id = ? AND kind = 'utility'`,
    )
      .bind(round.id)
      .first<{ n: number }>();
    expect(queued!.n).toBe(1);
  });

  it("an employee on the offline runtime: its cases run and are scored, no judge job is bought, and the generator's labelled answer ends the round honestly", async () => {
    await putEmployee("ae-offline", { runtime: "offline", model: { preferred: "offline" } });
    const runner = await createRunner("aee-offline");
    await emergency("ae-offline");
    await startRounds(env, await now());
    await runUntil(
      runner.token,
      {
        employee: "ae-offline",
        caseRun: () => ({ result: { text: "[offline runtime] # Eval case (sha256:0)", exit_status: null, files: {}, runtime: "offline" } }),
        generator: () => ({ result: { text: "[offline runtime] # AEE generator (sha256:0)", runtime: "offline" } }),
      },
      () => roundIs("ae-offline", "abandoned"),
    );
    const round = await roundOf("ae-offline");
    expect(round).toMatchObject({ end_reason: "generator_unavailable" });
    const jobs = await aeeJobsOf(round.id);
    expect(jobs.map((j: any) => j.purpose).filter((p: string) => p.includes("judge"))).toEqual([]);
    expect(JSON.parse(round.champion)).toMatchObject({ judge: { status: "offline_runtime" }, vector: { judge: null } });
    expect(JSON.parse(round.state).attempts).toEqual([
      expect.objectContaining({ stage: "generate", check: "generator", reason: "offline_runtime" }),
    ]);
  });
});

// Last in the file: it moves the test clock three days on, past every lease and lock the tests above hold.
describe("governed evolution: an approval nobody decides", { timeout: 120_000 }, () => {
  it("discards the commit once its approval expires (a lapsed approval is a denial), with an event, and writes nothing", async () => {
    await createOperator("manager", "aee-approver-3");
    await putEmployee("ae-gov3", {}, { require_approval: true });
    const runner = await createRunner("aee-gov3");
    await emergency("ae-gov3");
    await startRounds(env, await now());
    await runUntil(
      runner.token,
      {
        employee: "ae-gov3",
        generator: (_n, prompt) => JSON.stringify({ ops: [addOp(roundIdIn(prompt), RULE, "config-edits/compat-date")] }),
      },
      () => roundIs("ae-gov3", "awaiting_approval"),
    );
    const round = await roundOf("ae-gov3");
    // A minute short of the three-day TTL the commit still waits; past it, the tick discards it.
    expect((await call("/v1/admin/clock", { body: { advance_ms: 3 * 86_400_000 - 60_000 } })).status).toBe(200);
    expect(await playbookTick(env, await now())).toMatchObject({ commits_discarded: 0 });
    expect(await roundOf("ae-gov3")).toMatchObject({ status: "awaiting_approval" });
    expect((await call("/v1/admin/clock", { body: { advance_ms: 120_000 } })).status).toBe(200);
    expect(await playbookTick(env, await now())).toMatchObject({ commits_discarded: 1 });
    expect(await roundOf("ae-gov3")).toMatchObject({ status: "abandoned", end_reason: "approval_expired" });
    expect((await eventsOf("playbook.commit_discarded", "ae-gov3"))[0]!.payload).toMatchObject({
      round_id: round.id,
      reason: "approval_expired",
    });
    expect((await call(`/v1/approvals/${round.approval_id}`)).body).toMatchObject({ status: "expired" });
    expect((await call("/v1/employees/ae-gov3/playbook")).body.entries).toEqual([]);
    expect(await env.DB.prepare(`SELECT COUNT(*) AS n FROM playbook_settle_items WHERE agent_id = 'ae-gov3'`).first()).toEqual({ n: 0 });
  });
});
