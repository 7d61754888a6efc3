import { describe, expect, it } from "vitest";
import { contentSimilarity, dedupKey, findNearDuplicate, isNearDuplicate, NEAR_DUP_COSINE } from "../../../src/evolution/dedup";
import { exportGenes } from "../../../src/evolution/gene";
import { applicationFor } from "../../../src/evolution/playbook-applications";
import { applyDelta, noteFailures, recordApplications } from "../../../src/evolution/playbook-merge";
import { canonicalPlaybook, championFingerprint, netScore, playbookEntrySchema } from "../../../src/evolution/playbook";
import { sweepPlaybook } from "../../../src/evolution/sweep";
import { AGENT, basePlaybook, caseExists, entry, goodAdd, NOW, playbook } from "./playbook-helpers";

const ctx = { now: NOW, caseExists };

describe("playbook entry schema", () => {
  it("refuses an entry with no eval case, content over 400 characters, or a malformed case ref", () => {
    const ok = entry({ entry_id: "pbe_x" });
    expect(playbookEntrySchema.safeParse(ok).success).toBe(true);
    expect(playbookEntrySchema.safeParse({ ...ok, eval_cases: [] }).success).toBe(false);
    expect(playbookEntrySchema.safeParse({ ...ok, content: "あ".repeat(401) }).success).toBe(false);
    expect(playbookEntrySchema.safeParse({ ...ok, content: "あ".repeat(400) }).success).toBe(true);
    expect(playbookEntrySchema.safeParse({ ...ok, eval_cases: ["no-slash"] }).success).toBe(false);
    expect(playbookEntrySchema.safeParse({ ...ok, eval_cases: ["Upper/case"] }).success).toBe(false);
    expect(playbookEntrySchema.safeParse({ ...ok, state: "deleted" }).success).toBe(false);
  });
});

describe("applyDelta", () => {
  it("adds a probation entry with a deterministic id, and leaves the input untouched", () => {
    const pb = basePlaybook();
    const before = canonicalPlaybook(pb);
    const r = applyDelta(pb, { ops: [goodAdd()] }, ctx);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(canonicalPlaybook(pb)).toBe(before);
    expect(r.changes).toHaveLength(1);
    const added = r.changes[0]!.after;
    expect(added).toMatchObject({ state: "probation", version: 1, success_streak: 0, agent_id: AGENT, state_reason: "committed" });
    expect(added.entry_id).toMatch(/^pbe_[0-9a-f]{24}$/);
    const again = applyDelta(pb, { ops: [goodAdd()] }, ctx);
    expect(again.ok && again.changes[0]!.entry_id).toBe(added.entry_id);
    expect(r.playbook.entries.map((e) => e.entry_id)).toEqual([...r.playbook.entries.map((e) => e.entry_id)].sort());
  });

  it("updates an entry into probation as a new version, and retires another, in one delta", () => {
    const r = applyDelta(
      basePlaybook(),
      {
        ops: [
          { op: "update", entry_id: "pbe_a", content: "List the version number, then the release date, then changes by component." },
          { op: "retire", entry_id: "pbe_b", reason: "operator: policy moved to the wiki" },
        ],
      },
      ctx,
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const a = r.playbook.entries.find((e) => e.entry_id === "pbe_a")!;
    const b = r.playbook.entries.find((e) => e.entry_id === "pbe_b")!;
    expect(a).toMatchObject({ state: "probation", version: 2, state_reason: "updated" });
    expect(b).toMatchObject({ state: "retired", state_reason: "operator: policy moved to the wiki" });
    expect(r.changes.find((c) => c.entry_id === "pbe_a")!.before!.content).toMatch(/^When asked for release notes/);
  });

  it.each([
    ["schema_invalid", { ops: [goodAdd({ category: "explore" })] }],
    ["schema_invalid", { ops: [] }],
    ["schema_invalid", { ops: [goodAdd({ derived_from: [] })] }],
    ["content_too_long", { ops: [goodAdd({ content: "x".repeat(401) })] }],
    ["eval_cases_empty", { ops: [goodAdd({ eval_cases: [] })] }],
    ["eval_case_unknown", { ops: [goodAdd({ eval_cases: ["release/nope"] })] }],
    ["unknown_entry", { ops: [{ op: "retire", entry_id: "pbe_zzz", reason: "x" }] }],
    [
      "duplicate_target",
      {
        ops: [
          { op: "update", entry_id: "pbe_a", signals_match: ["x"] },
          { op: "retire", entry_id: "pbe_a", reason: "x" },
        ],
      },
    ],
  ])("refuses the whole delta with %s and applies none of it", (reason, delta) => {
    const pb = basePlaybook();
    // A good op first: nothing of it may land when a later op is bad.
    const withGood = {
      ops: [goodAdd({ content: "Always name the on-call engineer when escalating an outage to the customer." }), ...delta.ops],
    };
    const r = applyDelta(pb, delta.ops.length === 0 ? delta : withGood, ctx);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.reason).toBe(reason);
  });

  it("refuses an update or retire of a retired entry", () => {
    const pb = playbook([entry({ entry_id: "pbe_r", state: "retired" })]);
    const r = applyDelta(pb, { ops: [{ op: "update", entry_id: "pbe_r", signals_match: ["x"] }] }, ctx);
    expect(r.ok || r.reason).toBe("entry_retired");
  });

  it("refuses an update that changes nothing", () => {
    const r = applyDelta(basePlaybook(), { ops: [{ op: "update", entry_id: "pbe_a" }] }, ctx);
    expect(r.ok || r.reason).toBe("schema_invalid");
  });
});

