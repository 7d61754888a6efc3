import { describe, expect, it } from "vitest";
import { decideGate, readSignals, regateOnPlan, type GateInput } from "../../../src/team/gate";
import type { GateMode } from "../../../src/team/settings";

type Bits = [volume: boolean, context: boolean, gap: boolean, horizon: boolean];

/** An input in which exactly the chosen signals hold (the others are measured and do not hold). */
function inputFor([volume, context, gap, horizon]: Bits, extra: Partial<GateInput> = {}): GateInput {
  return {
    mode: "auto",
    sandbox_enabled: false,
    signals: {
      independent_items: volume ? 5 : 2,
      dependency_hubs: 0,
      fits_one_context: !context,
      produces_artifacts: horizon,
    },
    exclusions: {},
    acceptance_criteria_count: 3,
    ...(gap ? { capability_gap: { gap_pp: 12, mde_pp: 8 } } : { capability_gap: { gap_pp: 3, mde_pp: 8 } }),
    ...extra,
  };
}

const ALL_COMBINATIONS: Bits[] = Array.from({ length: 16 }, (_, n) => [Boolean(n & 8), Boolean(n & 4), Boolean(n & 2), Boolean(n & 1)]);

function expectedBySignals(bits: Bits) {
  const held = bits.filter(Boolean).length;
  if (held >= 3) return { decision: "team", reason: "signals_team" };
  if (held === 2) return { decision: "gray", reason: "signals_gray" };
  return { decision: "solo", reason: "signals_solo" };
}

const EXCLUSIONS: [string, Partial<GateInput>, string][] = [
  ["a live channel turn", { exclusions: { live_channel_turn: true } }, "excluded_live_channel_turn"],
  ["a pending plan-first goal", { exclusions: { plan_first_pending: true } }, "excluded_plan_first_pending"],
  ["an irreversible action in the plan", { exclusions: { irreversible_in_plan: true } }, "excluded_irreversible_in_plan"],
  ["fewer than 3 rounds left", { rounds_left: 2 }, "excluded_rounds_left"],
];

describe("decomposability gate truth table", () => {
  const label = (b: Bits) => `volume=${+b[0]} context=${+b[1]} gap=${+b[2]} horizon=${+b[3]}`;

  it("has 16 distinct signal combinations", () => {
    expect(new Set(ALL_COMBINATIONS.map(label)).size).toBe(16);
  });

  for (const bits of ALL_COMBINATIONS) {
    describe(label(bits), () => {
      it(`decides by the signals with no exclusion (${expectedBySignals(bits).decision})`, () => {
        const d = decideGate(inputFor(bits));
        expect(d.signals.held).toBe(bits.filter(Boolean).length);
        expect({ decision: d.decision, reason: d.reason }).toEqual(expectedBySignals(bits));
        expect(d.signals.volume.holds).toBe(bits[0]);
        expect(d.signals.context.holds).toBe(bits[1]);
        expect(d.signals.capability_gap.holds).toBe(bits[2]);
        expect(d.signals.long_horizon.holds).toBe(bits[3]);
      });

      for (const [what, extra, reason] of EXCLUSIONS) {
        it(`is solo (${reason}) under ${what} in auto mode, and team under always_team`, () => {
          expect(decideGate(inputFor(bits, extra))).toMatchObject({ decision: "solo", reason });
          expect(decideGate(inputFor(bits, { ...extra, mode: "always_team" }))).toMatchObject({
            decision: "team",
            reason: "gate_always_team",
          });
        });
      }

      it("is solo for a sandboxed employee in every mode, always_team included", () => {
        for (const mode of ["auto", "always_solo", "always_team"] as GateMode[]) {
          expect(decideGate(inputFor(bits, { mode, sandbox_enabled: true }))).toMatchObject({
            decision: "solo",
            reason: "sandbox_enabled",
          });
          expect(decideGate(inputFor(bits, { mode, sandbox_enabled: true, exclusions: { live_channel_turn: true } })).reason).toBe(
            "sandbox_enabled",
          );
        }
      });

      it("is solo under always_solo whatever the signals", () => {
        expect(decideGate(inputFor(bits, { mode: "always_solo" }))).toMatchObject({ decision: "solo", reason: "gate_always_solo" });
      });
    });
  }
});

