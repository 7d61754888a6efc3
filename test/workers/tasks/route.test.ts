import { describe, expect, it } from "vitest";
import { hierarchyRoute, overrideMayApply, roundRobinPick } from "../../../src/tasks/dispatch/route";
import { taskClassOf } from "../../../src/tasks/task-class";

describe("taskClassOf", () => {
  it("is the first tag, else the priority", () => {
    expect(taskClassOf(["billing", "eu"], "high")).toBe("billing");
    expect(taskClassOf([], "high")).toBe("high");
  });
});

describe("roundRobinPick", () => {
  it("walks the roster and wraps around", () => {
    expect([0, 1, 2, 3, 4].map((c) => roundRobinPick(["a", "b", "c"], c))).toEqual(["a", "b", "c", "a", "b"]);
    expect(() => roundRobinPick([], 0)).toThrow();
  });
});

describe("hierarchyRoute", () => {
  it("sends the task to its assignee, or to the override's to_agent, and records which", () => {
    expect(hierarchyRoute("fixed_hierarchy", "alice", null)).toEqual({
      assignedTo: "alice",
      routedBy: "hierarchy",
      route: { policy: "fixed_hierarchy" },
    });
    expect(hierarchyRoute("fixed_hierarchy", "alice", { id: "ovr_1", toAgent: "bob" })).toEqual({
      assignedTo: "bob",
      routedBy: "override",
      route: { policy: "fixed_hierarchy", override_id: "ovr_1" },
    });
    expect(hierarchyRoute("round_robin", "alice", null, { fallback: "roster_empty" }).route).toEqual({
      policy: "round_robin",
      fallback: "roster_empty",
    });
  });

  it("lets overrides apply under round_robin / llm_select only when the roster is empty (seed 000)", () => {
    expect(overrideMayApply("fixed_hierarchy", 3)).toBe(true);
    expect(overrideMayApply("round_robin", 0)).toBe(true);
    expect(overrideMayApply("round_robin", 2)).toBe(false);
    expect(overrideMayApply("llm_select", 2)).toBe(false);
  });
});