describe("dedup (NEAR_DUP_COSINE = 0.92)", () => {
  it("decides the threshold exactly: 0.91 is kept, 0.92 and 0.93 are near duplicates", () => {
    expect(NEAR_DUP_COSINE).toBe(0.92);
    expect(isNearDuplicate(0.91)).toBe(false);
    expect(isNearDuplicate(0.9199999)).toBe(false);
    expect(isNearDuplicate(0.92)).toBe(true);
    expect(isNearDuplicate(0.93)).toBe(true);
  });

  const BASE =
    "When the user asks for release notes, list the version number and the release date first, then the changes grouped by component.";
  // Texts whose character 3-gram cosine with BASE falls just below 0.92, just above it, and at 0.93+.
  const AT_091 =
    "please the user asks for release notes, list the version number and the release date first, then the please grouped by component.";
  const AT_092 =
    "now the user asks for release notes, list the version number and the release date first, now the changes grouped by component.";
  const AT_093 =
    "now the user asks for now notes, list the version number and the release date first, then the changes grouped by component.";

  it("measures real texts on either side of the threshold", () => {
    expect(contentSimilarity(BASE, AT_091)).toBeGreaterThanOrEqual(0.91);
    expect(contentSimilarity(BASE, AT_091)).toBeLessThan(0.92);
    expect(contentSimilarity(BASE, AT_092)).toBeGreaterThanOrEqual(0.92);
    expect(contentSimilarity(BASE, AT_092)).toBeLessThan(0.93);
    expect(contentSimilarity(BASE, AT_093)).toBeGreaterThanOrEqual(0.93);
    expect(contentSimilarity(BASE, BASE.toUpperCase().replace(/,/g, " ;"))).toBe(1);
  });

  it("writes the 0.91 text, refuses the 0.92 and 0.93 texts and names the entry they repeat", () => {
    const pb = playbook([entry({ entry_id: "pbe_base", content: BASE, eval_cases: ["release/notes-order"] })]);
    expect(applyDelta(pb, { ops: [goodAdd({ content: AT_091 })] }, ctx).ok).toBe(true);
    for (const text of [AT_092, AT_093]) {
      const r = applyDelta(pb, { ops: [goodAdd({ content: text })] }, ctx);
      expect(r.ok).toBe(false);
      if (r.ok) continue;
      expect(r.reason).toBe("near_duplicate");
      expect(r.duplicate?.entry_id).toBe("pbe_base");
      expect(r.duplicate!.similarity).toBeGreaterThanOrEqual(0.92);
    }
  });

  it("compares with entries of the same delta, ignores retired entries and the entry being replaced", () => {
    const pb = playbook([
      entry({ entry_id: "pbe_base", content: BASE }),
      entry({ entry_id: "pbe_old", content: "Reply in the customer's language, never switch languages mid-thread.", state: "retired" }),
    ]);
    const twice = applyDelta(pb, { ops: [goodAdd(), goodAdd()] }, ctx);
    expect(twice.ok || twice.reason).toBe("near_duplicate");
    expect(
      applyDelta(pb, { ops: [goodAdd({ content: "Reply in the customer's language, never switch languages mid-thread." })] }, ctx).ok,
    ).toBe(true);
    expect(applyDelta(pb, { ops: [{ op: "update", entry_id: "pbe_base", content: BASE + " Keep it short." }] }, ctx).ok).toBe(true);
    // Retire-and-replace in one delta is a replacement, not a duplicate.
    expect(
      applyDelta(pb, { ops: [{ op: "retire", entry_id: "pbe_base", reason: "reworded" }, goodAdd({ content: AT_093 })] }, ctx).ok,
    ).toBe(true);
  });

  it("keys on NFKC, case, punctuation and whitespace", () => {
    expect(dedupKey("  Ｌｉｓｔ the VERSION,   first!! ")).toBe("list the version first");
    expect(findNearDuplicate("list the version first", [{ entry_id: "e1", content: "List the version — FIRST." }])?.entry_id).toBe("e1");
  });
});

