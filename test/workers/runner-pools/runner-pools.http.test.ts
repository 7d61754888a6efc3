import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { getRunnerInbox } from "../../../src/durable-objects/runner-inbox-rpc";
import { inboxConfig } from "../../../src/jobs/inbox-config";
import { inboxOfJob } from "../../../src/jobs/inbox-pools";
import { enqueueRouted, withdrawEverywhere } from "../../../src/jobs/inbox-routing";
import type { Runtime } from "../../../src/jobs/payloads";
import { prepareJob } from "../../../src/jobs/submit";
import { call, createRunner } from "../../factories";
import { leaseOnce, submitDelivered, type LeasedOverHttp } from "../../factories/runner-protocol";

const RESULT = { text: "done", runtime: "offline", duration_ms: 1 };
const pool = (name: string) => getRunnerInbox(env, name);
const jobsOf = (res: { body: { jobs: LeasedOverHttp[] } }) => res.body.jobs;
const complete = (token: string, job: LeasedOverHttp) =>
  call(`/v1/runner/jobs/${job.job_id}/complete`, { token, body: { lease_id: job.lease_id, result: RESULT } });

/** Leases (wait 0) until every id in `want` came back, or gives up; returns everything it got. */
async function leaseAll(token: string, runtimes: string[], want: string[]): Promise<LeasedOverHttp[]> {
  const got: LeasedOverHttp[] = [];
  for (let i = 0; i < 40 && !want.every((id) => got.some((j) => j.job_id === id)); i++) {
    got.push(...jobsOf(await leaseOnce(token, { capacity: 10, runtimes })));
    await new Promise((r) => setTimeout(r, 50));
  }
  return got;
}

