import { createScheduledController } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { count, eq } from "drizzle-orm";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { topologyDriver, topologyProposals } from "../../../src/db/schema";
import { topologyConfig } from "../../../src/topology/config";
import { proposeOnce } from "../../../src/topology/proposals";
import worker from "../../../src/workers/index";
import { call } from "../../factories";
import {
  advanceClock,
  createTask,
  decide,
  DONE,
  eventsOf,
  FAILED,
  manager,
  setConfig,
  settledTasks,
  team,
  tick,
} from "../../factories/org";

const DAY = 86_400_000;
const db = () => getDb(env.DB);
const proposalsFor = (cls: string) => db().select().from(topologyProposals).where(eq(topologyProposals.taskClass, cls));
const clockNow = async () => new Date((await call("/v1/admin/clock")).body.now);

async function badEdge(cls: string, from: string, to: string) {
  await settledTasks(from, cls, [FAILED, FAILED, FAILED, FAILED, DONE]);
  await settledTasks(to, cls, [DONE, DONE, DONE, DONE, DONE]);
}

describe("D5 guards", () => {
  // D5 starts only when someone can approve its proposals.
  beforeAll(async () => {
    await manager("gatekeeper");
  });
  // One proposal per tick period (tick_secs, 60 here): each test starts in a fresh period.
  beforeEach(async () => {
    await setConfig("topology_evolution", { enabled: true, tick_secs: 60, approval_ttl_secs: 3600 });
    await advanceClock(61_000);
  });

  it("treats an expired approval as a denial, then holds the edge for the cooldown (expired counts)", async () => {
    const mia = await manager("mia");
    await team("lead", ["alice", "bob", "dave", "erin"]);
    await badEdge("exp", "alice", "bob");
    const proposed = (await tick("topology")).proposal;
    expect(proposed.status).toBe("pending");
    await advanceClock(3_600_000);
    const resolved = await tick("topology");
    expect(resolved.resolved).toEqual([{ proposal_id: proposed.proposal_id, outcome: "expired" }]);
    expect(resolved.proposal.skipped).toContainEqual({ task_class: "exp", agent: "alice", reason: "cooldown" });
    expect((await call(`/v1/approvals/${proposed.approval_id}`)).body.status).toBe("expired");
    const rejected = (await eventsOf("topology.rejected")).find((e) => e.subject === proposed.proposal_id)!;
    expect(rejected.payload).toMatchObject({ reason: "expired" });
    expect((await createTask({ assignee: "alice", tags: ["exp"] })).routed_by).toBe("hierarchy");
    // Still held a minute before the 7 days are up; proposed again once the 7-day cooldown has passed (evidence still in the window).
    await advanceClock(7 * DAY - 3_600_000 - 60_000); // the cooldown ends 7 days after the proposal
    expect((await tick("topology")).proposal.skipped).toContainEqual({ task_class: "exp", agent: "alice", reason: "cooldown" });
    await advanceClock(2 * 60_000);
    const afterCooldown = await tick("topology");
    // Nothing was written since the last tick read the held edges: the cooldown ends on the clock alone.
    expect(afterCooldown.inputs).toBe("reused");
    const again = afterCooldown.proposal;
    expect(again).toMatchObject({ task_class: "exp", from_agent: "alice", status: "pending" });
    expect(await proposalsFor("exp")).toHaveLength(2);
    await decide(again.approval_id, "deny", mia.token);
    await tick("topology");
  });

  it("treats a denial as final for the cooldown too", async () => {
    const mia = await manager("dan");
    await badEdge("den", "dave", "erin");
    const proposed = (await tick("topology")).proposal;
    expect(proposed).toMatchObject({ task_class: "den", from_agent: "dave", to_agent: "erin" });
    await decide(proposed.approval_id, "deny", mia.token);
    await advanceClock(61_000);
    const after = await tick("topology");
    expect(after.resolved).toContainEqual({ proposal_id: proposed.proposal_id, outcome: "denied" });
    expect(after.proposal.skipped).toContainEqual({ task_class: "den", agent: "dave", reason: "cooldown" });
    expect((await eventsOf("topology.rejected")).find((e) => e.subject === proposed.proposal_id)!.payload.reason).toBe("denied");
    expect(
      (await call("/v1/topology", { token: mia.token })).body.overrides.filter((o: { task_class: string }) => o.task_class === "den"),
    ).toEqual([]);
  });

  it("refuses an approved reroute whose proposal changed after approval (action_changed, audited), routing nothing", async () => {
    const mia = await manager("ana");
    await badEdge("chg", "bob", "alice");
    const proposed = (await tick("topology")).proposal;
    await decide(proposed.approval_id, "approve", mia.token);
    await db().update(topologyProposals).set({ toAgent: "erin" }).where(eq(topologyProposals.id, proposed.proposal_id));
    const after = await tick("topology");
    expect(after.resolved).toContainEqual({ proposal_id: proposed.proposal_id, outcome: "action_changed" });
    const audit = (await eventsOf("approval.action_changed")).find((e) => e.subject === proposed.approval_id);
    expect(audit?.payload).toMatchObject({ reason: "action_changed", by: "topology" });
    expect((await eventsOf("topology.rejected")).find((e) => e.subject === proposed.proposal_id)!.payload.reason).toBe("action_changed");
    expect((await call(`/v1/approvals/${proposed.approval_id}`)).body.consumed_at).toBeUndefined();
    expect((await createTask({ assignee: "bob", tags: ["chg"] })).routed_by).toBe("hierarchy");
  });

  it("creates at most one proposal when ticks run at once", async () => {
    await manager("race");
    await team("lead2", ["r1", "r2", "r3", "r4"]);
    await badEdge("race-a", "r1", "r2");
    await badEdge("race-b", "r3", "r4");
    const summaries = await Promise.all(Array.from({ length: 5 }, () => tick("topology")));
    const made = summaries.filter((s) => s.ran && s.proposal?.proposal_id);
    expect(made).toHaveLength(1);
    // The others were either running at the same moment (busy) or came after it in the same period.
    for (const s of summaries.filter((x) => x !== made[0])) {
      expect(s.ran ? s.proposal.reason : s.reason).toMatch(/^(busy|proposed_this_period)$/);
    }
    const racing = [...(await proposalsFor("race-a")), ...(await proposalsFor("race-b"))];
    expect(racing).toHaveLength(1);
    // The next period proposes the other edge.
    await advanceClock(61_000);
    expect((await tick("topology")).proposal.task_class).toBe(racing[0]!.taskClass === "race-a" ? "race-b" : "race-a");
  });

  it("its guarded insert alone keeps concurrent proposers to one proposal per edge", async () => {
    await manager("guard");
    await team("lead3", ["g1", "g2"]);
    await badEdge("guarded", "g1", "g2");
    const cfg = topologyConfig.schema.parse({ enabled: true, tick_secs: 60 });
    const now = await clockNow();
    const results = await Promise.all(Array.from({ length: 5 }, () => proposeOnce(env, db(), cfg, now)));
    const landed = results.filter((r) => r.proposal_id !== null && (r as { task_class: string }).task_class === "guarded");
    expect(landed).toHaveLength(1);
    expect(await proposalsFor("guarded")).toHaveLength(1);
    expect((await eventsOf("topology.proposed")).filter((e) => e.payload.task_class === "guarded")).toHaveLength(1);
  });

  it("runs from cron only when tick_secs have passed since the last tick", async () => {
    await setConfig("topology_evolution", { enabled: true, tick_secs: 3600 });
    const lastTick = async () => (await db().select().from(topologyDriver).get())?.lastTickAt ?? null;
    const cron = async () => {
      await worker.scheduled(createScheduledController({ cron: "* * * * *", scheduledTime: Date.now() }), env);
    };
    await advanceClock(3_600_000);
    await cron();
    const ranAt = await lastTick();
    expect(Date.parse(ranAt!)).toBeGreaterThan(Date.now());
    await advanceClock(30 * 60_000);
    await cron();
    expect(await lastTick()).toBe(ranAt);
    await advanceClock(30 * 60_000);
    await cron();
    expect(await lastTick()).not.toBe(ranAt);
    const proposals = (await db().select({ n: count() }).from(topologyProposals).get())!.n;
    expect(proposals).toBeGreaterThan(0);
  });
});