describe("canonical bytes, fingerprint, failure notes, applications", () => {
  it("noteFailures changes failure_history only: the rest is byte-identical", () => {
    const pb = basePlaybook();
    const { playbook: next, unapplied } = noteFailures(pb, [
      { entry_id: "pbe_a", note: { at: NOW.toISOString(), reason: "gate:g_contract:h2_vacuous", detail: "x" } },
      { entry_id: "pbe_new", note: { at: NOW.toISOString(), reason: "r", detail: "" } },
    ]);
    expect(unapplied.map((u) => u.entry_id)).toEqual(["pbe_new"]);
    expect(canonicalPlaybook(next)).not.toBe(canonicalPlaybook(pb));
    expect(canonicalPlaybook(next, { except_failure_history: true })).toBe(canonicalPlaybook(pb, { except_failure_history: true }));
  });

  it("fingerprints the sorted dedup keys of active and probation entries only", () => {
    const pb = basePlaybook();
    const fp = championFingerprint(pb.entries);
    expect(fp).toMatch(/^[0-9a-f]{64}$/);
    expect(championFingerprint([...pb.entries].reverse())).toBe(fp);
    expect(championFingerprint([...pb.entries, entry({ entry_id: "pbe_s", state: "stale", content: "anything" })])).toBe(fp);
    expect(championFingerprint(pb.entries.map((e) => (e.entry_id === "pbe_a" ? { ...e, state: "probation" as const } : e)))).toBe(fp);
    expect(championFingerprint(pb.entries.map((e) => (e.entry_id === "pbe_a" ? { ...e, state: "retired" as const } : e)))).not.toBe(fp);
  });

  it("records applications: success extends the streak, a failure ends it, net score follows", () => {
    const at = NOW.toISOString();
    const next = recordApplications(basePlaybook(), [
      { entry_id: "pbe_a", application: { at, outcome: "success" } },
      { entry_id: "pbe_a", application: { at, outcome: "success", score: 0.9 } },
      { entry_id: "pbe_b", application: { at, outcome: "success" } },
      { entry_id: "pbe_b", application: { at, outcome: "failed" } },
    ]);
    const a = next.entries.find((e) => e.entry_id === "pbe_a")!;
    const b = next.entries.find((e) => e.entry_id === "pbe_b")!;
    expect([a.success_streak, netScore(a)]).toEqual([2, 2]);
    expect([b.success_streak, netScore(b)]).toEqual([0, 0]);
  });

  it("records one application per entry and conversation, however often it is recorded", () => {
    const at = NOW.toISOString();
    const once = recordApplications(basePlaybook(), [
      { entry_id: "pbe_a", application: { at, outcome: "success", conversation_id: "conv_1" } },
      { entry_id: "pbe_a", application: { at, outcome: "failed", conversation_id: "conv_1" } },
    ]);
    const twice = recordApplications(once, [{ entry_id: "pbe_a", application: { at, outcome: "success", conversation_id: "conv_1" } }]);
    expect(canonicalPlaybook(twice)).toBe(canonicalPlaybook(once));
    expect(once.entries.find((e) => e.entry_id === "pbe_a")!.applications).toEqual([{ at, outcome: "success", conversation_id: "conv_1" }]);
  });

  it("reads a closed conversation's error as the outcome: negligible and moderate succeed, significant and critical fail", () => {
    const at = NOW.toISOString();
    expect(applicationFor({ category: "negligible", inferred_satisfaction: 0.7 }, "c", at)).toEqual({
      at,
      outcome: "success",
      score: 0.7,
      conversation_id: "c",
    });
    expect(applicationFor({ category: "moderate", inferred_satisfaction: 0.4 }, "c", at)?.outcome).toBe("success");
    expect(applicationFor({ category: "significant", inferred_satisfaction: 0.2 }, "c", at)?.outcome).toBe("failed");
    expect(applicationFor({ category: "critical", inferred_satisfaction: 0 }, "c", at)).toEqual({
      at,
      outcome: "failed",
      score: 0,
      conversation_id: "c",
    });
    // Unknown stays unknown: no category, no application; no usable satisfaction, no score.
    expect(applicationFor(undefined, "c", at)).toBeNull();
    expect(applicationFor({ category: "catastrophic" }, "c", at)).toBeNull();
    expect(applicationFor({ category: "moderate", inferred_satisfaction: 1.5 }, "c", at)).toEqual({
      at,
      outcome: "success",
      conversation_id: "c",
    });
  });
});

