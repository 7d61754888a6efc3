import { describe, expect, it } from "vitest";
import { createTask, newTask, putEmployee, setConfig } from "../../factories/org";

describe("task classes spelled like Object's own properties", () => {
  it("route by the hierarchy (roster_empty) under round_robin and llm_select instead of answering 500", async () => {
    await putEmployee("proto-lead");
    for (const policy of ["round_robin", "llm_select"]) {
      await setConfig("dispatch", { policy, rosters: {} });
      for (const tag of ["constructor", "__proto__", "hasOwnProperty", "valueOf"]) {
        const res = await newTask({ assignee: "proto-lead", tags: [tag] });
        expect(res.status, `${policy} ${tag}: ${JSON.stringify(res.body)}`).toBe(201);
        expect(res.body).toMatchObject({ assigned_to: "proto-lead", routed_by: "hierarchy", task_class: tag });
        expect(res.body.route).toEqual({ policy, fallback: "roster_empty" });
      }
    }
    await setConfig("dispatch", {});
  });

  it("still uses a roster configured for such a class", async () => {
    for (const id of ["proto-boss", "proto-a", "proto-b"]) await putEmployee(id);
    await setConfig("dispatch", { policy: "round_robin", rosters: { constructor: ["proto-a", "proto-b"] } });
    const picks = [];
    for (let i = 0; i < 2; i++) picks.push(await createTask({ assignee: "proto-boss", tags: ["constructor"] }));
    expect(picks.map((p) => [p.assigned_to, p.routed_by])).toEqual([
      ["proto-a", "round_robin"],
      ["proto-b", "round_robin"],
    ]);
    await setConfig("dispatch", {});
  });
});
