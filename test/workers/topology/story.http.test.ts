import { describe, expect, it } from "vitest";
import { call } from "../../factories";
import {
  advanceClock,
  createTask,
  decide,
  DONE,
  eventsOf,
  FAILED,
  manager,
  NEEDS_HUMAN,
  putEmployee,
  setConfig,
  settle,
  settledTasks,
  team,
  tick,
} from "../../factories/org";

describe("D5 end to end: evidence → proposal → human approval → reroute → observation → rollback", () => {
  it("runs the whole story with the events the seed names", async () => {
    const mia = await manager("mia");
    await team("lead", ["alice", "bob", "dave"]);
    await putEmployee("carol");
    await setConfig("topology_evolution", { enabled: true });

    // Evidence: alice rejects 4 of 5 billing tasks (failed ×2, needs_human, a retry); bob does all 5 cleanly.
    const aliceIds = await settledTasks("alice", "billing", [FAILED, FAILED, NEEDS_HUMAN, { status: "done", retry_count: 1 }, DONE]);
    await settledTasks("bob", "billing", [DONE, DONE, DONE, DONE, DONE]);
    // Plain tasks and other classes are not billing goal evidence.
    await settledTasks("alice", "support", [DONE]);
    const inFlight = await createTask({ assignee: "alice", tags: ["billing"] });

    const first = await tick("topology");
    expect(first.proposal).toMatchObject({ task_class: "billing", from_agent: "alice", to_agent: "bob", status: "pending" });
    const { proposal_id, approval_id } = first.proposal;

    const topology = (await call("/v1/topology", { token: mia.token })).body;
    expect(topology).toMatchObject({ enabled: true, approval_broker_available: true, overrides: [] });
    expect(topology.pending).toEqual([
      expect.objectContaining({
        proposal_id,
        approval_id,
        task_class: "billing",
        from_agent: "alice",
        to_agent: "bob",
        evidence: expect.objectContaining({ samples: 5, reject_rate: 0.8, sibling: { agent: "bob", samples: 5, reject_rate: 0 } }),
      }),
    ]);
    const sampleIds = topology.pending[0].evidence.sample_task_ids;
    expect(sampleIds).toHaveLength(5);
    expect(new Set(sampleIds)).toEqual(new Set(aliceIds));
    expect(sampleIds.at(-1)).toBe(aliceIds[4]); // the one clean task comes last

    const approval = (await call(`/v1/approvals/${approval_id}`)).body;
    expect(approval).toMatchObject({
      action_kind: "topology_reroute",
      status: "pending",
      subject: "billing:alice",
      requested_by: "topology",
    });
    expect(approval.params).toEqual({ proposal_id, task_class: "billing", from_agent: "alice", to_agent: "bob" });

    // One proposal per tick period; in the next period no duplicate while the proposal is pending,
    // and nothing is routed before a human decides.
    expect((await tick("topology")).proposal).toMatchObject({ proposal_id: null, reason: "proposed_this_period" });
    await advanceClock(3_600_000);
    const second = await tick("topology");
    expect(second.proposal.proposal_id).toBeNull();
    expect(second.proposal.skipped).toEqual([{ task_class: "billing", agent: "alice", reason: "pending_proposal" }]);
    expect((await createTask({ assignee: "alice", tags: ["billing"] })).assigned_to).toBe("alice");

    expect((await decide(approval_id, "approve", mia.token)).status).toBe(200);
    const applied = await tick("topology");
    expect(applied.resolved).toEqual([{ proposal_id, outcome: "approved" }]);
    const [override] = (await call("/v1/topology", { token: mia.token })).body.overrides;
    expect(override).toMatchObject({
      task_class: "billing",
      from_agent: "alice",
      to_agent: "bob",
      status: "active",
      baseline_reject_rate: 0.8,
      approved_by: mia.id,
    });
    expect((await call(`/v1/approvals/${approval_id}`)).body.consumed_at).toBeTruthy();

    // New billing tasks for alice go to bob; other classes and the in-flight task keep their route.
    const rerouted = await createTask({ assignee: "alice", tags: ["billing"] });
    expect(rerouted).toMatchObject({ assigned_to: "bob", routed_by: "override" });
    expect((await call(`/v1/tasks/${rerouted.task_id}`)).body.route).toEqual({
      policy: "fixed_hierarchy",
      override_id: override.override_id,
    });
    expect((await createTask({ assignee: "alice", tags: ["support"] })).routed_by).toBe("hierarchy");
    expect((await call(`/v1/tasks/${inFlight.task_id}`)).body.assigned_to).toBe("alice");
    // The in-flight task settling under alice does not count as bob's observation.
    await settle(inFlight.task_id, FAILED);
    expect((await call("/v1/topology", { token: mia.token })).body.overrides[0].status).toBe("active");

    // Observation: bob's first rerouted task fails → rate 1.0 ≥ baseline 0.8 → rolled back at once.
    await settle(rerouted.task_id, FAILED);
    const after = (await call("/v1/topology", { token: mia.token })).body;
    expect(after.overrides[0]).toMatchObject({ status: "rolled_back", resolution: "not_better" });
    expect((await createTask({ assignee: "alice", tags: ["billing"] })).routed_by).toBe("hierarchy");

    const trail = (await eventsOf("topology.")).map((e) => e.type);
    expect(trail).toEqual(["topology.proposed", "topology.approved", "topology.rolled_back"]);
    const rolledBack = (await eventsOf("topology.rolled_back"))[0]!;
    expect(rolledBack.payload).toMatchObject({ reason: "not_better", samples: 1, reject_rate: 1, baseline_reject_rate: 0.8 });
    // A rolled-back edge is still in cooldown: no new proposal for it right away.
    const later = await tick("topology");
    expect(later.proposal.skipped).toContainEqual({ task_class: "billing", agent: "alice", reason: "cooldown" });
  });

  it("GET /v1/topology is for managers", async () => {
    const viewer = await call("/v1/admin/operators", { body: { name: "vi", role: "viewer" } });
    expect((await call("/v1/topology", { token: viewer.body.token })).status).toBe(403);
    expect((await call("/v1/topology", { token: null })).status).toBe(401);
  });
});
