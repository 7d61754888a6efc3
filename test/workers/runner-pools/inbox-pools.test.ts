import { describe, expect, it } from "vitest";
import { inboxConfig } from "../../../src/jobs/inbox-config";
import {
  everyInbox,
  hash32,
  inboxOfJob,
  leaseTargets,
  routeLease,
  shardsAt,
  sumActivity,
  sumCounts,
  tagLease,
} from "../../../src/jobs/inbox-pools";

const layout = (value: unknown = {}) => inboxConfig.schema.parse(value);
const job = (job_id: string, runtime: "claude" | "codex" | "offline", enqueued_at = "2026-12-01T00:00:00Z") => ({
  job_id,
  runtime,
  enqueued_at,
});

describe("inbox pools: where a job lives (issue 26, item 4)", () => {
  it("puts each runtime in its own pool, and everything in the fleet with pools off", () => {
    expect(inboxOfJob(layout(), job("job_a", "claude"))).toBe("pool:claude");
    expect(inboxOfJob(layout(), job("job_a", "codex"))).toBe("pool:codex");
    expect(inboxOfJob(layout({ pools: false }), job("job_a", "codex"))).toBe("fleet");
  });

  it("spreads a sharded pool by job id from a step's `from` on, and keeps earlier jobs where they were", () => {
    const sharded = layout({ shards: { claude: [{ from: "2026-12-01T00:00:00Z", shards: 4 }] } });
    const before = job("job_x", "claude", "2026-11-30T23:59:59Z");
    expect(inboxOfJob(sharded, before)).toBe("pool:claude");
    const names = new Set(Array.from({ length: 64 }, (_, i) => inboxOfJob(sharded, job(`job_${i}`, "claude"))));
    expect(names).toEqual(new Set(["pool:claude", "pool:claude:1", "pool:claude:2", "pool:claude:3"]));
    expect(inboxOfJob(sharded, job("job_7", "claude"))).toBe(inboxOfJob(sharded, job("job_7", "claude")));
    expect(shardsAt(sharded, "claude", Date.parse("2026-12-02T00:00:00Z"))).toBe(4);
    expect(shardsAt(sharded, "codex", Date.parse("2026-12-02T00:00:00Z"))).toBe(1);
  });

  it("refuses lowering a shard count or steps out of order", () => {
    const bad = inboxConfig.schema.safeParse({
      shards: {
        claude: [
          { from: "2026-12-01T00:00:00Z", shards: 4 },
          { from: "2026-12-02T00:00:00Z", shards: 2 },
        ],
      },
    });
    expect(bad.success).toBe(false);
    const unordered = inboxConfig.schema.safeParse({
      shards: {
        codex: [
          { from: "2026-12-02T00:00:00Z", shards: 2 },
          { from: "2026-12-01T00:00:00Z", shards: 4 },
        ],
      },
    });
    expect(unordered.success).toBe(false);
  });

  it("lists every inbox for the sweep: the fleet, each pool and each shard ever configured", () => {
    expect(everyInbox(layout())).toEqual(["fleet", "pool:offline", "pool:claude", "pool:codex", "pool:antigravity", "pool:grok"]);
    const sharded = layout({ pools: false, shards: { codex: [{ from: "2026-12-01T00:00:00Z", shards: 3 }] } });
    expect(everyInbox(sharded)).toContain("pool:codex:2");
  });
});

describe("inbox pools: what a lease asks", () => {
  it("asks each offered pool, rotated, and long-polls each", () => {
    const t = leaseTargets(layout(), "runner_1", ["claude", "codex"], () => 0.99);
    expect(t.claim).toEqual(["pool:codex", "pool:claude"]);
    expect(t.poll).toEqual(["pool:codex", "pool:claude"]);
    expect(leaseTargets(layout({ pools: false }), "runner_1", ["claude", "codex"], Math.random)).toEqual({
      claim: ["fleet"],
      poll: ["fleet"],
    });
  });

  it("in a sharded pool asks the runner's own shard first, then one other (work stealing), and long-polls its own", () => {
    const sharded = layout({ shards: { claude: [{ from: "2026-12-01T00:00:00Z", shards: 4 }] } });
    const own = hash32("runner_1") % 4;
    const ownName = own === 0 ? "pool:claude" : `pool:claude:${own}`;
    for (const r of [0, 0.3, 0.6, 0.99]) {
      const t = leaseTargets(sharded, "runner_1", ["claude"], () => r);
      expect(t.claim[0]).toBe(ownName);
      expect(t.claim).toHaveLength(2);
      expect(t.claim[1]).not.toBe(ownName);
      expect(t.poll).toEqual([ownName]);
    }
  });
});

describe("inbox pools: lease ids and admin sums", () => {
  it("carries the pool inside the lease id, leaves the fleet's bare, and never routes a forged tag to a new object", () => {
    expect(routeLease(tagLease("pool:grok", "lease_ab"))).toEqual({ inbox: "pool:grok", leaseId: "lease_ab" });
    expect(routeLease(tagLease("pool:grok:3", "lease_ab"))).toEqual({ inbox: "pool:grok:3", leaseId: "lease_ab" });
    expect(tagLease("fleet", "lease_ab")).toBe("lease_ab");
    expect(routeLease("lease_ab")).toEqual({ inbox: "fleet", leaseId: "lease_ab" });
    expect(routeLease("lease_ab~pool:nobody")).toEqual({ inbox: "fleet", leaseId: "lease_ab~pool:nobody" });
    expect(routeLease("lease_ab~pool:grok:99")).toEqual({ inbox: "fleet", leaseId: "lease_ab~pool:grok:99" });
    expect(tagLease("pool:antigravity:63", "lease_0123456789abcdef").length).toBeLessThanOrEqual(64);
  });

  it("sums runner activity over pools: the latest poll, the jobs held everywhere", () => {
    const summed = sumActivity([
      [{ runner_id: "r1", last_poll_at: "2026-12-01T00:00:01.000Z", leased_jobs: 1 }],
      [
        { runner_id: "r1", last_poll_at: "2026-12-01T00:00:05.000Z", leased_jobs: 2 },
        { runner_id: "r2", last_poll_at: "2026-12-01T00:00:00.000Z", leased_jobs: 0 },
      ],
    ]);
    expect(summed).toEqual([
      { runner_id: "r1", last_poll_at: "2026-12-01T00:00:05.000Z", leased_jobs: 3 },
      { runner_id: "r2", last_poll_at: "2026-12-01T00:00:00.000Z", leased_jobs: 0 },
    ]);
    expect(
      sumCounts(
        [
          { a: 1, b: 2 },
          { a: 3, b: 0 },
        ],
        { a: 0, b: 0 },
      ),
    ).toEqual({ a: 4, b: 2 });
  });
});