describe("the RunnerInbox partitioned by runtime pool (issue 26, item 4)", () => {
  it("puts jobs of two runtimes into two pools, and a runner offering one never sees the other's", async () => {
    const codex = await submitDelivered({ runtime: "codex" });
    const grok = await submitDelivered({ runtime: "grok" });
    expect(await pool("pool:codex").get(codex)).toMatchObject({ status: "queued" });
    expect(await pool("pool:codex").get(grok)).toBeNull();
    expect(await pool("pool:grok").get(grok)).toMatchObject({ status: "queued" });
    expect(await pool("fleet").get(codex)).toBeNull();

    const grokOnly = await createRunner("grok-only");
    const leased = jobsOf(await leaseOnce(grokOnly.token, { capacity: 10, runtimes: ["grok"] }));
    expect(leased.map((j) => j.job_id)).toEqual([grok]);
    expect(leased[0]!.lease_id).toMatch(/~pool:grok$/);
    expect(jobsOf(await leaseOnce(grokOnly.token, { capacity: 10, runtimes: ["grok"] }))).toEqual([]);
    expect(await pool("pool:codex").get(codex)).toMatchObject({ status: "queued" });
    expect((await complete(grokOnly.token, leased[0]!)).status).toBe(200);
    const codexRunner = await createRunner("codex-only");
    for (const job of await leaseAll(codexRunner.token, ["codex"], [codex]))
      expect((await complete(codexRunner.token, job)).status).toBe(200);
  });

  it("leases from every pool a runner offers, up to its capacity", async () => {
    const ids = [
      await submitDelivered({ runtime: "codex" }),
      await submitDelivered({ runtime: "antigravity" }),
      await submitDelivered({ runtime: "codex" }),
    ];
    const both = await createRunner("both");
    const first = jobsOf(await leaseOnce(both.token, { capacity: 2, runtimes: ["codex", "antigravity"] }));
    expect(first).toHaveLength(2);
    const rest = await leaseAll(
      both.token,
      ["codex", "antigravity"],
      ids.filter((id) => !first.some((j) => j.job_id === id)),
    );
    const all = [...first, ...rest];
    for (const id of ids) expect(all.map((j) => j.job_id)).toContain(id);
    expect(new Set(all.map((j) => j.lease_id.split("~")[1]))).toEqual(new Set(["pool:codex", "pool:antigravity"]));
    for (const job of all) expect((await complete(both.token, job)).status).toBe(200);
    for (const id of ids) expect((await call(`/v1/admin/jobs/${id}`)).body).toMatchObject({ status: "completed", attempt: 1 });
  });

  it("a long-poll over two pools takes the first claim, leaves nothing held in the other, and ack, extend, fail reach the job's pool", async () => {
    const runner = await createRunner("waiting");
    const poll = leaseOnce(runner.token, { capacity: 1, wait_ms: 5_000, runtimes: ["codex", "grok"] });
    await new Promise((r) => setTimeout(r, 300));
    const jobId = (await call("/v1/admin/jobs", { body: { kind: "utility", runtime: "grok", prompt: "wake" } })).body.job_id as string;
    const [job] = jobsOf(await poll);
    expect(job).toMatchObject({ job_id: jobId, ack_required: true });
    expect(job!.lease_id).toMatch(/~pool:grok$/);
    expect((await pool("pool:codex").runnerActivity()).find((a) => a.runner_id === runner.id)).toMatchObject({ leased_jobs: 0 });

    const ack = await call(`/v1/runner/jobs/${jobId}/ack`, { token: runner.token, body: { lease_id: job!.lease_id } });
    expect(ack.status).toBe(200);
    expect(await pool("pool:grok").get(jobId)).toMatchObject({ status: "leased", acknowledged: true });
    const extend = await call(`/v1/runner/jobs/${jobId}/extend`, {
      token: runner.token,
      body: { lease_id: job!.lease_id, extend_ms: 30_000 },
    });
    expect(extend.status).toBe(200);
    // The pool in a lease id only saves a D1 read: without it (or with a wrong one) the job's own pool
    // is found from its row, so a made-up lease is a stale lease (409) as with one inbox, not a missing job.
    const bare = job!.lease_id.split("~")[0];
    const slow = await call(`/v1/runner/jobs/${jobId}/extend`, { token: runner.token, body: { lease_id: bare, extend_ms: 30_000 } });
    expect(slow.status).toBe(200);
    const madeUp = await call(`/v1/runner/jobs/${jobId}/complete`, {
      token: runner.token,
      body: { lease_id: "lease_0000000000000000~pool:codex", result: RESULT },
    });
    expect(madeUp.status).toBe(409);
    const fail = await call(`/v1/runner/jobs/${jobId}/fail`, {
      token: runner.token,
      body: { lease_id: job!.lease_id, error: { code: "cli_error", message: "no" }, retryable: false },
    });
    expect(fail.status).toBe(200);
    expect(fail.body).toMatchObject({ status: "failed", duplicate: false });
    expect((await call(`/v1/admin/jobs/${jobId}`)).body).toMatchObject({ status: "failed" });
  });

  it("a cancelled poll id claims nothing in any pool, however many calls the fan-out makes under it", async () => {
    const jobId = await submitDelivered({ runtime: "grok", prompt: "not for a dead poll" });
    const runner = await createRunner("cancelled-first");
    const pollId = `poll-${crypto.randomUUID()}`;
    // The cancel can overtake the lease it cancels (the runner hung up while its request was on the way).
    expect((await call(`/v1/runner/polls/${pollId}/cancel`, { token: runner.token, body: {} })).status).toBe(200);
    const res = await leaseOnce(runner.token, { capacity: 1, wait_ms: 1_000, runtimes: ["codex", "grok"], poll_id: pollId } as never);
    expect(jobsOf(res)).toEqual([]);
    expect(await pool("pool:grok").get(jobId)).toMatchObject({ status: "queued", attempt: 0 });
    const other = await createRunner("after-cancel");
    for (const job of await leaseAll(other.token, ["grok"], [jobId])) expect((await complete(other.token, job)).status).toBe(200);
  });

  it("sums the admin runner view over pools, and revoking reaches every pool", async () => {
    const runner = await createRunner("summed");
    const ids = [await submitDelivered({ runtime: "codex" }), await submitDelivered({ runtime: "antigravity" })];
    const held = await leaseAll(runner.token, ["codex", "antigravity"], ids);
    expect(new Set(held.map((j) => j.job_id))).toEqual(new Set(ids));
    const view = await call(`/v1/admin/runners/${runner.id}`);
    expect(view.body).toMatchObject({ leased_jobs: 2 });
    expect(view.body.last_poll_at).not.toBeNull();
    const listed = (await call("/v1/admin/runners?limit=100")).body.runners.find((r: { runner_id: string }) => r.runner_id === runner.id);
    expect(listed).toMatchObject({ leased_jobs: 2 });
    const revoked = await call(`/v1/admin/runners/${runner.id}`, { method: "DELETE" });
    expect(revoked.body.inbox).toMatchObject({ requeued: 2, released: 0, dead: 0 });
    for (const id of ids) expect((await call(`/v1/admin/jobs/${id}`)).body).toMatchObject({ status: "queued" });
  });

  it("sweeps every pool: an expired lease in any pool goes back to its queue", async () => {
    const runner = await createRunner("lapsing");
    const id = await submitDelivered({ runtime: "antigravity" });
    await leaseAll(runner.token, ["antigravity"], [id]);
    await call("/v1/admin/clock", { body: { advance_ms: 61_000 } });
    const summary = (await call("/v1/admin/ticks/leases", { method: "POST" })).body.summary;
    expect(summary.inboxes).toBe(6);
    expect(summary.requeued).toBeGreaterThanOrEqual(1);
    expect(await pool("pool:antigravity").get(id)).toMatchObject({ status: "queued", attempt: 1 });
  });

  it("withdraws an owner's queued jobs from every pool", async () => {
    const db = getDb(env.DB);
    const now = new Date((await call("/v1/admin/clock")).body.now as string);
    const owner = { kind: "admin" as const, id: `withdraw-${crypto.randomUUID()}` };
    const prepared = (["codex", "grok", "claude"] as Runtime[]).map((runtime) =>
      prepareJob(db, { kind: "utility", payload: { runtime, prompt: "never", timeout_ms: 60_000 } as never, owner }, now),
    );
    for (const p of prepared) await db.batch(p.statements);
    const layout = inboxConfig.schema.parse({});
    await enqueueRouted(env, layout, {
      messages: prepared.map((p) => p.message),
      maxAttempts: 3,
      maxQueueMs: 86_400_000,
      now: now.getTime(),
    });
    const { withdrawn } = await withdrawEverywhere(env, { owner, error: { code: "round_ended", message: "gone" }, now: now.getTime() });
    expect(new Set(withdrawn)).toEqual(new Set(prepared.map((p) => p.jobId)));
    for (const p of prepared)
      expect(await pool(inboxOfJob(layout, { ...p.message, runtime: p.message.payload.runtime })).get(p.jobId)).toMatchObject({
        status: "dead",
      });
  });

  it("hands no job out twice to concurrent runners leasing across pools", async () => {
    const runtimes: Runtime[] = ["codex", "grok", "antigravity"];
    const ids: string[] = [];
    for (let i = 0; i < 18; i++)
      ids.push((await call("/v1/admin/jobs", { body: { kind: "utility", runtime: runtimes[i % 3], prompt: `c${i}` } })).body.job_id);
    const runners = await Promise.all([0, 1, 2, 3].map((i) => createRunner(`concurrent-${i}`)));
    const offers = [
      ["codex", "grok"],
      ["grok", "antigravity"],
      ["antigravity", "codex"],
      ["codex", "grok", "antigravity"],
    ];
    const seen = new Map<string, number>();
    const deadline = Date.now() + 20_000;
    await Promise.all(
      runners.map(async (runner, i) => {
        while (Date.now() < deadline && ids.some((id) => !seen.has(id))) {
          const jobs = jobsOf(await leaseOnce(runner.token, { capacity: 2, wait_ms: i % 2 === 0 ? 0 : 300, runtimes: offers[i]! }));
          for (const job of jobs) {
            seen.set(job.job_id, (seen.get(job.job_id) ?? 0) + 1);
            if (job.ack_required)
              await call(`/v1/runner/jobs/${job.job_id}/ack`, { token: runner.token, body: { lease_id: job.lease_id } });
            expect((await complete(runner.token, job)).status).toBe(200);
          }
        }
      }),
    );
    const mine = ids.map((id) => seen.get(id) ?? 0);
    expect(mine.every((n) => n === 1)).toBe(true);
  });
});

