import { describe, expect, it } from "vitest";
import { evaluateRound } from "../../../src/team/acceptance";
import { assignSubtasks, beginRound, onStageEnd, type RoundState, type StageEnd, type Transition } from "../../../src/team/composer";

let n = 0;
const ids = () => `stg_${++n}`;
const plan = (executors = 3, repair = true, utility = false) => ({ planner: true, executors, verifier: true as const, repair, utility });

function start(opts: { executors?: number; repair?: boolean; utility?: boolean; mode?: "team" | "gray" | "solo" } = {}) {
  const mode = opts.mode ?? "team";
  return beginRound(
    {
      round_id: "trnd_1",
      task_id: "task_1",
      round_no: 1,
      mode,
      ...(mode === "solo" ? {} : { plan: plan(opts.executors, opts.repair, opts.utility) }),
      degrade_steps: [],
    },
    ids,
  );
}

/** The evaluator's end: `unmet` criterion ids out of `of`, judged by a readable answer. */
async function judged(
  stage_id: string,
  unmet: number[],
  of = 3,
  verifier?: { verdict: "PASS" | "FAIL"; repaired: boolean },
): Promise<StageEnd> {
  const answer = JSON.stringify({
    criteria: Array.from({ length: of }, (_, i) => ({ id: i + 1, met: !unmet.includes(i + 1), reason: "r" })),
  });
  const evaluation = await evaluateRound({
    criteria: Array.from({ length: of }, (_, i) => `c${i + 1}`),
    implicit: false,
    answer,
    ...(verifier ? { verifier: { ...verifier, unparseable: false } } : {}),
  });
  return { stage_id, status: "completed", packets: [], evaluation };
}

const sub = (packet_id: string, depends_on: string[] = []) => ({ packet_id, depends_on });
const done = (stage_id: string, packets: { packet_id: string; depends_on: string[] }[] = [], extra: Partial<StageEnd> = {}): StageEnd =>
  ({ stage_id, status: "completed", packets, ...extra }) as StageEnd;
const failed = (stage_id: string, code = "cli_error"): StageEnd => ({ stage_id, status: "failed", error: { code, message: code } });
const byKind = (s: RoundState, kind: string) => s.stages.filter((x) => x.kind === kind);

/** Plan with the given subtasks, complete every executor with one packet each. */
function toVerify(opts: { executors?: number; repair?: boolean } = {}, subtasks = [sub("a"), sub("b"), sub("c")]) {
  let t: Transition = start(opts);
  t = onStageEnd(t.state, done(t.launch[0]!, subtasks), ids);
  for (const [i, id] of t.launch.entries()) t = onStageEnd(t.state, done(id, [sub(`out${i}`)]), ids);
  return t;
}

