import { describe, expect, it } from "vitest";
import { afterFailure, afterLeaseExpired, checkFinish } from "../../../src/jobs/lease-policy";

describe("lease policy", () => {
  it("re-queues a lapsed lease until the third attempt, then declares the job dead", () => {
    expect(afterLeaseExpired(1, 3).status).toBe("queued");
    expect(afterLeaseExpired(2, 3).status).toBe("queued");
    expect(afterLeaseExpired(3, 3)).toEqual({ status: "dead", reason: "lease_expired" });
  });

  it("fails a non-retryable failure at once and kills a retryable one only when attempts are used up", () => {
    expect(afterFailure(1, 3, false)).toEqual({ status: "failed", reason: "not_retryable" });
    expect(afterFailure(1, 3, true)).toEqual({ status: "queued", reason: "retryable_failure" });
    expect(afterFailure(3, 3, true)).toEqual({ status: "dead", reason: "attempts_exhausted" });
  });

  it("accepts a finish only under the current lease held by the same runner, and a repeat of the same finish as a duplicate", () => {
    const held = (status: "leased" | "queued" | "completed" | "failed", leaseId = "l1", leasedBy = "rnr_a") => ({
      status,
      leaseId,
      leasedBy,
    });
    expect(checkFinish(held("leased"), "l1", "rnr_a", "completed")).toBe("ok");
    expect(checkFinish(held("leased", "l2"), "l1", "rnr_a", "completed")).toBe("stale");
    // the right lease id under another runner's token is not its lease
    expect(checkFinish(held("leased"), "l1", "rnr_b", "completed")).toBe("stale");
    expect(checkFinish(held("completed"), "l1", "rnr_a", "completed")).toBe("duplicate");
    expect(checkFinish(held("completed"), "l1", "rnr_b", "completed")).toBe("stale");
    expect(checkFinish(held("failed"), "l1", "rnr_a", "completed")).toBe("stale");
    // lapsed but not yet re-leased: the holder's finished work still counts
    expect(checkFinish(held("queued"), "l1", "rnr_a", "completed")).toBe("ok");
  });
});