describe("sweepPlaybook", () => {
  const day = 86_400_000;
  const ago = (d: number) => new Date(NOW.getTime() - d * day).toISOString();

  it("stales unused (30 days) and harmful (net ≤ −3) active entries, archives 60-day stale ones, never touches probation", () => {
    const failed = { at: ago(1), outcome: "failed" as const };
    const pb = playbook([
      entry({ entry_id: "e_unused", state_since: ago(30) }),
      entry({ entry_id: "e_recent", state_since: ago(29) }),
      entry({ entry_id: "e_used", state_since: ago(90), applications: [{ at: ago(2), outcome: "success" }] }),
      entry({ entry_id: "e_harm", state_since: ago(1), applications: [failed, failed, failed] }),
      entry({ entry_id: "e_stale_old", state: "stale", state_since: ago(60) }),
      entry({ entry_id: "e_stale_new", state: "stale", state_since: ago(59) }),
      entry({ entry_id: "e_prob", state: "probation", state_since: ago(100) }),
    ]);
    const { playbook: next, changes } = sweepPlaybook(pb, NOW);
    expect(changes).toEqual([
      { entry_id: "e_harm", from: "active", to: "stale", reason: "harmful" },
      { entry_id: "e_stale_old", from: "stale", to: "retired", reason: "archived" },
      { entry_id: "e_unused", from: "active", to: "stale", reason: "unused" },
    ]);
    expect(next.entries).toHaveLength(pb.entries.length); // no hard delete
    expect(next.entries.find((e) => e.entry_id === "e_prob")!.state).toBe("probation");
  });

  it("brings the live set back to capacity by staling the weakest active entries", () => {
    const pb = playbook([
      entry({ entry_id: "e1", applications: [{ at: NOW.toISOString(), outcome: "success" }], state_since: NOW.toISOString() }),
      entry({ entry_id: "e2", state_since: NOW.toISOString() }),
      entry({ entry_id: "e3", state_since: new Date(NOW.getTime() - 86_400_000).toISOString() }),
      entry({ entry_id: "e4", state: "probation", state_since: NOW.toISOString() }),
    ]);
    const { changes, capacity } = sweepPlaybook(pb, NOW, { capacity: 2 });
    expect(changes.map((c) => [c.entry_id, c.reason])).toEqual([
      ["e3", "capacity"],
      ["e2", "capacity"],
    ]);
    expect(capacity).toEqual({ live: 2, capacity: 2, over: 0 });
  });
});

describe("GEP-gene export", () => {
  it("exports every entry as a Gene with its capsules, in id order", () => {
    const pb = recordApplications(basePlaybook(), [
      { entry_id: "pbe_b", application: { at: NOW.toISOString(), outcome: "success", score: 0.8 } },
    ]);
    const out = exportGenes(pb, NOW);
    expect(out).toMatchObject({ format: "gep-gene", agent_id: AGENT, exported_at: NOW.toISOString() });
    expect(out.genes.map((g) => g.id)).toEqual(["pbe_a", "pbe_b", "pbe_c"]);
    const b = out.genes[1]!;
    expect(b).toMatchObject({
      type: "Gene",
      category: "repair",
      signals_match: ["refund|返金"],
      validation: ["eval:support/refund-policy"],
      eval_cases: ["support/refund-policy"],
      state: "active",
      success_streak: 1,
      net_score: 1,
    });
    expect(b.summary).toBe(b.strategy[0]);
    expect(b.applications).toEqual([{ type: "Capsule", gene: "pbe_b", at: NOW.toISOString(), outcome: { status: "success", score: 0.8 } }]);
    expect(JSON.parse(JSON.stringify(out))).toEqual(out);
  });
});
