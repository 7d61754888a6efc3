import { describe, expect, it } from "vitest";
import {
  assignSubtasks,
  beginRound,
  bestRound,
  onStageEnd,
  type RoundState,
  type StageEnd,
  type Transition,
} from "../../../src/team/composer";

let n = 0;
const ids = () => `stg_${++n}`;
const plan = (executors = 3, repair = true) => ({ planner: true, executors, verifier: true as const, repair, utility: true });

function start(opts: { executors?: number; repair?: boolean; mode?: "team" | "gray" } = {}) {
  return beginRound(
    {
      round_id: "trnd_1",
      task_id: "task_1",
      round_no: 1,
      mode: opts.mode ?? "team",
      plan: plan(opts.executors, opts.repair),
      degrade_steps: [],
    },
    ids,
  );
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

  it("absorbs a failed executor when a sibling succeeded (the replica step) and records it", () => {
    let t = start();
    t = onStageEnd(t.state, done(t.launch[0]!, [sub("a"), sub("b")]), ids);
    const [e1, e2] = t.launch;
    t = onStageEnd(t.state, failed(e1!), ids);
    t = onStageEnd(t.state, done(e2!, [sub("y")]), ids);
    expect(t.state).toMatchObject({ phase: "verifying", absorbed_failures: [e1] });
  });

  it("needs a human when every executor failed", () => {
    let t = start();
    t = onStageEnd(t.state, done(t.launch[0]!, [sub("a")]), ids);
    t = onStageEnd(t.state, failed(t.launch[0]!, "timeout"), ids);
    expect(t.state).toMatchObject({ phase: "needs_human", outcome: { reason: "team_stage_failed" } });
  });

  it("settles on a verifier PASS", () => {
    const v = toVerify();
    const t = onStageEnd(v.state, done(v.launch[0]!, [], { verdict: "PASS" } as Partial<StageEnd>), ids);
    expect(t).toMatchObject({
      ended: true,
      state: { phase: "settled", verdict: "PASS", verdict_source: "verifier", outcome: { reason: "verifier_pass" } },
    });
  });

  it("gives the executor exactly one repair pass on a FAIL, limited to the subtasks and the verifier's gaps, then settles", () => {
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
    expect(t).toMatchObject({
      ended: true,
      state: { phase: "settled", verdict: "FAIL", repaired: true, outcome: { reason: "verifier_fail_repaired" } },
    });
    expect(byKind(t.state, "verify")).toHaveLength(1);
  });

  it("settles a FAIL without repair when the budget gave up the second pass", () => {
    const v = toVerify({ repair: false });
    const t = onStageEnd(v.state, done(v.launch[0]!, [], { verdict: "FAIL" } as Partial<StageEnd>), ids);
    expect(t.state).toMatchObject({ phase: "settled", outcome: { reason: "verifier_fail_no_repair" } });
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
    it("goes solo with the plan kept when the real plan has fewer than 4 independent subtasks", () => {
      const t0 = start({ mode: "gray" });
      const t = onStageEnd(t0.state, done(t0.launch[0]!, [sub("a"), sub("b"), sub("c", ["a"])]), ids);
      expect(t).toMatchObject({
        ended: true,
        state: {
          phase: "solo",
          subtasks: ["a", "b", "c"],
          regate: { decision: "solo", independent: 1 },
          outcome: { reason: "regate_solo" },
        },
      });
    });

    it("forms the team when the real plan has at least 4 independent subtasks", () => {
      const t0 = start({ mode: "gray", executors: 2 });
      const t = onStageEnd(t0.state, done(t0.launch[0]!, [sub("a"), sub("b"), sub("c"), sub("d")]), ids);
      expect(t.state).toMatchObject({ phase: "executing", regate: { decision: "team", independent: 4 } });
      expect(byKind(t.state, "execute")).toHaveLength(2);
    });
  });

  it("ranks the best round: PASS over FAIL, repaired over not, more executors, then later", () => {
    const r = (round_no: number, extra: Partial<RoundState>): RoundState => ({ ...start().state, round_no, ...extra });
    expect(bestRound([r(1, { verdict: "FAIL" }), r(2, { verdict: "PASS" }), r(3, {})])?.round_no).toBe(2);
    expect(bestRound([r(1, { verdict: "FAIL", repaired: true }), r(2, { verdict: "FAIL" })])?.round_no).toBe(1);
    expect(bestRound([r(1, {}), r(2, {})])?.round_no).toBe(2);
    expect(bestRound([])).toBeUndefined();
  });
});
