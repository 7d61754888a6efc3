import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { JobEnd } from "../../../src/jobs/job-end";
import { notifyOwner } from "../../../src/workers/owner-handlers";
import { call } from "../../factories";
import { propose, PROPOSAL } from "../../factories/council-http";
import { drainEvents, eligibleNode } from "../../factories/nodes";

// The inbox calls a job's owner at least once, possibly twice at the same time (DESIGN.md "Model
// work"). A prescreen verdict told twice must reject the proposal once, with one record of it.

describe("a prescreen verdict delivered twice at once", () => {
  it("rejects the proposal once: one council.proposal_rejected event and one notice to the proposer", async () => {
    await call("/v1/config/council", { method: "PUT", body: { prescreen: "model", prescreen_runtime: "claude", prescreen_wait_ms: 0 } });
    for (let i = 0; i < 5; i++) await eligibleNode(`pr-m${i}`, 50);
    const node = await eligibleNode("pr-proposer", 35);
    const res = await propose(node, { ...PROPOSAL, title: `${PROPOSAL.title} (twice)` });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const id = res.body.proposal_id as string;
    const jobId = (await call(`/v1/council/proposals/${id}`, { token: null })).body.prescreen.job_id as string;
    const end: JobEnd = {
      job_id: jobId,
      kind: "utility",
      owner: { kind: "council_proposal", id },
      status: "dead",
      attempt: 3,
      at: new Date().toISOString(),
      error: { code: "runtime_unavailable", message: "no claude here" },
      reason: "no_runner",
    };
    await Promise.all([notifyOwner(env, end), notifyOwner(env, end)]);
    const p = await call(`/v1/council/proposals/${id}`, { token: null });
    expect(p.body.status).toBe("rejected");
    const events = await call(`/v1/events?type=council.proposal_rejected&subject=${id}`);
    expect(events.body.events).toHaveLength(1);
    expect((await drainEvents(node)).filter((e) => e.type === "council_proposal_rejected")).toHaveLength(1);
  });
});
