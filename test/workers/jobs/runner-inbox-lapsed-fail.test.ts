import { describe, expect, it } from "vitest";
import { enqueueJob, freshInbox, leaseFrom, recordingOwnerCalls, VISIBILITY_MS } from "../../factories/inbox";

describe("a lapsed holder's failure after an earlier attempt failed", () => {
  it("is applied (the job fails), not answered as a duplicate while the job is retried", async () => {
    await recordingOwnerCalls(async (calls) => {
      const stub = freshInbox();
      const t0 = Date.now();
      const { job_id } = await enqueueJob(stub, t0);

      // Attempt 1 fails retryably: the job goes back to the queue.
      const [first] = await leaseFrom(stub, t0, { runnerId: "rnr_a" });
      const retry = await stub.fail({
        jobId: job_id,
        leaseId: first!.lease_id,
        runnerId: "rnr_a",
        error: { code: "rate_limited", message: "try later" },
        retryable: true,
        now: t0 + 1_000,
      });
      expect(retry).toMatchObject({ ok: true, status: "queued" });

      // Attempt 2: runner b's lease lapses (its laptop slept), and nobody has re-leased the job yet.
      const [second] = await leaseFrom(stub, t0 + 2_000, { runnerId: "rnr_b" });
      expect(second!.attempt).toBe(2);
      const lapseAt = t0 + 2_000 + VISIBILITY_MS + 1;
      expect(await stub.get(job_id)).toMatchObject({ status: "leased" });

      // Runner b wakes up and reports that its CLI is not logged in: not retryable.
      const failed = await stub.fail({
        jobId: job_id,
        leaseId: second!.lease_id,
        runnerId: "rnr_b",
        error: { code: "not_logged_in", message: "claude is not logged in" },
        retryable: false,
        now: lapseAt,
      });
      expect(failed).toEqual({ ok: true, duplicate: false, status: "failed" });
      expect(await stub.get(job_id)).toMatchObject({ status: "failed", attempt: 2 });
      expect(calls.find((c) => c.job_id === job_id)).toMatchObject({ status: "failed", error: { code: "not_logged_in" } });
    });
  });
});
