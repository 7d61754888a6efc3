/**
 * The goal both Team-as-Agent e2e files start: a planner, one codex executor, a verifier of another
 * family. The gate measures this goal solo (its third criterion ties the two files together), and the
 * e2e files test the team's rounds, not the gate: `always_team` is the seed's test-only mode for that.
 */
export const TEAM = {
  enabled: true,
  gate: "always_team",
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
};
