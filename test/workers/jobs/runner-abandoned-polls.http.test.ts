import { describe, expect, it } from "vitest";
import { call, createRunner, utilityJob } from "../../factories";
import { sleep } from "../../factories/inbox";
import { leaseOnce, type LeasedOverHttp } from "../../factories/runner-protocol";

/** Starts a long-poll, then submits a job while it waits: what the poll claims was claimed after waiting. */
async function claimAfterWaiting(token: string, prompt: string): Promise<LeasedOverHttp> {
  const poll = leaseOnce(token, { capacity: 1, wait_ms: 20_000 });
  await sleep(200);
  const { body } = await call("/v1/admin/jobs", { body: utilityJob({ prompt }) });
  const res = await poll;
  expect(res.status).toBe(200);
  expect(res.body.jobs).toHaveLength(1);
  const job = res.body.jobs[0] as LeasedOverHttp;
  expect(job.job_id).toBe(body.job_id);
  return job;
}

describe("abandoned long-polls (issue 5, item 2)", () => {
  it("makes a claim handed out after a poll waited count only once acknowledged; an unacknowledged one returns to the queue without counting the attempt", async () => {
    const alive = await createRunner("alive");
    const dead = await createRunner("dead");
    const acked = await claimAfterWaiting(alive.token, "acknowledged");
    expect(acked).toMatchObject({ ack_required: true, attempt: 1 });
    const ack = await call(`/v1/runner/jobs/${acked.job_id}/ack`, { token: alive.token, body: { lease_id: acked.lease_id } });
    expect(ack.status).toBe(200);
    expect(ack.body).toEqual({ job_id: acked.job_id, lease_expires_at: acked.lease_expires_at });

    const stranded = await claimAfterWaiting(dead.token, "never acknowledged");
    // runner.ack_window_ms (10 s) passes with no word from the dead runner
    await call("/v1/admin/clock", { body: { advance_ms: 10_500 } });
    const tick = await call("/v1/admin/ticks/leases", { method: "POST" });
    expect(tick.body.summary).toMatchObject({ unacknowledged: 1 });

    expect((await call(`/v1/admin/jobs/${stranded.job_id}`)).body).toMatchObject({ status: "queued", attempt: 0, attempts: [] });
    expect((await call(`/v1/admin/jobs/${acked.job_id}`)).body).toMatchObject({ status: "leased", attempt: 1 });
    const requeued = await call(`/v1/events?type=job.requeued&subject=${stranded.job_id}`);
    expect(requeued.body.events).toEqual([
      expect.objectContaining({ payload: expect.objectContaining({ reason: "lease_unacknowledged", attempt: 0 }) }),
    ]);

    // a live runner takes it at attempt 1; the dead runner's late ack is refused
    const again = (await leaseOnce(alive.token, { capacity: 5 })).body.jobs.find((j: LeasedOverHttp) => j.job_id === stranded.job_id);
    expect(again).toMatchObject({ attempt: 1, ack_required: false });
    const late = await call(`/v1/runner/jobs/${stranded.job_id}/ack`, { token: dead.token, body: { lease_id: stranded.lease_id } });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ code: "stale_lease", job_status: "leased" });
  });

  it("ends a revoked runner's open poll when an admin revokes its token, and the next job goes to another runner at attempt 1", async () => {
    const revoked = await createRunner("to-revoke");
    const other = await createRunner("other");
    const started = Date.now();
    const poll = leaseOnce(revoked.token, { capacity: 1, wait_ms: 20_000 });
    await sleep(300);
    const del = await call(`/v1/admin/runners/${revoked.id}`, { method: "DELETE" });
    expect(del.status).toBe(200);
    expect(del.body.inbox).toMatchObject({ polls_ended: 1 });
    const ended = await poll;
    expect(ended.body.jobs).toEqual([]);
    // ended by the revocation, not by its 20 s wait
    expect(Date.now() - started).toBeLessThan(15_000);

    const { body } = await call("/v1/admin/jobs", { body: utilityJob({ prompt: "after revocation" }) });
    expect((await leaseOnce(revoked.token)).status).toBe(401);
    let taken: LeasedOverHttp | undefined;
    for (let i = 0; i < 40 && !taken; i++) {
      taken = (await leaseOnce(other.token, { capacity: 5, wait_ms: 1_000 })).body.jobs.find(
        (j: LeasedOverHttp) => j.job_id === body.job_id,
      );
    }
    expect(taken).toMatchObject({ attempt: 1 });
  });
});
