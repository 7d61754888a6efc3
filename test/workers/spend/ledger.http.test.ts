import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { recordInboxNotices, type InboxNotice } from "../../../src/jobs/outcomes";
import { call, createOperator, createRunner } from "../../factories";
import { putEmployee } from "../../factories/org";
import { complete, leaseThese, ran, submitToInbox, turnJob } from "../../factories/spend";

/**
 * The cost ledger (docs/spend.md): one row per completed job that reported usage or a price,
 * written with the job's completion, and `GET /v1/cost/ledger` summing it by employee, model,
 * runtime, project or day, with what nobody reported kept `"unknown"`.
 */
const NOW = "2031-03-10T12:00:00.000Z";
let runner: string;

async function costRow(jobId: string) {
  return env.DB.prepare(`SELECT * FROM cost_entries WHERE job_id = ?`).bind(jobId).first<Record<string, unknown>>();
}

async function runJob(employee: string, result: Record<string, unknown>, opts: Parameters<typeof turnJob>[1] = {}) {
  const id = await submitToInbox(turnJob(employee, opts));
  const [job] = await leaseThese(runner, [id]);
  expect(job?.job_id).toBe(id);
  await complete(runner, job!, result);
  return id;
}

beforeAll(async () => {
  expect((await call("/v1/admin/clock", { body: { set: NOW } })).status).toBe(200);
  runner = (await createRunner("ledger-runner")).token;
  await putEmployee("ada");
  await putEmployee("bob");
});

describe("the cost ledger rows", () => {
  it("records a completed job's usage, price, runtime, model and whose work it was, with its completion", async () => {
    const id = await runJob("ada", ran({ input: 100, output: 50, cache_read: 4_000 }, 0.1));
    expect(await costRow(id)).toMatchObject({
      job_id: id,
      day: "2031-03-10",
      month: "2031-03",
      kind: "employee_turn",
      runtime: "claude",
      model: "claude-sonnet-4-6",
      owner_kind: "admin",
      employee_id: "ada",
      project_id: null,
      input_tokens: 100,
      output_tokens: 50,
      cache_read_input_tokens: 4_000,
      cache_creation_input_tokens: null,
      cost_usd: 0.1,
    });
  });

  it("keeps an unreported price unknown (NULL, not 0), and takes the model the job asked for when the run did not say", async () => {
    const id = await runJob("ada", { text: "done", usage: { input_tokens: 10, output_tokens: 5 } }, { model: "claude-opus-4-7" });
    expect(await costRow(id)).toMatchObject({ model: "claude-opus-4-7", input_tokens: 10, output_tokens: 5, cost_usd: null });
  });

  it("writes no row for a job that reported neither usage nor a price: unknown stays unknown", async () => {
    const id = await runJob("bob", { text: "[offline runtime] done", runtime: "offline", duration_ms: 1 });
    expect((await call(`/v1/admin/jobs/${id}`)).body.status).toBe("completed");
    expect(await costRow(id)).toBeNull();
  });

  it("adds nothing when a completion's notice is delivered again", async () => {
    const { body } = await call("/v1/admin/jobs", { body: { kind: "utility", runtime: "offline", prompt: "again" } });
    const notice: InboxNotice = {
      job_id: body.job_id,
      kind: "utility",
      owner: { kind: "admin", id: "again" },
      type: "job.completed",
      status: "completed",
      attempt: 1,
      leased_by: "rnr_x",
      at: NOW,
      runtime: "offline",
      result: { text: "x", usage: { input_tokens: 1 }, cost_usd: 0.5 },
    };
    const db = getDb(env.DB);
    await recordInboxNotices(db, "inbox-again", [{ seq: 10, notice }]);
    await recordInboxNotices(db, "inbox-again", [{ seq: 10, notice: { ...notice, result: { cost_usd: 9 } } }]);
    const rows = await env.DB.prepare(`SELECT cost_usd FROM cost_entries WHERE job_id = ?`).bind(body.job_id).all();
    expect(rows.results).toEqual([{ cost_usd: 0.5 }]);
    // Nor to the month's totals: counted once.
    const total = await env.DB.prepare(
      `SELECT jobs, cost_usd, priced_jobs, tokens, token_jobs FROM spend_totals WHERE scope = 'company' AND month = '2031-03'`,
    ).first();
    expect(total).toMatchObject({ cost_usd: expect.closeTo(0.6, 6), priced_jobs: 2 });
    await env.DB.prepare(`DELETE FROM cost_entries WHERE job_id = ?`).bind(body.job_id).run();
  });
});

describe("GET /v1/cost/ledger", () => {
  it("sums by employee, saying unknown where no job of the group reported a figure", async () => {
    await runJob("bob", ran({ input: 7, output: 3 }, undefined, "gpt-5.1-codex"));
    const res = await call("/v1/cost/ledger?group_by=employee");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ group_by: "employee", from: "2031-03-01", to: "2031-03-31" });
    expect(res.body.rows).toEqual([
      {
        key: "ada",
        jobs: 2,
        input_tokens: 110,
        output_tokens: 55,
        cache_read_input_tokens: 4_000,
        cache_creation_input_tokens: "unknown",
        cost_usd: 0.1,
        jobs_without_cost: 1,
      },
      {
        key: "bob",
        jobs: 1,
        input_tokens: 7,
        output_tokens: 3,
        cache_read_input_tokens: "unknown",
        cache_creation_input_tokens: "unknown",
        cost_usd: "unknown",
        jobs_without_cost: 1,
      },
    ]);
  });

  it("groups by model, runtime, project and day", async () => {
    const byModel = (await call("/v1/cost/ledger?group_by=model")).body.rows;
    expect(byModel.map((r: { key: string; jobs: number; cost_usd: unknown }) => [r.key, r.jobs, r.cost_usd])).toEqual([
      ["claude-sonnet-4-6", 1, 0.1],
      ["claude-opus-4-7", 1, "unknown"],
      ["gpt-5.1-codex", 1, "unknown"],
    ]);
    expect((await call("/v1/cost/ledger?group_by=runtime")).body.rows).toMatchObject([{ key: "claude", jobs: 3, cost_usd: 0.1 }]);
    expect((await call("/v1/cost/ledger?group_by=project")).body.rows).toMatchObject([{ key: null, jobs: 3 }]);
    expect((await call("/v1/cost/ledger?group_by=day")).body.rows).toMatchObject([{ key: "2031-03-10", jobs: 3, input_tokens: 117 }]);
  });

  it("reads another month or a range of days, and refuses a reversed range", async () => {
    const feb = await call("/v1/cost/ledger?group_by=day&month=2031-02");
    expect(feb.body).toEqual({ group_by: "day", from: "2031-02-01", to: "2031-02-28", rows: [] });
    const range = await call("/v1/cost/ledger?group_by=day&from=2031-03-10&to=2031-03-10");
    expect(range.body.rows).toHaveLength(1);
    const reversed = await call("/v1/cost/ledger?from=2031-03-11&to=2031-03-10");
    expect(reversed.status).toBe(422);
    expect((await call("/v1/cost/ledger?month=2031-13")).status).toBe(422);
    expect((await call("/v1/cost/ledger?from=2031-02-30")).status).toBe(422);
    expect((await call("/v1/cost/ledger?from=2548-65-41")).status).toBe(422);
  });

  it("is for operators: a viewer reads it, no token is refused", async () => {
    const viewer = await createOperator("viewer", "ledger-viewer");
    expect((await call("/v1/cost/ledger", { token: viewer })).status).toBe(200);
    expect((await call("/v1/cost/ledger", { token: null })).status).toBe(401);
  });
});
