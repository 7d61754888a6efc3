/**
 * The AEE playbook end to end (issue 23, seed 003 §12): the Worker under wrangler's test harness and
 * the real local-runner. The employee talks on the runner's bundled offline runtime (so its eval
 * cases run there too); `[model_work]` puts the round's generator and judge on `claude`, which is the
 * fake CLI (it answers the `# AEE generator …` / `# AEE judge …` prompts in JSON, like a model asked
 * for JSON). From a conversation whose prediction error is Critical to a committed playbook entry
 * that the next chat turn's prompt carries; then a governed round whose runner dies mid-way.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../runner/helpers/processes";
import { startRunner, startWorker, type RunnerProcess } from "./stack";

type Stack = Awaited<ReturnType<typeof startWorker>>;
interface Stmt {
  bind(...values: unknown[]): Stmt;
  first<T>(): Promise<T | null>;
}
type Db = { prepare(query: string): Stmt };

const USER = "hana";
/** The rule the fake generator proposes (FAKE_AEE_CONTENT; it links the first case its prompt offers). */
const RULE =
  "When the user corrects a version number, restate the corrected number in the first line and confirm it before writing anything else.";
const runnerEnv = { FAKE_AEE_CONTENT: RULE };
const at = () => new Date().toISOString();

describe("the AEE playbook on the real runner", () => {
  let stack: Stack;
  let runnerToken: string;
  let runner: RunnerProcess | undefined;
  const db = async () => (await stack.server.getWorker().getEnv()).DB as Db;

  async function putEmployee(id: string, evolution: Record<string, unknown> = {}) {
    const res = await stack.api(`/v1/employees/${id}`, {
      method: "PUT",
      body: {
        name: `Employee ${id}`,
        runtime: "offline",
        model: { preferred: "offline" },
        evolution: { gvu_enabled: true, gvu_cooldown_minutes: 0, ...evolution },
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }

  /** Sends one message and waits for the employee's reply; returns the reply turn and its job id. */
  async function say(conversationId: string, content: string) {
    const sent = await stack.api(`/v1/conversations/${conversationId}/messages`, { body: { content } });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    const reply = await waitFor(
      async () => {
        const turns = (await stack.api(`/v1/conversations/${conversationId}`)).body.turns as any[];
        return turns.find((t) => t.seq === sent.body.turn + 1);
      },
      `the reply to turn ${sent.body.turn}`,
      60_000,
      250,
    );
    return { reply, job_id: sent.body.job_id as string };
  }

  /**
   * A user model first (one calm conversation about booking rooms, no follow-up), then a live
   * conversation on another topic that the user corrects three times and follows up on: against that
   * model its prediction error is 0.4·0.7 + 0.2 + 0.2 + 0.2 = 0.88, Critical (≥ 0.8).
   */
  async function criticalConversation(employee: string) {
    const calm = await stack.api("/v1/conversations", {
      body: {
        agent_id: employee,
        user_id: USER,
        messages: [
          { role: "user", content: "Please book the meeting room for the Tuesday planning session", at: at() },
          { role: "assistant", content: "Booked the meeting room for Tuesday.", at: at() },
        ],
      },
    });
    expect(calm.status, JSON.stringify(calm.body)).toBe(200);
    const opened = await stack.api(`/v1/employees/${employee}/conversations`, { body: { user_id: USER } });
    expect(opened.status).toBe(201);
    const id = opened.body.conversation_id as string;
    const first = await say(id, "Write the release notes for version 2 of the invoice exporter");
    for (const text of ["That's wrong, incorrect version. Please fix", "no, still wrong?", "try again?"]) await say(id, text);
    const closed = await stack.api(`/v1/conversations/${id}/close`, { method: "POST" });
    expect(closed.status).toBe(200);
    return { closed: closed.body, firstJob: first.job_id };
  }

  async function latestRound(employee: string) {
    return ((await stack.api(`/v1/employees/${employee}/evolution`)).body.rounds as any[])[0];
  }

  async function roundEnded(employee: string, statuses: string[], timeoutMs = 150_000) {
    return waitFor(
      async () => {
        const r = await latestRound(employee);
        return r && statuses.includes(r.status) ? r : undefined;
      },
      `a round of ${employee} to reach ${statuses.join("/")}`,
      timeoutMs,
      500,
    );
  }

  async function promptOf(jobId: string): Promise<string> {
    const row = await (await db()).prepare(`SELECT payload FROM jobs WHERE id = ?`).bind(jobId).first<{ payload: string }>();
    return JSON.parse(row!.payload).prompt as string;
  }

  beforeAll(async () => {
    stack = await startWorker();
    runnerToken = (await stack.api("/v1/admin/runners", { body: { name: "aee-e2e" } })).body.token;
    // The round's generator and judge run on `claude` (the fake CLI); the employee stays offline.
    const work = await stack.api("/v1/config/model_work", { method: "PUT", body: { runtime: "claude" } });
    expect(work.status, JSON.stringify(work.body)).toBe(200);
  });

  afterAll(async () => {
    await runner?.stop();
    await stack?.close();
  });

  it("turns a Critical conversation into a committed playbook entry that the next chat turn's prompt carries", async () => {
    await putEmployee("mika");
    runner = startRunner(stack.base, runnerToken, runnerEnv);
    const { closed, firstJob } = await criticalConversation("mika");
    expect(closed).toMatchObject({
      error: { category: "critical", unexpected_correction: true, unexpected_follow_up: true },
      action: { kind: "trigger_emergency_evolution", reason: "critical", trigger: { status: "accepted" } },
    });
    // Before any round, the employee's turns carry no playbook.
    expect(await promptOf(firstJob)).not.toContain("## Your playbook");

    const tick = await stack.api("/v1/admin/ticks/playbook", { method: "POST" });
    expect(tick.status).toBe(200);
    expect(tick.body.summary).toMatchObject({ rounds_started: 1 });
    // From here on the round moves by its jobs' ends alone (owner calls), no tick needed.
    const round = await roundEnded("mika", ["committed", "abandoned", "skipped"]);
    expect(round, JSON.stringify(round)).toMatchObject({
      status: "committed",
      verdict: { verdict: "matches" },
      intent: { kind: "run", intent: "repair" },
    });

    const detail = (await stack.api(`/v1/employees/mika/playbook/rounds/${round.round_id}`)).body;
    const purposes = (detail.jobs as any[]).map((j) => j.purpose);
    expect(new Set(purposes)).toEqual(new Set(["champion_case", "champion_judge", "generator", "candidate_case", "judge"]));
    // Cases ran where the employee runs (offline: every case FAILs on both sides, a tie); the model work on the fake claude.
    for (const j of detail.jobs as any[]) {
      if (j.case_ref) expect(j.outcome).toMatchObject({ status: "completed", verdict: "FAIL", runtime: "offline" });
      else expect(j.outcome).toMatchObject({ status: "completed", result: { runtime: "claude" } });
    }
    expect(detail.champion.judge).toMatchObject({ status: "scored", score: 0.7 });
    expect(detail.candidate.judge).toMatchObject({ status: "scored", score: 0.7 });
    expect(detail.state.heldout.length).toBeGreaterThan(0);

    const playbook = (await stack.api("/v1/employees/mika/playbook")).body;
    expect(playbook.entries).toEqual([
      expect.objectContaining({
        content: RULE,
        state: "probation",
        category: "repair",
        signals_match: ["critical_error", "correction"],
        derived_from: [{ kind: "aee_round", id: round.round_id }],
      }),
    ]);
    const entry = playbook.entries[0];
    expect(entry.eval_cases).toHaveLength(1);
    const view = (await stack.api("/v1/employees/mika/evolution")).body;
    expect(view.recent_requests[0]).toMatchObject({ kind: "emergency_evolution", status: "done", reason: "committed" });
    expect(view.settle).toEqual({ pending: 1 });

    // The next chat turn carries the entry's content (and nothing else of it) in its prompt; the offline
    // runtime's reply names the SHA-256 of the prompt it ran, so the runner ran exactly that prompt.
    const next = await stack.api(`/v1/employees/mika/conversations`, { body: { user_id: USER } });
    const { reply, job_id } = await say(next.body.conversation_id, "Can you write the release notes for version 3?");
    const prompt = await promptOf(job_id);
    expect(prompt).toContain(`## Your playbook (entries selected for this turn)`);
    expect(prompt).toContain(`- [repair] ${RULE}`);
    expect(prompt).not.toContain(entry.entry_id);
    const sha = createHash("sha256").update(prompt, "utf8").digest("hex").slice(0, 12);
    expect(reply.content).toContain(`(sha256:${sha})`);

    // Once that conversation closes, the entry it carried gets an application judged by its error.
    const closedNext = await stack.api(`/v1/conversations/${next.body.conversation_id}/close`, { method: "POST" });
    expect(closedNext.status).toBe(200);
    const ticked = await stack.api("/v1/admin/ticks/playbook", { method: "POST" });
    expect(ticked.body.summary).toMatchObject({ applications_recorded: 1 });
    const used = (await stack.api("/v1/employees/mika/playbook")).body.entries[0];
    // A calm turn (no correction, no follow-up): nothing to evolve, so a success for the entry.
    expect(closedNext.body.error.category).toMatch(/^(negligible|moderate)$/);
    expect(used.applications).toEqual([expect.objectContaining({ conversation_id: next.body.conversation_id, outcome: "success" })]);
    expect(used.success_streak).toBe(1);

    const gene = (await stack.api("/v1/employees/mika/playbook?format=gene")).body;
    expect(gene).toMatchObject({
      format: "gep-gene",
      genes: [expect.objectContaining({ id: entry.entry_id, summary: RULE, applications: [expect.objectContaining({ type: "Capsule" })] })],
    });

    // A day later its settle window ends: its own linked case runs again on the runner, holds at its
    // commit-time rate, and the entry alone is confirmed (probation → active).
    expect((await stack.api("/v1/admin/clock", { body: { advance_ms: 25 * 3_600_000 } })).status).toBe(200);
    expect((await stack.api("/v1/admin/ticks/playbook", { method: "POST" })).body.summary).toMatchObject({ settle_measuring: 1 });
    const settled = await waitFor(
      async () => {
        const e = (await stack.api("/v1/employees/mika/playbook")).body.entries[0];
        return e.state === "probation" ? undefined : e;
      },
      "the entry's settle window to decide",
      60_000,
      250,
    );
    expect(settled).toMatchObject({ entry_id: entry.entry_id, state: "active", state_reason: "settle_accept", success_streak: 2 });
    expect((await stack.api("/v1/employees/mika/evolution")).body.settle).toEqual({ accepted: 1 });
  });

  it("resumes a governed round after its runner dies mid-way, and applies it only once a manager approves", async () => {
    await putEmployee("riku", { require_approval: true });
    // Someone who can decide (the bootstrap token may not): without one the commit would be discarded at once.
    const manager = (await stack.api("/v1/admin/operators", { body: { name: "mio", role: "manager" } })).body.token as string;
    await runner?.stop();
    // A runner whose claude is slow: the round's model work is still running when the runner is killed.
    runner = startRunner(stack.base, runnerToken, { ...runnerEnv, FAKE_AEE_DELAY_MS: "30000" });
    await criticalConversation("riku");
    expect((await stack.api("/v1/admin/ticks/playbook", { method: "POST" })).body.summary).toMatchObject({ rounds_started: 1 });
    let seen: unknown;
    const running = await waitFor(
      async () => {
        const r = await latestRound("riku");
        seen = r && { status: r.status, step: r.step };
        if (!r || r.step !== "champion_judge") return undefined;
        const detail = (await stack.api(`/v1/employees/riku/playbook/rounds/${r.round_id}`)).body;
        const judge = (detail.jobs as any[]).find((j) => j.purpose === "champion_judge");
        const job = judge && (await stack.api(`/v1/admin/jobs/${judge.job_id}`)).body;
        seen = { status: r.status, step: r.step, jobs: detail.jobs, judge: job && { status: job.status, attempts: job.attempts } };
        return job?.status === "leased" ? { round: r, job_id: judge.job_id as string } : undefined;
      },
      "the champion's judge job to be running",
      150_000,
      250,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last seen: ${JSON.stringify(seen)}`);
    });
    // The runner crashes (no goodbye); its lease lapses and a new runner takes the job again.
    runner.child.kill("SIGKILL");
    await runner.exited;
    await runner.stop();
    expect((await stack.api("/v1/admin/clock", { body: { advance_ms: 10 * 60_000 } })).status).toBe(200);
    runner = startRunner(stack.base, runnerToken, runnerEnv);
    const waiting = await roundEnded("riku", ["awaiting_approval", "committed", "abandoned"]);
    expect(waiting, JSON.stringify(waiting)).toMatchObject({
      round_id: running.round.round_id,
      status: "awaiting_approval",
      approval_id: expect.any(String),
    });
    const judgeJob = (await stack.api(`/v1/admin/jobs/${running.job_id}`)).body;
    expect(judgeJob.status).toBe("completed");
    expect(judgeJob.attempts.length).toBeGreaterThanOrEqual(2);

    const approval = (await stack.api(`/v1/approvals/${waiting.approval_id}`)).body;
    expect(approval).toMatchObject({
      action_kind: "playbook_commit",
      status: "pending",
      params: {
        employee_id: "riku",
        diff: [expect.objectContaining({ op: "add", before: null, after: expect.objectContaining({ content: RULE }) })],
      },
      evidence: { heldout_cases: expect.any(Array), judge_output: { champion: { status: "scored" }, candidate: { status: "scored" } } },
    });
    // Nothing applies while the person has not decided, tick or no tick.
    await stack.api("/v1/admin/ticks/playbook", { method: "POST" });
    expect((await stack.api("/v1/employees/riku/playbook")).body.entries).toEqual([]);

    const decided = await stack.api(`/v1/approvals/${waiting.approval_id}/decide`, { token: manager, body: { decision: "approve" } });
    expect(decided.status, JSON.stringify(decided.body)).toBe(200);
    const applied = await stack.api("/v1/admin/ticks/playbook", { method: "POST" });
    expect(applied.body.summary).toMatchObject({ commits_applied: 1 });
    expect(await latestRound("riku")).toMatchObject({ status: "committed" });
    expect((await stack.api("/v1/employees/riku/playbook")).body.entries).toEqual([
      expect.objectContaining({ content: RULE, state: "probation" }),
    ]);
    expect((await stack.api(`/v1/approvals/${waiting.approval_id}`)).body).toMatchObject({ status: "approved", consumed_by: "aee" });
    // About 25 s alone; under a busy 2-core machine the slow fake claude's round takes minutes.
  }, 300_000);
});
