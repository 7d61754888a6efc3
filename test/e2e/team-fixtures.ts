/** The goal both Team-as-Agent e2e files start: a planner, one codex executor, a verifier of another family. */
export const TEAM = {
  enabled: true,
  executor_fanout: 1,
  roles: {
    planner: { runtime: "claude", model: "claude-sonnet-4-6", effort: "high" },
    executor: { runtime: "codex", model: "gpt-5.5", effort: "medium" },
    verifier: { runtime: "claude", model: "claude-haiku-4-5", effort: "low" },
  },
};
export const GOAL = {
  title: "Write the onboarding notes",
  acceptance_criteria: ["notes/a.md exists", "notes/b.md exists", "both describe the first week"],
  signals: { independent_items: 4, dependency_hubs: 0, fits_one_context: false, produces_artifacts: true },
};
