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
  setConfig,
  settle,
  settledTasks,
  team,
  tick,
} from "../../factories/org";

const HOUR = 3_600_000;

/** Bad evidence for `from` in `cls`, good for `to`, a proposal, a human approval, and the override. */
async function approvedOverride(token: string, cls: string, from: string, to: string) {
  await settledTasks(from, cls, [FAILED, FAILED, FAILED, FAILED, FAILED]);
  await settledTasks(to, cls, [DONE, DONE, DONE, DONE, DONE]);
  const proposed = await tick("topology");
  expect(proposed.proposal).toMatchObject({ task_class: cls, from_agent: from, to_agent: to });
  await decide(proposed.proposal.approval_id, "approve", token);
  await tick("topology");
  const overrides = (await call("/v1/topology", { token })).body.overrides;
  return overrides.find((o: { task_class: string }) => o.task_class === cls);
}

describe("D5 observation outcomes", () => {
  it("confirms an override whose to_agent did better with enough samples, and keeps applying it", async () => {
    const mia = await manager("mia");
    await team("lead", ["alice", "bob", "dave"]);
    await setConfig("topology_evolution", { enabled: true });
    const override = await approvedOverride(mia.token, "deploy", "alice", "bob");
    expect(override).toMatchObject({ status: "active", extended: false });
    for (let i = 0; i < 5; i++) {
      const t = await createTask({ assignee: "alice", tags: ["deploy"] });
      expect(t.assigned_to).toBe("bob");
      // The reject comes last: a first sample at the baseline would roll back at once.
      await settle(t.task_id, i === 4 ? { status: "done", retry_count: 1 } : DONE); // 1 of 5: 0.2 < 1.0
    }
    expect((await tick("topology")).observed).toEqual([expect.objectContaining({ override_id: override.override_id, verdict: "keep" })]);
    await advanceClock(24 * HOUR);
    const judged = await tick("topology");
    expect(judged.observed).toEqual([{ override_id: override.override_id, verdict: "confirmed", samples: 5, reject_rate: 0.2 }]);
    const now = (await call("/v1/topology", { token: mia.token })).body.overrides.find(
      (o: { override_id: string }) => o.override_id === override.override_id,
    );
    expect(now.status).toBe("confirmed");
    expect((await createTask({ assignee: "alice", tags: ["deploy"] })).routed_by).toBe("override");
    expect((await eventsOf("topology.confirmed")).map((e) => e.subject)).toEqual([override.override_id]);
  });

  it("extends once when samples are short, then rolls back if they are still short", async () => {
    const mia = await manager("max");
    await team("lead2", ["erin", "finn"]);
    const override = await approvedOverride(mia.token, "ops", "erin", "finn");
    const t = await createTask({ assignee: "erin", tags: ["ops"] });
    await settle(t.task_id, DONE);
    await advanceClock(24 * HOUR);
    const extended = await tick("topology");
    expect(extended.observed).toContainEqual({ override_id: override.override_id, verdict: "extended", samples: 1, reject_rate: 0 });
    const view = (await call("/v1/topology", { token: mia.token })).body.overrides.find(
      (o: { override_id: string }) => o.override_id === override.override_id,
    );
    expect(view).toMatchObject({ status: "active", extended: true });
    expect(Date.parse(view.observe_until) - Date.parse(override.observe_until)).toBe(24 * HOUR);
    await advanceClock(12 * HOUR);
    expect((await tick("topology")).observed).toContainEqual(
      expect.objectContaining({ override_id: override.override_id, verdict: "keep" }),
    );
    await advanceClock(12 * HOUR);
    const ended = await tick("topology");
    expect(ended.observed).toContainEqual(expect.objectContaining({ override_id: override.override_id, verdict: "rolled_back" }));
    const rolled = (await eventsOf("topology.rolled_back")).find((e) => e.subject === override.override_id)!;
    expect(rolled.payload).toMatchObject({ reason: "insufficient_samples", samples: 1 });
    expect((await eventsOf("topology.extended")).filter((e) => e.subject === override.override_id)).toHaveLength(1);
    expect((await createTask({ assignee: "erin", tags: ["ops"] })).routed_by).toBe("hierarchy");
  });
});
