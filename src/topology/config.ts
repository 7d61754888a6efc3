import * as z from "zod";
import { defineConfigSection } from "../lib/config";

/** `[topology_evolution]` with the seed's keys and defaults (seed 000 "設定"). Off unless enabled. */
export const topologyConfig = defineConfigSection(
  "topology_evolution",
  z.object({
    enabled: z.boolean().default(false),
    lookback_days: z.number().int().min(1).max(365).default(14),
    min_samples: z.number().int().min(1).max(10_000).default(5),
    reject_rate_threshold: z.number().min(0).max(1).default(0.6),
    observe_hours: z
      .number()
      .min(1 / 60)
      .max(24 * 90)
      .default(24),
    proposal_cooldown_days: z.number().min(0).max(365).default(7),
    tick_secs: z
      .number()
      .int()
      .min(60)
      .max(7 * 86_400)
      .default(3600),
    approval_ttl_secs: z
      .number()
      .int()
      .min(60)
      .max(30 * 86_400)
      .default(86_400),
  }),
);
export type TopologyConfig = z.infer<typeof topologyConfig.schema>;
