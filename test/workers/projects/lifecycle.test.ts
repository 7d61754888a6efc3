import { describe, expect, it } from "vitest";
import { PROJECT_STATUSES, type ProjectStatus } from "../../../src/db/schema";
import { ACTORS, legalSources, legalTargets, transitionVerdict, type Actor } from "../../../src/projects/lifecycle";

// The whole table, written out: every move that exists and who makes it. Every other pair of
// statuses, for every actor, must be refused.
const LEGAL: Record<string, Actor[]> = {
  "proposed>council_review": ["council"],
  "proposed>approved": ["council"],
  "proposed>archived": ["council", "manager"],
  "council_review>proposed": ["council"],
  "council_review>approved": ["council"],
  "council_review>archived": ["council"],
  "approved>proposed": ["council"],
  "approved>active": ["decomposition"],
  "approved>archived": ["manager"],
  "active>completed": ["manager"],
  "active>archived": ["manager"],
  "completed>archived": ["manager"],
};

describe("project lifecycle table", () => {
  const cases = PROJECT_STATUSES.flatMap((from) => PROJECT_STATUSES.flatMap((to) => ACTORS.map((actor) => [from, to, actor] as const)));

  it.each(cases)("%s → %s by %s is legal exactly when the table says so", (from, to, actor) => {
    const expected = (LEGAL[`${from}>${to}`] ?? []).includes(actor);
    const verdict = transitionVerdict(from, to, actor);
    expect(verdict.ok).toBe(expected);
    if (!verdict.ok) {
      const reason = from === to ? "same_status" : LEGAL[`${from}>${to}`] ? "not_for_actor" : "not_a_move";
      expect(verdict.reason).toBe(reason);
    }
  });

  it("checks all 108 (from, to, actor) combinations", () => {
    expect(cases).toHaveLength(6 * 6 * 3);
  });

  it("follows the seed's order forward: each status reaches the next one, by someone", () => {
    for (let i = 0; i + 1 < PROJECT_STATUSES.length; i++) {
      const [from, to] = [PROJECT_STATUSES[i]!, PROJECT_STATUSES[i + 1]!];
      expect(
        ACTORS.some((a) => transitionVerdict(from, to, a).ok),
        `${from} → ${to}`,
      ).toBe(true);
    }
  });

  it("never lets a manager approve or activate, and never lets anyone leave archived", () => {
    for (const from of PROJECT_STATUSES) {
      expect(transitionVerdict(from, "approved", "manager").ok).toBe(false);
      expect(transitionVerdict(from, "active", "manager").ok).toBe(false);
    }
    for (const actor of ACTORS) expect(legalTargets("archived", actor)).toEqual([]);
  });

  it("names who makes a move a manager may not", () => {
    const verdict = transitionVerdict("council_review", "approved", "manager");
    expect(verdict).toMatchObject({ ok: false, reason: "not_for_actor", made_by: ["council"] });
  });

  it("lists a manager's moves in lifecycle order", () => {
    const manager: Record<ProjectStatus, ProjectStatus[]> = {
      proposed: ["archived"],
      council_review: [],
      approved: ["archived"],
      active: ["completed", "archived"],
      completed: ["archived"],
      archived: [],
    };
    for (const from of PROJECT_STATUSES) expect(legalTargets(from, "manager")).toEqual(manager[from]);
  });

  it("keeps the council's moves inside the table (a decision never moves an active project back)", () => {
    expect(legalSources("approved", ["council_review", "proposed"], "council")).toEqual(["council_review", "proposed"]);
    expect(legalSources("proposed", ["council_review", "approved", "active"], "council")).toEqual(["council_review", "approved"]);
    expect(legalSources("archived", ["council_review", "proposed", "active"], "council")).toEqual(["council_review", "proposed"]);
  });
});