describe("hash shards within a pool", () => {
  it("spreads a sharded runtime's jobs over shards and a runner drains them all by stealing; lowering the count is refused", async () => {
    const from = new Date(Date.parse((await call("/v1/admin/clock")).body.now as string) - 60_000).toISOString();
    const put = await call("/v1/config/inbox", { method: "PUT", body: { shards: { claude: [{ from, shards: 3 }] } } });
    expect(put.status).toBe(200);
    const lower = await call("/v1/config/inbox", {
      method: "PUT",
      body: {
        shards: {
          claude: [
            { from, shards: 3 },
            { from: new Date(Date.parse(from) + 1_000).toISOString(), shards: 2 },
          ],
        },
      },
    });
    expect(lower.status).toBe(422);

    const ids: string[] = [];
    for (let i = 0; i < 9; i++) ids.push(await submitDelivered({ runtime: "claude", prompt: `s${i}` }));
    const layout = inboxConfig.schema.parse(put.body);
    const homes = new Set<string>();
    for (const id of ids) {
      const row = (await call(`/v1/admin/jobs/${id}`)).body;
      const home = inboxOfJob(layout, { job_id: id, runtime: "claude", enqueued_at: row.created_at });
      homes.add(home);
      expect(await pool(home).get(id)).toMatchObject({ status: "queued" });
    }
    expect(homes.size).toBeGreaterThan(1);
    const runner = await createRunner("sharded");
    const got = await leaseAll(runner.token, ["claude"], ids);
    expect(new Set(got.map((j) => j.job_id))).toEqual(new Set(ids));
    expect(got).toHaveLength(ids.length);
    for (const job of got) expect((await complete(runner.token, job)).status).toBe(200);
    await call("/v1/config/inbox", { method: "PUT", body: {} });
  });

  it("with pools off puts every job in the one fleet inbox, with bare lease ids", async () => {
    expect((await call("/v1/config/inbox", { method: "PUT", body: { pools: false } })).status).toBe(200);
    const id = await submitDelivered({ runtime: "codex", prompt: "single" });
    expect(await pool("fleet").get(id)).toMatchObject({ status: "queued" });
    const runner = await createRunner("single");
    const [job] = (await leaseAll(runner.token, ["codex"], [id])).filter((j) => j.job_id === id);
    expect(job!.lease_id).not.toContain("~");
    expect((await complete(runner.token, job!)).status).toBe(200);
    await call("/v1/config/inbox", { method: "PUT", body: {} });
  });
});
