import type { Db } from "../db/client";
import type { EmployeeRow } from "../db/schema";
import { answerOf } from "../jobs/model-answer";
import { employeeTurnPayload, utilityPayload, type EmployeeTurnPayload, type UtilityPayload } from "../jobs/payloads";
import { readSection } from "../lib/config";
import { searchMemory } from "../knowledge/memory";
import { soulForEmployeeRun, withSoul } from "../evolution/soul-run";
import { DEFAULT_ALLOWED_TOOLS } from "../jobs/default-tools";
import { evaluateRound, frozenCriteria, type Evaluation } from "./acceptance";
import type { RoundState, StageRecord } from "./composer";
import { EFFORT_LEVELS, type EffortLevel } from "./effort";
import { goalsConfig, type GoalsConfig } from "./goals-config";
import { loadLeg, type LegRef } from "./legs";
import { evaluatePrompt, workPrompt } from "./loop-prompts";
import type { TaskPacket } from "./packet";
import { newProtectedMarker } from "./render";
import { listRounds, stateOf } from "./round-store";
import type { RoundContext } from "./stage-request";
import { stageResults } from "./stage-request";

/**
 * The goal loop's own stages, which are not role members: the employee's run (`work`, an
 * `employee_turn` job) and the evaluator (`evaluate`, a `utility` job answering the acceptance
 * schema). No scaffold, member token or spawn charge: the seed's budget counts members only.
 */

export type LoopStageJob =
  | { kind: "employee_turn"; payload: EmployeeTurnPayload; runtime: string; model: string }
  | { kind: "utility"; payload: UtilityPayload; runtime: string; model: string }
  /** No job: the evaluator would be the built-in offline runtime, which cannot judge. */
  | { kind: "none"; error: { code: string; message: string } };

const MEMORY_ENTRIES = 5;

/**
 * Who evaluates for this employee: `[goals] evaluator`, its unset fields the employee's own. None
 * when neither names a runtime (a round started from code for an employee the registry lacks).
 */
export function evaluatorOf(
  cfg: GoalsConfig,
  employee: Pick<EmployeeRow, "runtime" | "modelPreferred"> | undefined,
): { runtime: string; model?: string } | null {
  const runtime = cfg.evaluator.runtime ?? employee?.runtime;
  if (!runtime) return null;
  // A model named for another runtime would be refused by that CLI; the employee's only goes with its
  // own. None named: the CLI's own default model.
  const model = cfg.evaluator.model ?? (runtime === employee?.runtime ? employee.modelPreferred : undefined);
  return { runtime, ...(model ? { model } : {}) };
}

function employeeEffort(row: EmployeeRow): EffortLevel | undefined {
  return (EFFORT_LEVELS as readonly string[]).includes(row.modelEffort ?? "") ? (row.modelEffort as EffortLevel) : undefined;
}

/** The task's rounds before this one, oldest first. */
async function earlierRounds(db: Db, state: RoundState): Promise<RoundState[]> {
  return (await listRounds(db, state.task_id)).map(stateOf).filter((r) => r.round_no < state.round_no);
}

/** Paths earlier rounds' work wrote (their receipts), so the runner reports their state now. */
async function earlierArtifacts(db: Db, rounds: readonly RoundState[]): Promise<string[]> {
  const stages = rounds.flatMap((r) =>
    r.stages.filter((s) => (s.kind === "work" || s.kind === "execute" || s.kind === "repair") && s.status === "completed"),
  );
  const results = await stageResults(db, stages);
  const paths = new Set<string>();
  for (const r of results) for (const receipt of r?.artifact_receipts ?? []) if (receipt.state === "exists") paths.add(receipt.path);
  return [...paths].slice(-64);
}

async function packets(
  db: Db,
  state: RoundState,
  from: "planner" | "executor",
  to: "executor" | "verifier",
  ids: readonly string[],
  now: Date,
) {
  const leg: LegRef = { taskId: state.task_id, roundNo: state.round_no, from, to };
  const want = new Set(ids);
  return (await loadLeg(db, leg, now)).packets.filter((p) => want.has(p.packet.packet_id)).map((p) => p.packet);
}

