import * as z from "zod";
import type { Db } from "../db/client";
import { defineConfigSection, readSection, readSectionCached, CONFIG_CACHE_MS } from "../lib/config";
import { modelWorkConfig, modelWorkRuntime, needsOffered, resolveStage, type ModelWork, type StagePlan } from "../jobs/model-work";
import { RUNTIMES, type Runtime } from "../jobs/payloads";
import { liveRuntimes } from "../jobs/runner-runtimes";

/**
 * `council` config section: the operational side of the council (which runtime does model work,
 * how long to wait). The stage keys (`prescreen*`, `synthesis`, `synthesis_runtime`,
 * `synthesis_model`, `ethics_model`, `ethics_runtime`) have no zod default: unset, they follow the
 * `model_work` section, and `effectiveCouncilConfig` (below) gives their value. With `model_work`
 * unset too, a fresh install with only the runner's `offline` runtime runs a whole session end to
 * end and says in its records what no model reviewed:
 * - `prescreen: "off"`: the offline runtime cannot judge a proposal and the prescreen guards, so it
 *   would have to reject everything; off is recorded on each proposal (`prescreen.mode = "off"`).
 * - `synthesis: "model"` on `offline`: the job runs (so the pipeline is exercised), its labelled text
 *   is not a consensus, and the decision says `synthesis_source: "template"` with the reason.
 * - `ethics_model: "off"`: the rule-based ethics review always runs; the model check is opt-in.
 */
const councilSchema = z.object({
  prescreen: z.enum(["off", "model"]).optional(),
  prescreen_runtime: z.enum(RUNTIMES).optional(),
  prescreen_model: z.string().min(1).max(200).optional(),
  /** How long POST /v1/council/proposals waits for the prescreen before answering 202. */
  prescreen_wait_ms: z.number().int().min(0).max(25_000).default(15_000),
  /** A prescreen with no verdict after this is a rejection (fail closed), found by the tick. */
  prescreen_timeout_ms: z.number().int().min(60_000).max(86_400_000).default(1_800_000),
  synthesis: z.enum(["off", "model"]).optional(),
  synthesis_runtime: z.enum(RUNTIMES).optional(),
  synthesis_model: z.string().min(1).max(200).optional(),
  synthesis_timeout_ms: z.number().int().min(10_000).max(86_400_000).default(900_000),
  ethics_model: z.enum(["off", "model"]).optional(),
  ethics_runtime: z.enum(RUNTIMES).optional(),
  ethics_timeout_ms: z.number().int().min(10_000).max(86_400_000).default(900_000),
  /** Phrases whose presence in an approved outcome makes the rule-based ethics review ask for a revision. */
  ethics_denied_terms: z
    .array(z.string().trim().min(3).max(100))
    .max(200)
    .default(["ransomware", "bioweapon", "doxxing", "credential stuffing"]),
  /** Admin vetoes lapse unless a second admin ratifies them within this many hours. */
  veto_ratify_hours: z
    .number()
    .int()
    .min(1)
    .max(24 * 30)
    .default(72),
  /** A dialog post schedules a progress check this long after it (debounced, at most one pending). */
  progress_debounce_ms: z.number().int().min(0).max(60_000).default(10_000),
  /** Where a new node starts: below every gate, so a fresh identity cannot vote or propose until it earns (or is given) standing. */
  initial_reputation: z.number().min(0).max(100).default(10),
});
/** The section as stored: stage keys the operator did not write are absent. */
export type CouncilSettings = z.infer<typeof councilSchema>;
export const councilConfig = defineConfigSection("council", councilSchema, { present: presentCouncil });

/** Today's defaults of the stage keys: what a stage does when neither it nor `model_work` is set. */
export const STAGE_DEFAULTS = {
  prescreen: { mode: "off", runtime: "claude" },
  synthesis: { mode: "model", runtime: "offline" },
  ethics: { mode: "off", runtime: "claude" },
} as const;

export interface CouncilStagePlans {
  prescreen: StagePlan;
  synthesis: StagePlan;
  ethics: StagePlan;
}

/** The council's effective configuration: every stage key resolved, with how each stage was decided. */
export type CouncilConfig = Omit<
  CouncilSettings,
  "prescreen" | "prescreen_runtime" | "synthesis" | "synthesis_runtime" | "ethics_model" | "ethics_runtime"