describe("round composer", () => {
  it("starts with exactly one planner stage", () => {
    const t = start();
    expect(t.state.phase).toBe("planning");
    expect(t.state.stages).toMatchObject([{ kind: "plan", role: "planner", status: "pending" }]);
    expect(t.launch).toEqual([t.state.stages[0]!.stage_id]);
  });

  it("fans out one executor stage per subtask packet, up to the planned executors", () => {
    const t0 = start({ executors: 3 });
    const t = onStageEnd(t0.state, done(t0.launch[0]!, [sub("a"), sub("b"), sub("c")]), ids);
    expect(t.state.phase).toBe("executing");
    expect(byKind(t.state, "execute").map((s) => s.inputs)).toEqual([["a"], ["b"], ["c"]]);
    expect(t.launch).toHaveLength(3);
  });

  it("spreads more subtasks than executors over them in slot order", () => {
    expect(assignSubtasks(["a", "b", "c", "d", "e"], 2)).toEqual([
      ["a", "c", "e"],
      ["b", "d"],
    ]);
    expect(assignSubtasks(["a"], 3)).toEqual([["a"]]);
  });

  it("parks the task in needs_human when the planner hands off no packet", () => {
    const t0 = start();
    const t = onStageEnd(t0.state, done(t0.launch[0]!, []), ids);
    expect(t).toMatchObject({
      ended: true,
      launch: [],
      state: { phase: "needs_human", outcome: { reason: "planner_no_packets", pause_class: "no_progress" } },
    });
  });

  it("fails the stage, not over to another vendor, when the planner's spawn fails", () => {
    const t0 = start();
    const t = onStageEnd(t0.state, failed(t0.launch[0]!, "not_logged_in"), ids);
    expect(t.state).toMatchObject({ phase: "needs_human", outcome: { reason: "team_stage_failed" } });
    expect(t.state.stages).toHaveLength(1);
  });

  it("verifies once every executor ended, with only the executors' output packets as input", () => {
    const t = toVerify();
    expect(t.state.phase).toBe("verifying");
    const [verify] = byKind(t.state, "verify");
    expect(verify!.inputs).toEqual(["out0", "out1", "out2"]);
    expect(verify!.inputs).not.toContain("a");
  });

  it("waits for the last executor before verifying", () => {
    let t = start();
    t = onStageEnd(t.state, done(t.launch[0]!, [sub("a"), sub("b")]), ids);
    const [e1, e2] = t.launch;
    t = onStageEnd(t.state, done(e1!, [sub("x")]), ids);
    expect(t).toMatchObject({ launch: [], state: { phase: "executing" } });
    t = onStageEnd(t.state, done(e2!, [sub("y")]), ids);
    expect(t.state.phase).toBe("verifying");
  });

  it("gives a failed executor one replica on the same subtasks, and verifies once the replica ended", () => {
    let t = start();
    t = onStageEnd(t.state, done(t.launch[0]!, [sub("a"), sub("b")]), ids);
    const [e1, e2] = t.launch;
    t = onStageEnd(t.state, failed(e1!), ids);
    expect(t.launch).toHaveLength(1);
    const replica = t.state.stages.find((s) => s.stage_id === t.launch[0]);
    expect(replica).toMatchObject({ kind: "execute", role: "executor", inputs: ["a"], replica_of: e1, status: "pending" });
    t = onStageEnd(t.state, done(e2!, [sub("y")]), ids);
    expect(t.state.phase).toBe("executing");
    t = onStageEnd(t.state, done(replica!.stage_id, [sub("x")]), ids);
    expect(t.state).toMatchObject({ phase: "verifying", absorbed_failures: [e1] });
    expect(byKind(t.state, "verify")[0]!.inputs).toEqual(["y", "x"]);
  });

  it("absorbs a failed executor whose replica failed too when a sibling succeeded, and gives no second replica", () => {
    let t = start();
    t = onStageEnd(t.state, done(t.launch[0]!, [sub("a"), sub("b")]), ids);
    const [e1, e2] = t.launch;
    t = onStageEnd(t.state, failed(e1!), ids);
    const replica = t.launch[0]!;
    t = onStageEnd(t.state, failed(replica), ids);
    expect(t.launch).toEqual([]);
    t = onStageEnd(t.state, done(e2!, [sub("y")]), ids);
    expect(t.state).toMatchObject({ phase: "verifying", absorbed_failures: [e1, replica] });
  });

  it("gives no replica when the budget refused the spawn, and needs a human when every executor failed", () => {
    let t = start();
    t = onStageEnd(t.state, done(t.launch[0]!, [sub("a")]), ids);
    t = onStageEnd(t.state, failed(t.launch[0]!, "timeout"), ids);
    t = onStageEnd(t.state, failed(t.launch[0]!, "budget_exhausted"), ids);
    expect(t.state).toMatchObject({ phase: "needs_human", outcome: { reason: "team_stage_failed" } });
    expect(byKind(t.state, "execute")).toHaveLength(2);
  });

  it("runs the utility role's synthesis between the executors and the verifier when the plan keeps it", () => {
    let t = start({ utility: true });
    t = onStageEnd(t.state, done(t.launch[0]!, [sub("a")]), ids);
    t = onStageEnd(t.state, done(t.launch[0]!, [sub("out")]), ids);
    expect(t.state.phase).toBe("synthesizing");
    const [synth] = byKind(t.state, "synthesize");
    expect(synth).toMatchObject({ role: "utility", inputs: ["out"] });
    t = onStageEnd(t.state, done(synth!.stage_id), ids);
    expect(t.state.phase).toBe("verifying");
    expect(byKind(t.state, "verify")[0]!.inputs).toEqual(["out"]);
  });

  it("sends a verifier PASS to the acceptance path, which accepts when every criterion is met", async () => {
    const v = toVerify();
    let t = onStageEnd(v.state, done(v.launch[0]!, [], { verdict: "PASS" } as Partial<StageEnd>), ids);
    expect(t.state).toMatchObject({ phase: "evaluating", verdict: "PASS", verdict_source: "verifier" });
    const [evaluate] = byKind(t.state, "evaluate");
    expect(evaluate).toMatchObject({ role: "evaluator", status: "pending" });
    t = onStageEnd(t.state, await judged(evaluate!.stage_id, [], 3, { verdict: "PASS", repaired: false }), ids);
    expect(t).toMatchObject({ ended: true, state: { phase: "accepted", outcome: { reason: "acceptance_passed" } } });
  });

  it("rejects a round whose verifier passed but the evaluator finds a criterion unmet", async () => {
    const v = toVerify();
    let t = onStageEnd(v.state, done(v.launch[0]!, [], { verdict: "PASS" } as Partial<StageEnd>), ids);
    t = onStageEnd(t.state, await judged(byKind(t.state, "evaluate")[0]!.stage_id, [2]), ids);
    expect(t.state).toMatchObject({ phase: "rejected", outcome: { reason: "criteria_unmet" }, evaluation: { unmet: [2] } });
  });

  it("gives the executor exactly one repair pass on a FAIL, limited to the subtasks and the verifier's gaps, then judges the repaired work", async () => {
    const v = toVerify();
    let t = onStageEnd(
      v.state,
      done(v.launch[0]!, [sub("gap1")], { verdict: "FAIL", reasons: ["notes/b.md missing"] } as Partial<StageEnd>),
      ids,
    );
    expect(t.state.phase).toBe("repairing");
    const [repair] = byKind(t.state, "repair");
    expect(repair).toMatchObject({ role: "executor", inputs: ["a", "b", "c", "gap1"] });
    expect(t.state.verdict_reasons).toEqual(["notes/b.md missing"]);
    t = onStageEnd(t.state, done(repair!.stage_id, [sub("fixed")]), ids);
    // The repaired output goes to the acceptance path, which decides (the verifier is not asked again).
    expect(t.state).toMatchObject({ phase: "evaluating", verdict: "FAIL", repaired: true });
    expect(byKind(t.state, "verify")).toHaveLength(1);
    t = onStageEnd(t.state, await judged(byKind(t.state, "evaluate")[0]!.stage_id, [], 3, { verdict: "FAIL", repaired: true }), ids);
    expect(t.state).toMatchObject({ phase: "accepted", evaluation: { stage_one: "repaired" } });
  });

  it("sends a FAIL without repair straight to the acceptance path when the budget gave up the second pass, where it stands", async () => {
    const v = toVerify({ repair: false });
    let t = onStageEnd(v.state, done(v.launch[0]!, [], { verdict: "FAIL" } as Partial<StageEnd>), ids);
    expect(t.state.phase).toBe("evaluating");
    // Even an evaluator that finds every criterion met does not overturn the unrepaired FAIL.
    t = onStageEnd(t.state, await judged(byKind(t.state, "evaluate")[0]!.stage_id, [], 3, { verdict: "FAIL", repaired: false }), ids);
    expect(t.state).toMatchObject({
      phase: "rejected",
      outcome: { reason: "verifier_fail_unrepaired" },
      evaluation: { stage_one: "rejected" },
    });
  });

  it("counts an unreadable verdict as FAIL and says so (fail closed)", () => {
    const v = toVerify({ repair: false });
    const t = onStageEnd(v.state, done(v.launch[0]!, [], { verdict: null } as Partial<StageEnd>), ids);
    expect(t.state).toMatchObject({ verdict: "FAIL", verdict_source: "unparseable" });
  });

  it("needs a human when the verifier's stage fails", () => {
    const v = toVerify();
    expect(onStageEnd(v.state, failed(v.launch[0]!), ids).state).toMatchObject({
      phase: "needs_human",
      outcome: { reason: "team_stage_failed" },
    });
  });

  it("ignores a repeated or unknown stage end", () => {
    const t0 = start();
    const t1 = onStageEnd(t0.state, done(t0.launch[0]!, [sub("a")]), ids);
    expect(onStageEnd(t1.state, done(t0.launch[0]!, [sub("zzz")]), ids)).toEqual({ state: t1.state, launch: [], ended: false });
    expect(onStageEnd(t1.state, done("stg_unknown"), ids).state).toBe(t1.state);
  });

  it("records a stage that ends after the round ended, and launches nothing", () => {
    let t = start();
    t = onStageEnd(t.state, done(t.launch[0]!, [sub("a"), sub("b")]), ids);
    const [e1, e2] = t.launch;
    const ended = { ...t.state, phase: "needs_human" as const, outcome: { status: "needs_human" as const, reason: "operator_stop" } };
    const late = onStageEnd(ended, done(e1!, [sub("x")]), ids);
    expect(late).toMatchObject({ launch: [], ended: false, state: { phase: "needs_human" } });
    expect(late.state.stages.find((s) => s.stage_id === e1)?.status).toBe("completed");
    expect(late.state.stages.find((s) => s.stage_id === e2)?.status).toBe("pending");
  });

  describe("gray zone", () => {
    it("goes on as the employee's own run, with the plan to read, when the real plan has fewer than 4 independent subtasks", () => {
      const t0 = start({ mode: "gray" });
      const t = onStageEnd(t0.state, done(t0.launch[0]!, [sub("a"), sub("b"), sub("c", ["a"])]), ids);
      expect(t).toMatchObject({
        ended: false,
        state: { phase: "working", subtasks: ["a", "b", "c"], regate: { decision: "solo", independent: 1 } },
      });
      const [work] = byKind(t.state, "work");
      expect(work).toMatchObject({ role: "employee", inputs: ["a", "b", "c"] });
      expect(t.launch).toEqual([work!.stage_id]);
    });

    it("forms the team when the real plan has at least 4 independent subtasks", () => {
      const t0 = start({ mode: "gray", executors: 2 });
      const t = onStageEnd(t0.state, done(t0.launch[0]!, [sub("a"), sub("b"), sub("c"), sub("d")]), ids);
      expect(t.state).toMatchObject({ phase: "executing", regate: { decision: "team", independent: 4 } });
      expect(byKind(t.state, "execute")).toHaveLength(2);
    });
  });

  describe("solo round", () => {
    it("starts with the employee's own run, then the evaluator, then accepts or rejects on the criteria", async () => {
      let t = start({ mode: "solo" });
      expect(t.state).toMatchObject({ phase: "working", stages: [{ kind: "work", role: "employee", status: "pending" }] });
      expect(t.state.plan).toBeUndefined();
      t = onStageEnd(t.state, done(t.launch[0]!), ids);
      expect(t.state.phase).toBe("evaluating");
      const rejected = onStageEnd(t.state, await judged(t.launch[0]!, [1, 3]), ids);
      expect(rejected.state).toMatchObject({ phase: "rejected", evaluation: { unmet: [1, 3], stage_one: "absent" } });
      const accepted = onStageEnd(t.state, await judged(t.launch[0]!, []), ids);
      expect(accepted.state.phase).toBe("accepted");
    });

    it("needs a human when the employee's run fails, and says it was the work", () => {
      const t0 = start({ mode: "solo" });
      expect(onStageEnd(t0.state, failed(t0.launch[0]!, "not_logged_in"), ids).state).toMatchObject({
        phase: "needs_human",
        outcome: { reason: "work_failed", pause_class: "infra" },
      });
    });

    it("parks for a human when the evaluator is the offline runtime, which cannot judge", () => {
      let t = start({ mode: "solo" });
      t = onStageEnd(t.state, done(t.launch[0]!), ids);
      t = onStageEnd(t.state, failed(t.launch[0]!, "evaluator_offline_runtime"), ids);
      expect(t.state).toMatchObject({
        phase: "needs_human",
        outcome: { reason: "evaluator_offline_runtime", pause_class: "blocked_needs_decision" },
      });
    });
  });
});