/** The job a loop stage runs, or null when it cannot be built (an unknown employee, a prompt that does not fit). */
export async function loopStageJob(
  db: Db,
  state: RoundState,
  stage: StageRecord,
  ctx: RoundContext,
  now: Date,
): Promise<LoopStageJob | null> {
  const employee = ctx.employee;
  const cfg = await readSection(db, goalsConfig);
  const goal = frozenCriteria(ctx.goal);
  const marker = newProtectedMarker();
  const rounds = await earlierRounds(db, state);
  try {
    if (stage.kind === "work") {
      if (!employee) return null;
      const previous = rounds.filter((r) => r.evaluation).at(-1)?.evaluation;
      const plan: TaskPacket[] = stage.inputs.length ? await packets(db, state, "planner", "executor", stage.inputs, now) : [];
      const memory = (await searchMemory(db, employee.id, ctx.goal.title, MEMORY_ENTRIES).catch(() => [])).map((m) => m.text);
      const recheck = await earlierArtifacts(db, rounds);
      const effort = employeeEffort(employee);
      // The employee's current SOUL travels with the run, which renders it and checks it (the soul guard).
      const soul = await soulForEmployeeRun(db, employee);
      const parsed = employeeTurnPayload.parse({
        runtime: employee.runtime,
        model: employee.modelPreferred,
        ...(effort ? { effort } : {}),
        employee_id: employee.id,
        employee: {
          name: employee.name,
          capabilities: {
            allowed_tools: employee.capabilities?.allowed_tools ?? DEFAULT_ALLOWED_TOOLS,
            denied_tools: employee.capabilities?.denied_tools ?? [],
          },
          sandbox_enabled: employee.sandboxEnabled === true,
        },
        purpose: "goal_round",
        task_id: state.task_id,
        round_id: state.round_id,
        round: state.round_no,
        stage_id: stage.stage_id,
        prompt: workPrompt({
          round_no: state.round_no,
          employee: { name: employee.name },
          goal: { title: ctx.goal.title, criteria: goal.criteria },
          ...(previous ? { previous } : {}),
          ...(plan.length ? { plan } : {}),
          ...(memory.length ? { memory } : {}),
          marker,
        }),
        ...(recheck.length ? { recheck_paths: recheck } : {}),
        timeout_ms: cfg.work_timeout_ms,
      });
      const payload = withSoul(parsed, soul);
      return { kind: "employee_turn", payload, runtime: employee.runtime, model: employee.modelPreferred };
    }
    if (stage.kind === "evaluate") {
      const evaluator = evaluatorOf(cfg, employee);
      if (!evaluator) return null;
      if (evaluator.runtime === "offline") {
        return {
          kind: "none",
          error: {
            code: "evaluator_offline_runtime",
            message:
              "the evaluator would be the built-in offline runtime, which cannot judge work: set [goals] evaluator (or the employee's runtime) to a model CLI, or settle the task by hand",
          },
        };
      }
      const prompt = evaluatePrompt(await evaluationInput(db, state, goal.criteria, ctx.goal.title, marker, now));
      const payload = utilityPayload.parse({
        runtime: evaluator.runtime,
        ...(evaluator.model ? { model: evaluator.model } : {}),
        prompt,
        timeout_ms: cfg.evaluate_timeout_ms,
        output_schema: "acceptance",
        ...(employee ? { employee_id: employee.id } : {}),
      });
      return { kind: "utility", payload, runtime: evaluator.runtime, model: evaluator.model ?? "default" };
    }
  } catch (err) {
    console.error(`goal loop: stage ${stage.stage_id} (${stage.kind}) could not be built`, err);
    return null;
  }
  return null;
}

/** What the evaluator is shown of a round: its evidence, its output and, in a team, the verifier's word. */
async function evaluationInput(db: Db, state: RoundState, criteria: string[], title: string, marker: string, now: Date) {
  const goal = { title, criteria };
  if (state.mode === "solo" || state.regate?.decision === "solo") {
    const work = state.stages.find((s) => s.kind === "work" && s.status === "completed");
    const [result] = await stageResults(db, work ? [work] : []);
    return {
      task_id: state.task_id,
      round_no: state.round_no,
      goal,
      results: [result],
      output: result?.text ?? "(the employee gave no answer)",
      marker,
    };
  }
  const workers = state.stages.filter((s) => (s.kind === "execute" || s.kind === "repair") && s.status === "completed");
  const synth = state.stages.find((s) => s.kind === "synthesize" && s.status === "completed");
  const [results, [synthesis]] = await Promise.all([stageResults(db, workers), stageResults(db, synth ? [synth] : [])]);
  const outputs = workers.flatMap((s) => s.outputs ?? []);
  return {
    task_id: state.task_id,
    round_no: state.round_no,
    goal,
    results,
    ...(synthesis?.text ? { output: synthesis.text } : {}),
    packets: await packets(db, state, "executor", "verifier", outputs, now),
    ...(state.verdict
      ? {
          verifier: {
            verdict: state.verdict,
            reasons: state.verdict_reasons ?? [],
            repaired: state.repaired === true,
            unparseable: state.verdict_source === "unparseable",
          },
        }
      : {}),
    marker,
  };
}

/** The acceptance path's judgement of a round from the evaluator's answer. */
export function judgeRound(
  state: RoundState,
  goal: { title: string; acceptance_criteria: readonly string[] },
  result: Record<string, unknown> | undefined,
): Promise<Evaluation> {
  const { criteria, implicit } = frozenCriteria(goal);
  const answer = answerOf(result);
  return evaluateRound({
    criteria,
    implicit,
    // An offline answer is never a judgement (labelled text): it reads as unparseable.
    answer: answer.offline ? null : answer.text,
    ...(state.verdict
      ? { verifier: { verdict: state.verdict, unparseable: state.verdict_source === "unparseable", repaired: state.repaired === true } }
      : {}),
  });
}
