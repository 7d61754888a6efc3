import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { councilSessions } from "../../../src/db/schema";
import { call, createRunner } from "../../factories";
import { advance, offlineAnswer, propose, PROPOSAL, runOneJob, tick } from "../../factories/council-http";
import { drainEvents, eligibleNode, heartbeat, type TestNode } from "../../factories/nodes";

const verdict =
  (v: "accept" | "reject", reason = "substantive and safe") =>
  () => ({ text: JSON.stringify({ verdict: v, reason }), runtime: "claude", model: "claude-test" });

async function configure(patch: Record<string, unknown>) {
  const res = await call("/v1/config/council", {
    method: "PUT",
    body: { prescreen: "model", prescreen_runtime: "claude", prescreen_wait_ms: 10_000, ...patch },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

let n = 0;
async function proposer(): Promise<TestNode> {
  return eligibleNode(`proposer-${n++}`, 35);
}
const titled = (t: string) => ({ ...PROPOSAL, title: `${PROPOSAL.title} (${t})` });

async function sessionsOf(proposalId: string) {
  return getDb(env.DB).select().from(councilSessions).where(eq(councilSessions.proposalId, proposalId));
}

describe("the model prescreen (a runner utility job)", () => {
  it("opens the session when the verdict accepts within the wait (201), recording the source", async () => {
    await configure({});
    for (let i = 0; i < 5; i++) await eligibleNode(`m${i}`, 50);
    const node = await proposer();
    const runner = await createRunner("prescreener");
    const post = propose(node, titled("accept"));
    const job = await runOneJob(["claude"], verdict("accept"), runner);
    expect(job.payload.prompt).toContain("<proposal>");
    const res = await post;
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ status: "deliberating", session_id: expect.stringMatching(/^delib_/) });
    const p = await call(`/v1/council/proposals/${res.body.proposal_id}`, { token: null });
    expect(p.body.prescreen).toMatchObject({ mode: "model", status: "passed", source: "claude", job_id: job.job_id });
  });

  it("answers 422 prescreen_rejected for a rejecting verdict and leaves no session", async () => {
    const node = await proposer();
    const post = propose(node, titled("reject"));
    await runOneJob(["claude"], verdict("reject", "vague scope"));
    const res = await post;
    expect([res.status, res.body.code, res.body.reason, res.body.verdict]).toEqual([
      422,
      "prescreen_rejected",
      "prescreen_rejected",
      "vague scope",
    ]);
    expect(await sessionsOf(res.body.proposal_id)).toEqual([]);
    expect((await call(`/v1/council/proposals/${res.body.proposal_id}`, { token: null })).body).toMatchObject({
      status: "rejected",
      session_id: null,
    });
  });

  it("fails closed: an unparseable verdict, the offline runtime's text and a failed job are all rejections", async () => {
    const node = await proposer();
    const post1 = propose(node, titled("chatty"));
    await runOneJob(["claude"], () => ({ text: "Sure! This proposal looks great, I'd accept it.", runtime: "claude" }));
    expect((await post1).body).toMatchObject({ status: 422, code: "prescreen_rejected", reason: "prescreen_unparseable" });

    const post2 = propose(node, titled("extra field"));
    await runOneJob(["claude"], () => ({ text: '{"verdict":"accept","reason":"ok","score":9}', runtime: "claude" }));
    expect((await post2).body).toMatchObject({ code: "prescreen_rejected", reason: "prescreen_unparseable" });

    await configure({ prescreen_runtime: "offline" });
    const other = await proposer();
    const post3 = propose(other, titled("offline"));
    await runOneJob(["offline"], offlineAnswer);
    expect((await post3).body).toMatchObject({ code: "prescreen_rejected", reason: "prescreen_unparseable" });

    await configure({});
    const post4 = propose(other, titled("failed"));
    const runner = await createRunner("failing");
    const deadline = Date.now() + 20_000;
    for (;;) {
      const lease = await call("/v1/runner/lease", { token: runner.token, body: { capacity: 1, wait_ms: 1_000, runtimes: ["claude"] } });
      const [job] = lease.body.jobs;
      if (job) {
        await call(`/v1/runner/jobs/${job.job_id}/fail`, {
          token: runner.token,
          body: { lease_id: job.lease_id, error: { code: "not_logged_in", message: "Not logged in" }, retryable: false },
        });
        break;
      }
      if (Date.now() > deadline) throw new Error("no job");
    }
    expect((await post4).body).toMatchObject({ code: "prescreen_rejected", reason: "prescreen_unavailable" });
  });

  it("answers 202 when the verdict is late; a late rejection reaches the proposer as council_proposal_rejected", async () => {
    await configure({ prescreen_wait_ms: 300 });
    const node = await proposer();
    const res = await propose(node, titled("late reject"));
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ proposal_id: expect.stringMatching(/^prop_/), session_id: null, status: "prescreening" });
    await runOneJob(["claude"], verdict("reject", "trivial"));
    expect((await call(`/v1/council/proposals/${res.body.proposal_id}`, { token: null })).body).toMatchObject({
      status: "rejected",
      rejection: { reason: "prescreen_rejected" },
    });
    const events = await drainEvents(node);
    expect(events).toEqual([
      expect.objectContaining({
        type: "council_proposal_rejected",
        payload: { proposal_id: res.body.proposal_id, reason: "prescreen_rejected", detail: "trivial" },
      }),
    ]);
  });

  it("opens the session when a late verdict accepts", async () => {
    const node = await proposer();
    const res = await propose(node, titled("late accept"));
    expect(res.status).toBe(202);
    await runOneJob(["claude"], verdict("accept"));
    const p = await call(`/v1/council/proposals/${res.body.proposal_id}`, { token: null });
    expect(p.body).toMatchObject({ status: "deliberating", session_id: expect.stringMatching(/^delib_/) });
    expect(await sessionsOf(res.body.proposal_id)).toHaveLength(1);
  });

  it("counts proposals awaiting their prescreen as pending: a third is 429, and a prescreen that never answers is rejected by the tick", async () => {
    const node = await proposer();
    expect((await propose(node, titled("pending 1"))).status).toBe(202);
    expect((await propose(node, titled("pending 2"))).status).toBe(202);
    const third = await propose(node, titled("pending 3"));
    expect([third.status, third.body.limit]).toEqual([429, "pending_proposals"]);
    await advance(30 * 60_000 + 1);
    await heartbeat(node);
    const summary = await tick();
    expect(summary.sessions.prescreen_timeouts).toBe(2);
    const events = await drainEvents(node);
    expect(events.map((e) => [e.type, e.payload.reason])).toEqual([
      ["council_proposal_rejected", "prescreen_timeout"],
      ["council_proposal_rejected", "prescreen_timeout"],
    ]);
    expect((await propose(node, titled("after timeout"))).status).toBe(202);
  });
});