describe("gate signals", () => {
  it("does not count unmeasured signals: nothing measured is solo with every signal marked unmeasured", () => {
    const d = decideGate({ mode: "auto", sandbox_enabled: false, signals: {}, exclusions: {}, acceptance_criteria_count: 5 });
    expect(d).toMatchObject({ decision: "solo", reason: "signals_solo" });
    expect(d.signals).toMatchObject({
      held: 0,
      volume: { holds: false, unmeasured: true },
      context: { holds: false, unmeasured: true },
      capability_gap: { holds: false, unmeasured: true },
      long_horizon: { holds: false, unmeasured: true },
    });
  });

  it("needs a measured zero of dependency hubs for the volume signal", () => {
    const base = { acceptance_criteria_count: 0 };
    expect(readSignals({ ...base, signals: { independent_items: 9 } }).volume).toEqual({ holds: false, unmeasured: true });
    expect(readSignals({ ...base, signals: { independent_items: 9, dependency_hubs: 1 } }).volume.holds).toBe(false);
    expect(readSignals({ ...base, signals: { independent_items: 4, dependency_hubs: 0 } }).volume.holds).toBe(true);
    expect(readSignals({ ...base, signals: { independent_items: 3, dependency_hubs: 0 } }).volume.holds).toBe(false);
  });

  it("needs three acceptance criteria and real artifacts for the long-horizon signal", () => {
    expect(readSignals({ acceptance_criteria_count: 2, signals: { produces_artifacts: true } }).long_horizon.holds).toBe(false);
    expect(readSignals({ acceptance_criteria_count: 3, signals: { produces_artifacts: true } }).long_horizon.holds).toBe(true);
  });

  it("does not count a capability gap below the matrix's MDE", () => {
    expect(
      readSignals({ acceptance_criteria_count: 0, signals: {}, capability_gap: { gap_pp: 7.9, mde_pp: 8 } }).capability_gap.holds,
    ).toBe(false);
  });

  it("gives a solo decision with one signal an effort hint, and none with zero", () => {
    expect(decideGate(inputFor([false, true, false, false])).effort_hint).toBe("high");
    expect(decideGate(inputFor([false, false, false, false])).effort_hint).toBeUndefined();
  });

  it("does not exclude a task with exactly 3 rounds left, or with no limit given", () => {
    expect(decideGate(inputFor([true, true, true, false], { rounds_left: 3 })).decision).toBe("team");
    expect(decideGate(inputFor([true, true, true, false])).decision).toBe("team");
  });
});

describe("gray zone re-gate on the real decomposition", () => {
  const sub = (packet_id: string, depends_on: string[] = []) => ({ packet_id, depends_on });

  it("forms a team when the plan has at least 4 independent subtasks", () => {
    expect(regateOnPlan([sub("a"), sub("b"), sub("c"), sub("d")])).toEqual({ decision: "team", reason: "regate_team", independent: 4 });
  });

  it("stays solo (the plan kept by the caller) with 3 independent subtasks", () => {
    expect(regateOnPlan([sub("a"), sub("b"), sub("c")])).toEqual({ decision: "solo", reason: "regate_solo", independent: 3 });
  });

  it("counts neither side of a dependency, nor a subtask depending on something outside the plan", () => {
    const plan = [sub("a"), sub("b", ["a"]), sub("c"), sub("d"), sub("e", ["elsewhere"]), sub("f")];
    expect(regateOnPlan(plan)).toMatchObject({ decision: "solo", independent: 3 });
    expect(regateOnPlan([...plan, sub("g")])).toMatchObject({ decision: "team", independent: 4 });
  });

  it("stays solo on an empty plan", () => {
    expect(regateOnPlan([])).toMatchObject({ decision: "solo", independent: 0 });
  });
});
