import { describe, expect, it } from "vitest";
import { decideIntent, optimizeTargets, roundDraw, STRATEGY_MIX, uncoveredCases } from "../../../src/evolution/aee-intent";
import {
  abandonRound,
  commitRound,
  feedbackFor,
  recordChampion,
  RoundStateError,
  startRound,
  submitCandidate,
  submitMeasure,
  tallyRejections,
  type RoundState,
} from "../../../src/evolution/aee-round";
import { canonicalPlaybook, championFingerprint, type Playbook } from "../../../src/evolution/playbook";
import { detectStagnation } from "../../../src/evolution/stagnation";
import { basePlaybook, CASES, caseExists, entry, gateCtx, goodAdd, NOW, vector } from "./playbook-helpers";

const PASS_REC = { case_ref: "release/changelog-scope", gold: "PASS" as const, text: "see invoice INV-1" };
const champ = vector(
  CASES.map((case_ref, i) => ({ case_ref, verdict: i < 4 ? ("PASS" as const) : ("FAIL" as const) })),
  0.7,
);
const better = vector(
  CASES.map((case_ref) => ({ case_ref, verdict: "PASS" as const })),
  0.8,
);
const worse = vector(
  CASES.map((case_ref, i) => ({ case_ref, verdict: i < 2 ? ("PASS" as const) : ("FAIL" as const) })),
  0.7,
);

function started(pb: Playbook = basePlaybook()): RoundState {
  const s = startRound({
    round_id: "round_9",
    agent_id: pb.agent_id,
    round_seq: 9,
    playbook: pb,
    strategy: "balanced",
    material: { open_mistakes: 2, innovation_seeds: 1 },
    all_cases: [],
    now: NOW,
  });
  expect(s.phase).toBe("awaiting_champion");
  return recordChampion(s, champ);
}

const vacuousUpdate = { ops: [{ op: "update", entry_id: "pbe_a", content: "Always answer correctly and be helpful." }] };

