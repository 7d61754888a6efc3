import { describe, expect, it } from "vitest";
import type { CaseResult } from "../../../src/evolution/aee-measure";
import { applyDelta } from "../../../src/evolution/playbook-merge";
import { applySettlements, clampSettleHours, MAX_SETTLE_HOURS, settleItemsFor, settleVerdict } from "../../../src/evolution/settle";
import { basePlaybook, caseExists, goodAdd, NOW } from "./playbook-helpers";

const H = 3_600_000;
const later = (h: number) => new Date(NOW.getTime() + h * H);

/** Three additions committed in one round, each linked to its own case, all passing at commit. */
function committedBatch() {
  const merged = applyDelta(
    basePlaybook(),
    {
      ops: [
        goodAdd({ content: "Open billing replies with the invoice id and its due date.", eval_cases: ["release/changelog-scope"] }),
        goodAdd({ content: "Answer tone complaints with one sentence of apology, then the fix.", eval_cases: ["support/tone"] }),
        goodAdd({ content: "Quote the deploy id when you confirm a rollback to the customer.", eval_cases: ["ops/deploy-check"] }),
      ],
    },
    { now: NOW, caseExists },
  );
  if (!merged.ok) throw new Error(merged.detail);
  const shadow: CaseResult[] = ["release/changelog-scope", "support/tone", "ops/deploy-check"].map((case_ref) => ({
    case_ref,
    verdict: "PASS",
  }));
  const items = settleItemsFor(merged.changes, shadow, { round_id: "round_1", now: NOW, settle_hours: 24 });
  return { pb: merged.playbook, items, changes: merged.changes };
}

