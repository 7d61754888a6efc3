import { describe, expect, it } from "vitest";
import { bestRound, decideAfterRejection, evaluateRound, frozenCriteria, type JudgedRound } from "../../../src/team/acceptance";
import type { RoundState } from "../../../src/team/composer";
import { afterRounds, nextRoundMode } from "../../../src/team/goal-loop";

const CRITERIA = ["notes/a.md exists", "notes/b.md exists", "both cover week one"];
const answer = (met: boolean[]) => JSON.stringify({ criteria: met.map((m, i) => ({ id: i + 1, met: m, reason: m ? "seen" : "missing" })) });
const evaluate = (text: string | null, verifier?: { verdict: "PASS" | "FAIL"; repaired: boolean; unparseable?: boolean }) =>
  evaluateRound({
    criteria: CRITERIA,
    implicit: false,
    answer: text,
    ...(verifier ? { verifier: { unparseable: false, ...verifier } } : {}),
  });

describe("the acceptance path", () => {
  it("accepts only when every frozen criterion is met", async () => {
    expect(await evaluate(answer([true, true, true]))).toMatchObject({ source: "evaluator", accepted: true, unmet: [] });
    expect(await evaluate(answer([true, false, true]))).toMatchObject({ accepted: false, unmet: [2] });
  });

  it("counts a criterion the evaluator did not mention as unmet, and ignores ids outside the list", async () => {
    const e = await evaluate(
      JSON.stringify({
        criteria: [
          { id: 1, met: true, reason: "ok" },
          { id: 9, met: true, reason: "?" },
        ],
      }),
    );
    expect(e.unmet).toEqual([2, 3]);
    expect(e.criteria[1]).toEqual({ id: 2, met: false, reason: "not judged", judged: false });
  });

  it("rejects every criterion when the answer does not parse, and says why (fail closed)", async () => {
    for (const [text, reason] of [
      ["looks good to me", "not_json"],
      [null, "empty_answer"],
      ['{"criteria":[{"id":1,"met":"yes","reason":""}]}', "schema_mismatch"],
      ['{"verdict":"PASS"}', "schema_mismatch"],
    ] as const) {
      expect(await evaluate(text)).toMatchObject({ source: "unparseable", unparseable_reason: reason, accepted: false, unmet: [1, 2, 3] });
    }
  });

  it("takes a fenced JSON answer, as models add fences unasked", async () => {
    expect((await evaluate("```json\n" + answer([true, true, true]) + "\n```")).accepted).toBe(true);
  });

  it("lets a team's unrepaired verifier FAIL stand as the first stage, but lets the evaluator judge repaired work", async () => {
    const allMet = answer([true, true, true]);
    expect(await evaluate(allMet, { verdict: "FAIL", repaired: false })).toMatchObject({
      stage_one: "rejected",
      accepted: false,
      unmet: [],
    });
    expect(await evaluate(allMet, { verdict: "FAIL", repaired: true })).toMatchObject({ stage_one: "repaired", accepted: true });
    expect(await evaluate(allMet, { verdict: "PASS", repaired: false })).toMatchObject({ stage_one: "passed", accepted: true });
  });

  it("fingerprints what stayed unmet: the same gaps give the same fingerprint, whatever the reasons", async () => {
    const a = await evaluate(
      JSON.stringify({
        criteria: [
          { id: 2, met: false, reason: "x" },
          { id: 1, met: true, reason: "y" },
          { id: 3, met: true, reason: "z" },
        ],
      }),
    );
    const b = await evaluate(answer([true, false, true]));
    const c = await evaluate(answer([false, true, true]));
    expect(a.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(a.fingerprint).toBe(b.fingerprint);
    expect(c.fingerprint).not.toBe(b.fingerprint);
    expect((await evaluate(answer([true, true, true]), { verdict: "FAIL", repaired: false })).fingerprint).not.toBe(
      (await evaluate(answer([true, true, true]))).fingerprint,
    );
  });

  it("judges a task without criteria on one implicit criterion: its title", () => {
    expect(frozenCriteria({ title: "Ship it", acceptance_criteria: [] })).toEqual({
      criteria: ['The task "Ship it" is done as asked.'],
      implicit: true,
    });
    expect(frozenCriteria({ title: "t", acceptance_criteria: ["x"] })).toEqual({ criteria: ["x"], implicit: false });
  });
});

const judged = async (round_no: number, met: boolean[], extra: Partial<JudgedRound> = {}): Promise<JudgedRound> => ({
  round_id: `r${round_no}`,
  round_no,
  evaluation: await evaluate(answer(met)),
  executors_completed: 0,
  ...extra,
});

describe("the loop's decisions", () => {
  it("picks the best round by criteria met, then verifier PASS, repaired, executors, then the later round", async () => {
    const rounds = [await judged(1, [true, false, false]), await judged(2, [true, true, false]), await judged(3, [false, false, false])];
    expect(bestRound(rounds)).toEqual({ round_id: "r2", round: 2, met: 2, of: 3, unmet: [3] });
    expect(
      bestRound([await judged(1, [true, false, false], { verdict: "PASS" }), await judged(2, [true, false, false], { verdict: "FAIL" })])
        ?.round,
    ).toBe(1);
    expect(bestRound([await judged(1, [false, false, false]), { round_id: "r2", round_no: 2, executors_completed: 3 }])?.round).toBe(1);
    expect(bestRound([])).toBeUndefined();
  });

  it("stops on an oscillating gap fingerprint, naming the round it repeats", async () => {
    const rounds = [await judged(1, [true, false, true]), await judged(2, [false, true, true]), await judged(3, [true, false, true])];
    expect(decideAfterRejection(rounds, 5)).toEqual({
      kind: "stop",
      reason: "gap_oscillation",
      pause_class: "no_progress",
      repeats_round: 1,
    });
  });

  it("works another round while rounds are left and the gaps change, then stops with the budget exhausted", async () => {
    const two = [await judged(1, [true, false, false]), await judged(2, [true, true, false])];
    expect(decideAfterRejection(two, 3)).toEqual({ kind: "next" });
    expect(decideAfterRejection(two, 2)).toEqual({ kind: "stop", reason: "rounds_exhausted", pause_class: "budget_exhausted" });
  });
});

const round = (round_no: number, extra: Partial<RoundState>): RoundState =>
  ({
    round_id: `r${round_no}`,
    task_id: "t",
    round_no,
    mode: "solo",
    phase: "rejected",
    degrade_steps: [],
    stages: [],
    ...extra,
  }) as RoundState;

describe("afterRounds", () => {
  it("starts the first round, or parks a task that has no rounds at all", () => {
    expect(afterRounds([], 5)).toEqual({ kind: "next" });
    expect(afterRounds([], 0)).toMatchObject({
      kind: "settle",
      reason: "rounds_exhausted",
      body: { status: "needs_human", pause_class: "budget_exhausted" },
    });
  });

  it("settles an accepted round done, counting earlier rounds and repair passes as retries", () => {
    expect(afterRounds([round(1, { phase: "accepted" })], 5)).toEqual({
      kind: "settle",
      body: { status: "done", retry_count: 0 },
      reason: "acceptance_passed",
    });
    expect(afterRounds([round(1, { repaired: true }), round(2, { phase: "accepted" })], 5)).toMatchObject({
      body: { status: "done", retry_count: 2 },
    });
  });

  it("settles a round parked for a human with its pause class and the best round, and a failed one failed", async () => {
    const r1 = round(1, { evaluation: await evaluate(answer([true, false, false])) });
    const r2 = round(2, {
      phase: "needs_human",
      outcome: { status: "needs_human", reason: "budget_exhausted", pause_class: "budget_exhausted" },
    });
    expect(afterRounds([r1, r2], 5)).toMatchObject({
      kind: "settle",
      reason: "budget_exhausted",
      body: { status: "needs_human", pause_class: "budget_exhausted", retry_count: 1 },
      best: { round: 1, met: 1, of: 3 },
    });
    expect(
      afterRounds([round(1, { phase: "failed", outcome: { status: "failed", reason: "frozen_spec_family_violation" } })], 5),
    ).toMatchObject({
      body: { status: "failed" },
      reason: "frozen_spec_family_violation",
    });
  });

  it("goes on after a rejected round, and stops with the best round when the gaps repeat", async () => {
    const r1 = round(1, { evaluation: await evaluate(answer([false, false, true])) });
    expect(afterRounds([r1], 5)).toEqual({ kind: "next" });
    const r2 = round(2, { evaluation: await evaluate(answer([false, false, true])) });
    expect(afterRounds([r1, r2], 5)).toMatchObject({
      kind: "settle",
      reason: "gap_oscillation",
      repeats_round: 1,
      body: { status: "needs_human", pause_class: "no_progress" },
      best: { round: 2 },
    });
  });
});

describe("nextRoundMode", () => {
  const spec = (decision: string) => ({ spec: { roles: {} }, gate: { decision } });
  it("is solo without a frozen team spec, or when the gate said solo", () => {
    expect(nextRoundMode(undefined, [])).toBe("solo");
    expect(nextRoundMode({ spec: null, gate: { decision: "solo" } }, [])).toBe("solo");
    expect(nextRoundMode(spec("solo"), [])).toBe("solo");
  });
  it("runs the team, gray only for the first round, and solo for good once a round went solo", () => {
    expect(nextRoundMode(spec("team"), [])).toBe("team");
    expect(nextRoundMode(spec("gray"), [])).toBe("gray");
    expect(nextRoundMode(spec("gray"), [round(1, { mode: "gray", regate: { decision: "team", independent: 4 } })])).toBe("team");
    expect(nextRoundMode(spec("gray"), [round(1, { mode: "gray", regate: { decision: "solo", independent: 1 } })])).toBe("solo");
    expect(nextRoundMode(spec("team"), [round(1, { mode: "solo", solo_reason: "budget_cannot_fund_round" })])).toBe("solo");
  });
});
