import * as z from "zod";
import type { Db } from "../db/client";
import type { EmployeeRow } from "../db/schema";
import { defineConfigSection, readSection } from "../lib/config";

/**
 * `[evolution]` (seed 003 §7 and §12.7): the keys and defaults of the seed's agent.toml section. Set
 * globally (`PUT /v1/config/evolution`) and per employee (its `evolution` config, which overrides the
 * global section field by field). `gvu_enabled` is opt-in and covers every evolution path (AEE and the
 * legacy SOUL path); `gvu_cooldown_minutes` holds across every trigger path.
 */
const externalFactors = z.strictObject({
  user_feedback: z.boolean().default(true),
  security_events: z.boolean().default(false),
  channel_metrics: z.boolean().default(false),
  business_context: z.boolean().default(false),
  peer_signals: z.boolean().default(false),
});

export const EVOLUTION_STRATEGIES = ["balanced", "innovate", "harden", "repair_only"] as const;

export const evolutionSchema = z.object({
  skill_auto_activate: z.boolean().default(true),
  skill_security_scan: z.boolean().default(true),
  gvu_enabled: z.boolean().default(false),
  gvu_cooldown_minutes: z.number().int().min(0).max(10_080).default(60),
  max_silence_hours: z.number().min(0.1).max(720).default(12),
  max_gvu_generations: z.number().int().min(1).max(10).default(3),
  observation_period_hours: z.number().min(1).max(720).default(24),
  skill_token_budget: z.number().int().min(0).max(100_000).default(2_500),
  max_active_skills: z.number().int().min(0).max(100).default(5),
  legacy_soul_evolution: z.boolean().default(false),
  /** AEE entries' observation window; the seed caps it at 30 days. */
  aee_settle_hours: z
    .number()
    .min(1)
    .max(30 * 24)
    .default(24),
  strategy: z.enum(EVOLUTION_STRATEGIES).default("balanced"),
  noise_band: z.strictObject({ cases: z.number().min(0).max(1).default(0.05), judge: z.number().min(0).max(1).default(0.15) }).prefault({}),
  external_factors: externalFactors.prefault({}),
  /** Reflection and evolution runs across all agents at once (seed 003 MAX_GLOBAL_CONCURRENT). */
  global_concurrency: z.number().int().min(1).max(100).default(8),
  /** Governed evolution (issue 23 item 5): a SOUL version or playbook commit that would apply waits for a manager's approval. */
  require_approval: z.boolean().default(false),
  /** Seed §12.2: the employee's runs may write their rendered SOUL.md even on the AEE path (never adopted: SOUL versions change through the API or the GVU updater). */
  can_modify_own_soul: z.boolean().default(false),
});
export type EvolutionConfig = z.infer<typeof evolutionSchema>;

export const evolutionConfig = defineConfigSection("evolution", evolutionSchema);

/** An employee's own `[evolution]` as written: any subset, validated key by key. */
export const employeeEvolution = z
  .strictObject({
    skill_auto_activate: z.boolean(),
    skill_security_scan: z.boolean(),
    gvu_enabled: z.boolean(),
    gvu_cooldown_minutes: z.number().int().min(0).max(10_080),
    max_silence_hours: z.number().min(0.1).max(720),
    max_gvu_generations: z.number().int().min(1).max(10),
    observation_period_hours: z.number().min(1).max(720),
    skill_token_budget: z.number().int().min(0).max(100_000),
    max_active_skills: z.number().int().min(0).max(100),
    legacy_soul_evolution: z.boolean(),
    aee_settle_hours: z
      .number()
      .min(1)
      .max(30 * 24),
    strategy: z.enum(EVOLUTION_STRATEGIES),
    require_approval: z.boolean(),
    can_modify_own_soul: z.boolean(),
  })
  .partial();

/** The employee's effective section: its own keys over the global ones (a corrupt override is none). */
export function effectiveEvolution(global: EvolutionConfig, own: unknown): EvolutionConfig {
  const parsed = employeeEvolution.safeParse(own ?? {});
  return parsed.success ? { ...global, ...parsed.data } : global;
}

/**
 * The flags `evolution_toggle` (the employee's own MCP tool) may flip. `cognitive_memory` is not one:
 * the cognitive memory layer is always resident, and the seed refuses writes to it.
 */
export const TOGGLEABLE = ["gvu_enabled", "skill_auto_activate", "skill_security_scan", "legacy_soul_evolution"] as const;

/** An employee's effective `[evolution]`, read now: the global section with its own keys over it. */
export async function employeeEvolutionConfig(db: Db, employee: Pick<EmployeeRow, "config">): Promise<EvolutionConfig> {
  return effectiveEvolution(await readSection(db, evolutionConfig), employee.config?.evolution);
}