> & {
  prescreen: "off" | "model";
  prescreen_runtime: Runtime;
  synthesis: "off" | "model";
  synthesis_runtime: Runtime;
  ethics_model: "off" | "model";
  ethics_runtime: Runtime;
  model_work: CouncilStagePlans;
};

/**
 * The council section as it applies (pure): each stage the operator set explicitly keeps its
 * setting; the others follow `model_work` while a live runner offers its runtime (`offered`), fall
 * back (prescreen off, synthesis template, ethics rules only) with `runtime_not_offered` when none
 * does, and keep today's defaults when `model_work` is unset.
 */
export function effectiveCouncilConfig(council: CouncilSettings, work: ModelWork, offered: ReadonlySet<string>): CouncilConfig {
  const prescreen = resolveStage(
    { mode: council.prescreen, runtime: council.prescreen_runtime, model: council.prescreen_model },
    STAGE_DEFAULTS.prescreen,
    work,
    offered,
  );
  const synthesis = resolveStage(
    { mode: council.synthesis, runtime: council.synthesis_runtime, model: council.synthesis_model },
    STAGE_DEFAULTS.synthesis,
    work,
    offered,
  );
  const ethics = resolveStage({ mode: council.ethics_model, runtime: council.ethics_runtime }, STAGE_DEFAULTS.ethics, work, offered);
  const { prescreen_model: _p, synthesis_model: _s, ...rest } = council;
  return {
    ...rest,
    prescreen: prescreen.mode,
    prescreen_runtime: prescreen.runtime,
    ...(prescreen.model ? { prescreen_model: prescreen.model } : {}),
    synthesis: synthesis.mode,
    synthesis_runtime: synthesis.runtime,
    ...(synthesis.model ? { synthesis_model: synthesis.model } : {}),
    ethics_model: ethics.mode,
    ethics_runtime: ethics.runtime,
    model_work: { prescreen: prescreen.plan, synthesis: synthesis.plan, ethics: ethics.plan },
  };
}

/** The effective council config now (the sections and, only when `model_work` is set, the live runtimes). */
export async function readCouncilConfig(db: Db, now: Date): Promise<CouncilConfig> {
  const [council, work] = await Promise.all([readSection(db, councilConfig), readSection(db, modelWorkConfig)]);
  return effectiveCouncilConfig(council, work, needsOffered(work) ? await liveRuntimes(db, now) : new Set());
}

let offeredCache: { value: Set<string>; until: number } | undefined;

/**
 * `readCouncilConfig` through the isolate's short caches, for the session object's every input. The
 * live runtimes are cached as long as a section is (a runner records them at most once a minute),
 * but only while they offer the runtime `model_work` wants: a cached miss is read again, so a runner
 * that has just come online is seen at once. (A stage decided on a stale miss falls back for good,
 * a synthesis to the template; a stale hit only queues a job that waits for a runner, as any does.)
 */
export async function readCouncilConfigCached(db: Db, now: Date): Promise<CouncilConfig> {
  const [council, work] = await Promise.all([readSectionCached(db, councilConfig), readSectionCached(db, modelWorkConfig)]);
  const wanted = modelWorkRuntime(work);
  if (wanted === undefined) return effectiveCouncilConfig(council, work, new Set());
  const real = Date.now();
  if (!offeredCache || offeredCache.until <= real || !offeredCache.value.has(wanted)) {
    offeredCache = { value: await liveRuntimes(db, now), until: real + CONFIG_CACHE_MS };
  }
  return effectiveCouncilConfig(council, work, offeredCache.value);
}

/**
 * What `GET /v1/config/council` shows: the effective values at the top (as before `model_work`
 * existed), what was stored, and how each stage is decided now (`stages`).
 */
async function presentCouncil(db: Db, stored: CouncilSettings, now: Date): Promise<Record<string, unknown>> {
  const work = await readSection(db, modelWorkConfig);
  const { model_work, ...effective } = effectiveCouncilConfig(stored, work, needsOffered(work) ? await liveRuntimes(db, now) : new Set());
  return { ...effective, stored, stages: model_work };
}