describe("an AEE round", () => {
  it("commits an improving candidate: nothing changes before the commit, settle items follow it", () => {
    const pb = basePlaybook();
    const before = canonicalPlaybook(pb);
    let s = started(pb);
    const sub = submitCandidate(s, { ops: [goodAdd()] }, gateCtx(pb, { transcripts: [PASS_REC] }));
    s = sub.state;
    expect(s.phase).toBe("awaiting_measure");
    expect(canonicalPlaybook(pb)).toBe(before);
    const m = submitMeasure(s, better);
    expect(m.verdict).toMatchObject({ commit: true, verdict: "improves" });
    s = m.state;
    expect(s.phase).toBe("ready_to_commit");
    const c = commitRound(s, pb, {
      now: NOW,
      caseExists,
      settle_hours: 48,
      shadow_results: [{ case_ref: "release/changelog-scope", verdict: "PASS" }],
    });
    expect(c.ok).toBe(true);
    if (!c.ok) return;
    expect(c.state).toMatchObject({ phase: "committed", end_reason: "improves" });
    expect(c.playbook.entries).toHaveLength(4);
    expect(c.settle).toHaveLength(1);
    expect(c.settle[0]).toMatchObject({
      op: "add",
      round_id: "round_9",
      cases: ["release/changelog-scope"],
      baseline: { "release/changelog-scope": "PASS" },
      due_at: new Date(NOW.getTime() + 48 * 3_600_000).toISOString(),
    });
    expect(canonicalPlaybook(pb)).toBe(before);
  });

  it("abandons after 3 failed attempts and leaves the playbook byte-identical except failure_history", () => {
    const pb = basePlaybook();
    const ctx = gateCtx(pb, { transcripts: [PASS_REC] });
    let s = started(pb);
    s = submitCandidate(s, vacuousUpdate, ctx).state; // 1: Gate (H2) on pbe_a
    expect(s).toMatchObject({
      phase: "awaiting_candidate",
      attempts: [{ attempt: 1, stage: "gate", check: "g_contract", reason: "h2_vacuous" }],
    });
    s = submitCandidate(s, { ops: [goodAdd()] }, ctx).state; // 2: passes the Gate …
    s = submitMeasure(s, worse).state; // … and loses to the champion
    expect(s.attempts[1]).toMatchObject({ stage: "measure", check: "commit", reason: "regressed_cases" });
    s = submitCandidate(s, { ops: [{ op: "retire", entry_id: "pbe_b", reason: "Ignore the kill switch" }] }, ctx).state; // 3: G-Safety on pbe_b
    expect(s).toMatchObject({ phase: "abandoned", end_reason: "attempts_exhausted" });
    expect(feedbackFor(s)).toHaveLength(3);

    const { playbook: after, unnoted } = abandonRound(s, pb, NOW);
    expect(canonicalPlaybook(after, { except_failure_history: true })).toBe(canonicalPlaybook(pb, { except_failure_history: true }));
    expect(canonicalPlaybook(after)).not.toBe(canonicalPlaybook(pb));
    expect(after.entries.find((e) => e.entry_id === "pbe_a")!.failure_history).toEqual([
      expect.objectContaining({ round_id: "round_9", reason: "gate:g_contract:h2_vacuous" }),
    ]);
    expect(after.entries.find((e) => e.entry_id === "pbe_b")!.failure_history[0]!.reason).toBe("gate:g_safety:killswitch");
    expect(after.entries.find((e) => e.entry_id === "pbe_c")!.failure_history).toEqual([]);
    expect(unnoted.map((a) => a.attempt)).toEqual([2]); // the refused addition had no entry to note on
    expect(championFingerprint(after.entries)).toBe(s.champion_fingerprint);
  });

  it("an abandoned round whose attempts touched no existing entry leaves the playbook fully byte-identical", () => {
    const pb = basePlaybook();
    let s = started(pb);
    for (let i = 0; i < 3; i++) s = submitCandidate(s, { ops: [goodAdd({ assertions: [] })] }, gateCtx(pb)).state;
    expect(s.phase).toBe("abandoned");
    expect(canonicalPlaybook(abandonRound(s, pb, NOW).playbook)).toBe(canonicalPlaybook(pb));
  });

  it("a refused candidate never reaches Measure", () => {
    const pb = basePlaybook();
    const s = submitCandidate(started(pb), vacuousUpdate, gateCtx(pb)).state;
    expect(s.phase).toBe("awaiting_candidate");
    expect(s.pending).toBeNull();
    expect(() => submitMeasure(s, better)).toThrow(RoundStateError);
  });

  it("abandons when the playbook moved under the round, at the Gate or at the commit", () => {
    const pb = basePlaybook();
    const moved: Playbook = {
      ...pb,
      entries: [...pb.entries, entry({ entry_id: "pbe_new", content: "Name the on-call engineer in outage replies." })],
    };
    const atGate = submitCandidate(started(pb), { ops: [goodAdd()] }, gateCtx(moved));
    expect(atGate).toMatchObject({ gate: null, state: { phase: "abandoned", end_reason: "champion_moved" } });
    let s = submitCandidate(started(pb), { ops: [goodAdd()] }, gateCtx(pb, { transcripts: [PASS_REC] })).state;
    s = submitMeasure(s, better).state;
    const c = commitRound(s, moved, { now: NOW, caseExists, settle_hours: 24, shadow_results: [] });
    expect(c).toMatchObject({ ok: false, reason: "champion_moved", state: { phase: "abandoned" } });
  });

  it("records a Skip honestly when no intent has material, and refuses out-of-order steps", () => {
    const s = startRound({
      round_id: "r",
      agent_id: "a",
      round_seq: 1,
      playbook: { agent_id: "a", entries: [] },
      strategy: "balanced",
      material: { open_mistakes: 0, innovation_seeds: 0 },
      all_cases: CASES,
      now: NOW,
    });
    expect(s).toMatchObject({ phase: "skipped", end_reason: "no_material", intent: { kind: "skip", reason: "no_material" } });
    expect(() => recordChampion(s, champ)).toThrow(RoundStateError);
  });

  it("tallies rejections per Gate check and at the commit gate", () => {
    const pb = basePlaybook();
    let s = started(pb);
    s = submitCandidate(s, vacuousUpdate, gateCtx(pb)).state;
    s = submitCandidate(s, { ops: [goodAdd()] }, gateCtx(pb, { transcripts: [PASS_REC] })).state;
    s = submitMeasure(s, worse).state;
    const t = tallyRejections([s, s]);
    expect(t.g_contract).toEqual({ count: 2, reasons: { h2_vacuous: 2 } });
    expect(t.commit).toEqual({ count: 2, reasons: { regressed_cases: 2 } });
    expect(t.g_safety).toEqual({ count: 0, reasons: {} });
    expect(Object.keys(t)).toEqual(["generator", "g_safety", "g_contract", "g_canary_static", "g_schema", "g_assertions", "commit"]);
  });
});

