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

  it("accepts a finish only under the current lease, and a repeat of the same finish as a duplicate", () => {
    expect(checkFinish({ status: "leased", leaseId: "l1" }, "l1", "completed")).toBe("ok");
    expect(checkFinish({ status: "leased", leaseId: "l2" }, "l1", "completed")).toBe("stale");
    expect(checkFinish({ status: "completed", leaseId: "l1" }, "l1", "completed")).toBe("duplicate");
    expect(checkFinish({ status: "failed", leaseId: "l1" }, "l1", "completed")).toBe("stale");
    // lapsed but not yet re-leased: the holder's finished work still counts
    expect(checkFinish({ status: "queued", leaseId: "l1" }, "l1", "completed")).toBe("ok");
  });
});
