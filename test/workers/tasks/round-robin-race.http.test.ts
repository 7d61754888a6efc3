import { describe, expect, it } from "vitest";
import { createTask, eventsOf, putEmployee, setConfig } from "../../factories/org";

describe("round_robin under concurrent dispatch", () => {
  it("gives each concurrent task its own turn: four at once over a roster of two land two and two", async () => {
    for (const id of ["rrr-lead", "rrr-a", "rrr-b"]) await putEmployee(id);
    await setConfig("dispatch", { policy: "round_robin", rosters: { race: ["rrr-a", "rrr-b"] } });
    const picks = await Promise.all(Array.from({ length: 4 }, () => createTask({ assignee: "rrr-lead", tags: ["race"] })));
    const to = picks.map((p) => p.assigned_to).sort();
    expect(to).toEqual(["rrr-a", "rrr-a", "rrr-b", "rrr-b"]);
    // A dispatch that lost a turn and retried left no stray event: one task.created per task.
    const created = (await eventsOf("task.created")).filter((e) => e.payload.task_class === "race");
    expect(created.map((e) => e.subject).sort()).toEqual(picks.map((p) => p.task_id).sort());
    // The class's turn moved on once per task: the next one continues the rotation.
    const next = await createTask({ assignee: "rrr-lead", tags: ["race"] });
    expect(next.assigned_to).toBe("rrr-a");
    await setConfig("dispatch", {});
  });
});