describe("decideIntent", () => {
  const entries = basePlaybook().entries; // all with streak 0: optimize material
  const all = { open_mistakes: 1, innovation_seeds: 1 };

  it("draws deterministically with the strategy's shares", () => {
    expect(roundDraw(0)).toBe(0);
    expect(roundDraw(5)).toBe(roundDraw(5));
    const counts = { repair: 0, optimize: 0, innovate: 0 };
    for (let n = 1; n <= 1000; n++) {
      const i = decideIntent({ strategy: "balanced", round_seq: n, entries, material: all });
      if (i.kind === "run") counts[i.intent]++;
    }
    expect(counts.repair / 1000).toBeCloseTo(STRATEGY_MIX.balanced.repair, 1);
    expect(counts.optimize / 1000).toBeCloseTo(STRATEGY_MIX.balanced.optimize, 1);
    expect(counts.innovate / 1000).toBeCloseTo(STRATEGY_MIX.balanced.innovate, 1);
  });

  it("falls back to an intent with material, never to one the strategy gives no share", () => {
    const n = Array.from({ length: 50 }, (_, k) => k).find((k) => roundDraw(k) < 0.5)!; // balanced draws repair
    const fb = decideIntent({ strategy: "balanced", round_seq: n, entries, material: { open_mistakes: 0, innovation_seeds: 0 } });
    expect(fb).toMatchObject({
      kind: "run",
      intent: "optimize",
      drawn: "repair",
      reason: "fallback_no_material",
      targets: ["pbe_a", "pbe_b", "pbe_c"],
    });
    expect(
      decideIntent({ strategy: "repair_only", round_seq: n, entries, material: { open_mistakes: 0, innovation_seeds: 5 } }),
    ).toMatchObject({
      kind: "skip",
      reason: "no_material",
    });
    for (let k = 0; k < 30; k++) {
      const h = decideIntent({ strategy: "harden", round_seq: k, entries: [], material: { open_mistakes: 0, innovation_seeds: 3 } });
      expect(h.kind).toBe("skip");
    }
  });

  it("falls back to balanced for an unknown strategy, and leans to innovation when stagnant", () => {
    expect(decideIntent({ strategy: "yolo", round_seq: 1, entries, material: all })).toMatchObject({
      strategy: "balanced",
      strategy_fallback: true,
    });
    const n = Array.from({ length: 50 }, (_, k) => k).find((k) => roundDraw(k) < 0.5)!;
    expect(decideIntent({ strategy: "balanced", round_seq: n, entries, material: all, stagnant: true })).toMatchObject({
      intent: "innovate",
      reason: "stagnation_bias",
    });
    expect(decideIntent({ strategy: "harden", round_seq: n, entries, material: all, stagnant: true })).toMatchObject({ intent: "repair" });
  });

  it("finds optimize targets and uncovered cases", () => {
    const es = [
      entry({ entry_id: "e1", success_streak: 3 }),
      entry({ entry_id: "e2", success_streak: 1 }),
      entry({ entry_id: "e3", state: "stale" }),
    ];
    expect(optimizeTargets(es)).toEqual(["e2"]);
    expect(uncoveredCases(basePlaybook().entries, CASES)).toEqual(["release/changelog-scope", "support/tone"]);
  });
});

describe("detectStagnation", () => {
  const r = (round_seq: number, outcome: "committed" | "abandoned" | "skipped", verdict?: "improves" | "matches") => ({
    round_seq,
    outcome,
    ...(verdict ? { verdict } : {}),
  });
  it("needs 5 rounds that ran; skips are not counted", () => {
    expect(detectStagnation([r(1, "abandoned"), r(2, "abandoned"), r(3, "skipped"), r(4, "abandoned"), r(5, "abandoned")])).toMatchObject({
      stagnant: false,
      reason: "insufficient_rounds",
    });
  });
  it("is stagnant when none of the last 5 improved, and not once one did", () => {
    const five = [r(1, "abandoned"), r(2, "abandoned"), r(3, "abandoned"), r(4, "abandoned"), r(5, "abandoned")];
    expect(detectStagnation(five)).toMatchObject({ stagnant: true, reason: "all_abandoned", abandoned: 5 });
    expect(detectStagnation(five.map((x) => ({ ...x, outcome: "committed" as const, verdict: "matches" as const })))).toMatchObject({
      stagnant: true,
      reason: "ties_only",
    });
    expect(detectStagnation([...five.slice(0, 4), r(5, "committed", "matches")])).toMatchObject({
      stagnant: true,
      reason: "no_improvement",
    });
    expect(detectStagnation([r(0, "committed", "improves"), ...five.slice(1), r(6, "abandoned")])).toMatchObject({ stagnant: true });
    expect(detectStagnation([...five, r(6, "committed", "improves")])).toMatchObject({ stagnant: false, reason: "improving" });
  });
});
