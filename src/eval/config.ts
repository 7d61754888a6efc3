import * as z from "zod";
import { defineConfigSection } from "../lib/config";

const price = z.strictObject({
  /** USD per million input tokens. */
  input_per_mtok: z.number().min(0).max(10_000),
  /** USD per million output tokens. */
  output_per_mtok: z.number().min(0).max(10_000),
});

/**
 * `[eval]`: the capability matrix's operator-maintained prices (the seed's `models.toml`) and how a
 * measurement runs. A run with a budget refuses to start when a model it would use has no price here.
 */
export const evalConfig = defineConfigSection(
  "eval",
  z.object({
    /** Per model (as the runner is asked for it): its prices. */
    prices: z.record(z.string().min(1).max(200), price).default({}),
    /**
     * What one case run holds of a budget until it reports its cost (tokens at the model's price): a
     * run that never reports keeps holding it, so an unknown cost never reads as free.
     */
    reserve_tokens: z
      .strictObject({
        input: z.number().int().min(0).max(10_000_000).default(20_000),
        output: z.number().int().min(0).max(10_000_000).default(4_000),
      })
      .prefault({}),
    /** Case runs in flight at once per measurement. */
    parallel: z.number().int().min(1).max(64).default(4),
    /** The runner's limit for one case run. */
    case_timeout_ms: z
      .number()
      .int()
      .min(1_000)
      .max(3_600_000)
      .default(15 * 60_000),
  }),
);
export type EvalConfig = z.infer<typeof evalConfig.schema>;

/** What a run of `model` reserves of a budget, or null when the model has no price. */
export function reservationUsd(cfg: EvalConfig, model: string): number | null {
  const p = Object.hasOwn(cfg.prices, model) ? cfg.prices[model] : undefined;
  if (!p) return null;
  return (cfg.reserve_tokens.input * p.input_per_mtok + cfg.reserve_tokens.output * p.output_per_mtok) / 1_000_000;
}

/** What a run cost from the usage it reported, or null when it reported none (then its reservation stands). */
export function costFromUsage(cfg: EvalConfig, model: string, usage: unknown, reportedUsd: unknown): number | null {
  if (typeof reportedUsd === "number" && Number.isFinite(reportedUsd) && reportedUsd >= 0) return reportedUsd;
  const p = Object.hasOwn(cfg.prices, model) ? cfg.prices[model] : undefined;
  const u = usage as { input_tokens?: unknown; output_tokens?: unknown; cache_read_input_tokens?: unknown } | undefined;
  if (!p || !u || typeof u.input_tokens !== "number" || typeof u.output_tokens !== "number") return null;
  const input = u.input_tokens + (typeof u.cache_read_input_tokens === "number" ? u.cache_read_input_tokens : 0);
  return (input * p.input_per_mtok + u.output_tokens * p.output_per_mtok) / 1_000_000;
}
