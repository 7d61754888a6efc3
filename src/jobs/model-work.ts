import * as z from "zod";
import type { Db } from "../db/client";
import { defineConfigSection } from "../lib/config";
import { RUNTIMES, type Runtime } from "./payloads";
import { liveRuntimes } from "./runner-runtimes";

/**
 * `model_work`: one setting that turns on the model work the seeds expect (the council's prescreen,
 * synthesis and model ethics review, a project's decomposition). Unset, every stage keeps its own
 * default (no model review on a fresh install). Set to a runtime, each stage the operator did not set
 * in `council` / `projects` runs on it, while a live runner offers it; when none does, the stage falls
 * back as it would without a model and records `runtime_not_offered` (a prescreen waiting for a job
 * nobody runs would fail closed and reject every proposal).
 *
 * `offline` is refused: it answers every prompt with labelled text, so it can judge nothing.
 */
const modelWorkSchema = z.object({
  runtime: z
    .enum(RUNTIMES)
    .refine((r) => r !== "offline", "offline can judge nothing; leave model_work unset for the offline fallbacks")
    .optional(),
  /** The model on `runtime` (passed to the CLI as is); unset: the CLI's default. */
  model: z.string().min(1).max(200).optional(),
});
export type ModelWork = z.infer<typeof modelWorkSchema>;
export const modelWorkConfig = defineConfigSection("model_work", modelWorkSchema, { present: presentModelWork });

/** What GET/PUT `/v1/config/model_work` show: the section and the runtimes live runners offer now. */
async function presentModelWork(db: Db, value: ModelWork, now: Date): Promise<Record<string, unknown>> {
  return { ...value, offered_runtimes: [...(await liveRuntimes(db, now))].sort() };
}

/**
 * Why a stage did not run on a model (documented in the README, "Model work"). Decided when the
 * stage is decided (`model_work_unset`, `stage_off`, `runtime_not_offered`, `offline_runtime`) or
 * when its job ended without a usable answer (`model_timeout`, `model_failed`, `model_unusable`).
 */
export const MODEL_WORK_REASONS = [
  "model_work_unset",
  "stage_off",
  "runtime_not_offered",
  "offline_runtime",
  "not_needed",
  "model_timeout",
  "model_failed",
  "model_unusable",
  "unrecorded",
] as const;
export type ModelWorkReason = (typeof MODEL_WORK_REASONS)[number];

/**
 * How one stage was decided: on a model runtime or not, and why not. `set_by` names what decided:
 * the stage's own setting (`stage`), `model_work`, or the stage's default.
 */
export interface StagePlan {
  on_model: boolean;
  set_by: "stage" | "model_work" | "default";
  runtime?: Runtime;
  model?: string;
  fell_back_because?: ModelWorkReason;
  /** With `runtime_not_offered`: the runtime no live runner offered. */
  wanted_runtime?: Runtime;
}

export type StageMode = "off" | "model";

/** A stage's own settings as stored (each unset unless the operator wrote it) and its defaults. */
export interface StageInput {
  mode?: StageMode | undefined;
  runtime?: Runtime | undefined;
  model?: string | undefined;
}
export interface StageDefaults {
  mode: StageMode;
  runtime: Runtime;
}

export interface ResolvedStage {
  mode: StageMode;
  runtime: Runtime;
  model?: string;
  plan: StagePlan;
}

/** The runtime `model_work` turns stages on with, or undefined when it is unset. */
export function modelWorkRuntime(work: ModelWork): Runtime | undefined {
  return work.runtime; // never `offline`: the schema refuses it
}

/** Whether resolving needs the live runtimes at all (only when `model_work` names a runtime). */
export const needsOffered = (work: ModelWork): boolean => modelWorkRuntime(work) !== undefined;

/**
 * One stage's effective mode, runtime and model (pure). An explicit mode wins and is not second-guessed;
 * otherwise `model_work` (when set) turns the stage on if a live runner offers its runtime, and falls
 * back to `off` with `runtime_not_offered` if not; with `model_work` unset the stage's default holds.
 * An explicitly set runtime or model is kept in every case.
 */
export function resolveStage(set: StageInput, defaults: StageDefaults, work: ModelWork, offered: ReadonlySet<string>): ResolvedStage {
  const workRuntime = modelWorkRuntime(work);
  const modelFor = (runtime: Runtime) => set.model ?? (runtime === workRuntime ? work.model : undefined);
  if (set.mode !== undefined) {
    const runtime = set.runtime ?? workRuntime ?? defaults.runtime;
    return withModel({ mode: set.mode, runtime, plan: describe(set.mode, runtime, "stage") }, modelFor(runtime));
  }
  if (workRuntime === undefined) {
    const runtime = set.runtime ?? defaults.runtime;
    return withModel(
      { mode: defaults.mode, runtime, plan: describe(defaults.mode, runtime, set.runtime ? "stage" : "default") },
      set.model,
    );
  }
  const runtime = set.runtime ?? workRuntime;
  if (!offered.has(runtime)) {
    return {
      mode: "off",
      runtime,
      plan: { on_model: false, set_by: "model_work", fell_back_because: "runtime_not_offered", wanted_runtime: runtime },
    };
  }
  return withModel({ mode: "model", runtime, plan: describe("model", runtime, "model_work") }, modelFor(runtime));
}

function withModel(r: ResolvedStage, model: string | undefined): ResolvedStage {
  if (!model || !r.plan.on_model) return r;
  return { ...r, model, plan: { ...r.plan, model } };
}

function describe(mode: StageMode, runtime: Runtime, setBy: StagePlan["set_by"]): StagePlan {
  if (mode === "off") return { on_model: false, set_by: setBy, fell_back_because: setBy === "stage" ? "stage_off" : "model_work_unset" };
  if (runtime === "offline") {
    // The offline runtime by default is "nobody turned model work on"; chosen by hand, it is the runtime's own limit.
    return { on_model: false, set_by: setBy, runtime, fell_back_because: setBy === "default" ? "model_work_unset" : "offline_runtime" };
  }
  return { on_model: true, set_by: setBy, runtime };
}