describe("per-entry settle", () => {
  it("rolls back only the entry whose own cases regressed; the rest of the batch is accepted", () => {
    const { pb, items } = committedBatch();
    expect(items).toHaveLength(3);
    const observed: CaseResult[] = [
      { case_ref: "release/changelog-scope", verdict: "PASS" },
      { case_ref: "support/tone", verdict: "FAIL" },
      { case_ref: "ops/deploy-check", verdict: "PASS" },
    ];
    const decisions = items.map((item) => ({ item, verdict: settleVerdict(item, observed, { now: later(24), settle_hours: 24 }) }));
    expect(decisions.map((d) => d.verdict.verdict)).toEqual(["accept", "rollback", "accept"]);
    const { playbook: next, outcomes } = applySettlements(pb, decisions, later(24));
    const byId = new Map(next.entries.map((e) => [e.entry_id, e]));
    const [a, b, c] = items.map((i) => i.entry_id);
    expect(byId.get(a!)).toMatchObject({ state: "active", state_reason: "settle_accept", success_streak: 1 });
    expect(byId.get(b!)).toMatchObject({ state: "retired", state_reason: "settle_rollback" });
    expect(byId.get(b!)!.failure_history[0]!.reason).toBe("settle_rollback:cases_regressed");
    expect(byId.get(c!)).toMatchObject({ state: "active", success_streak: 1 });
    expect(outcomes.map((o) => o.result)).toEqual(["accepted", "rolled_back", "accepted"]);
    // Entries outside the batch are untouched.
    for (const id of ["pbe_a", "pbe_b", "pbe_c"]) expect(byId.get(id)).toEqual(pb.entries.find((e) => e.entry_id === id));
  });

  it("judges an entry by its own cases only: another case's failure does not roll it back", () => {
    const { items } = committedBatch();
    const v = settleVerdict(
      items[0]!,
      [
        { case_ref: "release/changelog-scope", verdict: "PASS" },
        { case_ref: "support/refund-policy", verdict: "FAIL" },
      ],
      {
        now: later(24),
        settle_hours: 24,
      },
    );
    expect(v).toMatchObject({ verdict: "accept", observed_rate: 1 });
  });

  it("rolls an update back to its previous content, signals and state, as a new version", () => {
    const merged = applyDelta(
      basePlaybook(),
      { ops: [{ op: "update", entry_id: "pbe_a", content: "List the date first, then the version." }] },
      { now: NOW, caseExists },
    );
    if (!merged.ok) throw new Error(merged.detail);
    const [item] = settleItemsFor(merged.changes, [{ case_ref: "release/notes-order", verdict: "PASS" }], {
      round_id: "r",
      now: NOW,
      settle_hours: 24,
    });
    const verdict = settleVerdict(item!, [{ case_ref: "release/notes-order", verdict: "FAIL" }], { now: later(25), settle_hours: 24 });
    expect(verdict).toMatchObject({ verdict: "rollback", reason: "cases_regressed", baseline_rate: 1, observed_rate: 0 });
    const { playbook } = applySettlements(merged.playbook, [{ item: item!, verdict }], later(25));
    const a = playbook.entries.find((e) => e.entry_id === "pbe_a")!;
    const original = basePlaybook().entries.find((e) => e.entry_id === "pbe_a")!;
    expect(a).toMatchObject({ content: original.content, signals_match: original.signals_match, state: "active", version: 3 });
  });

  it("waits until due, extends an unmeasured window, and rolls back at the 30-day cap", () => {
    const { items } = committedBatch();
    const item = items[0]!;
    expect(settleVerdict(item, [], { now: later(23.99), settle_hours: 24 })).toEqual({ verdict: "not_due" });
    const ext = settleVerdict(item, [{ case_ref: "release/changelog-scope", verdict: "unscored" }], { now: later(24), settle_hours: 24 });
    expect(ext).toEqual({ verdict: "extend", reason: "unmeasured", next_due_at: later(48).toISOString() });
    expect(settleVerdict(item, [], { now: later(MAX_SETTLE_HOURS - 10), settle_hours: 24 })).toMatchObject({
      verdict: "extend",
      next_due_at: later(MAX_SETTLE_HOURS).toISOString(),
    });
    expect(settleVerdict(item, [], { now: later(MAX_SETTLE_HOURS), settle_hours: 24 })).toMatchObject({
      verdict: "rollback",
      reason: "unmeasured_at_cap",
    });
  });

  it("treats a drop within the cases noise band as held", () => {
    const item = { ...committedBatch().items[0]!, cases: Array.from({ length: 20 }, (_, i) => `d/c${i}`) };
    item.baseline = Object.fromEntries(item.cases.map((c) => [c, "PASS" as const]));
    const observed = item.cases.map((case_ref, i): CaseResult => ({ case_ref, verdict: i === 0 ? "FAIL" : "PASS" })); // 0.95: −0.05
    expect(settleVerdict(item, observed, { now: later(24), settle_hours: 24 }).verdict).toBe("accept");
    const two = observed.map((r, i): CaseResult => (i === 1 ? { ...r, verdict: "FAIL" } : r)); // 0.90: −0.10
    expect(settleVerdict(item, two, { now: later(24), settle_hours: 24 }).verdict).toBe("rollback");
  });

  it("caps the window at 30 days and skips an entry changed again since", () => {
    expect(clampSettleHours(10_000)).toBe(720);
    expect(clampSettleHours(0)).toBe(24);
    const { pb, changes, items } = committedBatch();
    expect(settleItemsFor(changes, [], { round_id: "r", now: NOW, settle_hours: 5_000 })[0]!.due_at).toBe(later(720).toISOString());
    const bumped = { ...pb, entries: pb.entries.map((e) => (e.entry_id === items[0]!.entry_id ? { ...e, version: 2 } : e)) };
    const { outcomes } = applySettlements(
      bumped,
      [{ item: items[0]!, verdict: { verdict: "accept", reason: "cases_held", baseline_rate: 1, observed_rate: 1 } }],
      later(24),
    );
    expect(outcomes).toEqual([{ entry_id: items[0]!.entry_id, result: "superseded" }]);
  });
});
