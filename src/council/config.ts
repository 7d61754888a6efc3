import { z } from "zod";
import { defineConfigSection } from "../lib/config";
import { RUNTIMES } from "../jobs/payloads";

/**
 * `council` config section: the operational side of the council (which runtime does model work,
 * how long to wait). Defaults let a fresh install with only the runner's `offline` runtime run a
 * whole session end to end and say in its records what no model reviewed:
 * - `prescreen: "off"`: the offline runtime cannot judge a proposal and the prescreen guards, so it
 *   would have to reject everything; off is recorded on each proposal (`prescreen.mode = "off"`).
 *   Set `"model"` with a real runtime (`claude`, …) to turn the model prescreen on.
 * - `synthesis: "model"` on `offline`: the job runs (so the pipeline is exercised), its labelled text
 *   is not a consensus, and the decision says `synthesis_source: "template"` with the reason.
 * - `ethics_model: "off"`: the rule-based ethics review always runs; the model check is opt-in.
 */
export const councilConfig = defineConfigSection(
  "council",
  z.object({
    prescreen: z.enum(["off", "model"]).default("off"),
    prescreen_runtime: z.enum(RUNTIMES).default("claude"),
    prescreen_model: z.string().min(1).max(200).optional(),
    /** How long POST /v1/council/proposals waits for the prescreen before answering 202. */
    prescreen_wait_ms: z.number().int().min(0).max(25_000).default(15_000),
    /** A prescreen with no verdict after this is a rejection (fail closed), found by the tick. */
    prescreen_timeout_ms: z.number().int().min(60_000).max(86_400_000).default(1_800_000),
    synthesis: z.enum(["off", "model"]).default("model"),
    synthesis_runtime: z.enum(RUNTIMES).default("offline"),
    synthesis_model: z.string().min(1).max(200).optional(),
    synthesis_timeout_ms: z.number().int().min(10_000).max(86_400_000).default(900_000),
    ethics_model: z.enum(["off", "model"]).default("off"),
    ethics_runtime: z.enum(RUNTIMES).default("claude"),
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
  }),
);
export type CouncilConfig = z.infer<typeof councilConfig.schema>;
